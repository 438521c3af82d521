"""Only template-owned text goes back to the model.

A compiler's output can quote any file the compile touched (a header's line, a path, an
identifier read from elsewhere). Before a compile failure is described in a repair prompt,
:func:`template_diagnostics` keeps only:

* diagnostic lines (``FILE(LINE): error: ...``) whose file is the template's own
  (``template.cu`` or the rendered ``source.cu``), and ``ptxas``/sandbox lines that name no
  file;
* the compiler's echo of a source line, only when that line is in the template verbatim, and
  its caret line;

and, in every kept line, every quoted piece must occur in the template's text and no
absolute path may appear. Everything else is dropped and counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s()][^()]*?)\((?P<line>\d+)\): (?P<rest>.*)$")
_QUOTED = re.compile(r"\"([^\"\n]{1,400})\"|'([^'\n]{1,400})'|`([^`\n]{1,400})`")
_ABSOLUTE_PATH = re.compile(r"(^|[\s\"'(=:])(/|~/|[A-Za-z]:\\)[^\s\"']*")
_CARET = re.compile(r"^\s*\^\s*$")
_FILE_FREE_TOOL_LINE = re.compile(r"^(ptxas|nvlink|nvcc) (error|warning|fatal)\s*:")
OWN_FILES = ("template.cu", "source.cu", "baseline.cu")


@dataclass(frozen=True)
class FilteredDiagnostics:
    """The kept text and how many lines were dropped."""

    text: str
    dropped_lines: int


def _quotes_owned(line: str, template_text: str) -> bool:
    for match in _QUOTED.finditer(line):
        piece = next(g for g in match.groups() if g is not None)
        if piece not in template_text:
            return False
    return _ABSOLUTE_PATH.search(line) is None


def template_diagnostics(log: str, template_text: str,
                         own_files: Iterable[str] = OWN_FILES,
                         max_lines: int = 40) -> FilteredDiagnostics:
    """The lines of ``log`` that are the template's own (see the module docstring)."""
    own = set(own_files)
    template_lines = {line.strip() for line in template_text.splitlines() if line.strip()}
    kept: list[str] = []
    dropped = 0
    echo_allowed = False  # an echo line may follow a kept diagnostic
    for raw in log.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        diagnostic = _DIAGNOSTIC.match(line.strip())
        keep = False
        if diagnostic is not None:
            keep = (diagnostic.group("file") in own
                    and _quotes_owned(diagnostic.group("rest"), template_text))
            echo_allowed = keep
        elif _FILE_FREE_TOOL_LINE.match(line.strip()):
            keep = _quotes_owned(line, template_text)
            echo_allowed = False
        elif echo_allowed and (line.strip() in template_lines or _CARET.match(line)):
            keep = True
        else:
            echo_allowed = False
        if keep and len(kept) < max_lines:
            kept.append(line)
        else:
            dropped += 1
    return FilteredDiagnostics("\n".join(kept), dropped)


def describe_compile_failure(kind: str | None, summary: str, log: str,
                             template_text: str) -> str:
    """One line for a repair prompt: the failure kind and the template-owned diagnostics.

    ``refused`` and ``limit`` summaries are the workbench's own words (the refused directive
    is the template's text); anything from the compiler passes :func:`template_diagnostics`.
    """
    if kind in ("refused", "limit"):
        return f"nvcc failed ({kind}): {summary}"
    filtered = template_diagnostics(log, template_text)
    if not filtered.text:
        return (f"nvcc failed ({kind}); no diagnostic points into the template "
                f"({filtered.dropped_lines} line(s) from elsewhere withheld)")
    note = (f" ({filtered.dropped_lines} line(s) from elsewhere withheld)"
            if filtered.dropped_lines else "")
    return f"nvcc failed ({kind}):{note}\n" + filtered.text
