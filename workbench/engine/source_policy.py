"""Template sources are data: what a compile may read.

:class:`workbench.engine.compiler.Compiler` applies this to every compile (and
:mod:`workbench.engine.sandbox` bounds the compile itself). :func:`check_source` reads the preprocessor directives of the rendered source before nvcc
   sees it. ``#include`` may name a CUDA/C++ system header on :data:`SYSTEM_HEADERS` (or a
   family in :data:`SYSTEM_HEADER_FAMILIES`), or a file inside the kernel folder given as
   ``include_dir`` (relative, no ``..``, no symlink that leaves the folder; its own
   directives are checked the same way). Everything else that makes the preprocessor read
   a file (``#include_next``, ``#import``, ``#embed``, computed includes, ``__has_include``,
   ``#pragma GCC dependency``, ``_Pragma`` other than unroll (with a count or a
   parameter's name), ``.incbin``) is refused with the line named. Digraphs (``%:``), trigraphs (``??=``), comments before the ``#`` and
   backslash-newline splices are understood.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Headers a template may include with ``<...>`` (or ``"..."`` when the folder lacks them).
SYSTEM_HEADERS = frozenset({
    # CUDA
    "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda_fp16.h", "cuda_bf16.h",
    "cuda_fp8.h", "cuda_fp4.h", "cuda_pipeline.h", "cuda_awbarrier.h", "cooperative_groups.h",
    "mma.h", "math_constants.h", "device_launch_parameters.h", "vector_types.h",
    "vector_functions.h", "curand_kernel.h", "sm_60_atomic_functions.h",
    "sm_61_intrinsics.h", "crt/host_defines.h",
    # C and C++ standard library headers usable in device code
    "stdint.h", "stddef.h", "float.h", "limits.h", "math.h", "assert.h", "stdio.h",
    "cstdint", "cstddef", "cfloat", "climits", "cmath", "cassert", "cstdio", "cstring",
    "type_traits", "utility", "limits", "array", "tuple", "initializer_list", "functional",
    "numeric", "algorithm", "cstdlib", "stdlib.h", "string.h", "bit", "new",
})
#: Header families: any ``<family/name>`` of these directories.
SYSTEM_HEADER_FAMILIES = ("cuda/", "cub/", "cooperative_groups/", "thrust/", "cute/",
                          "cutlass/")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+-]*$")
_MAX_INCLUDE_DEPTH = 8
_MAX_INCLUDED_BYTES = 4 << 20
# ``unroll``, ``unroll 4``, ``unroll N`` / ``unroll (N)`` with N a template parameter or a
# constexpr (nvcc evaluates a constant expression there; it reads no file), ``nounroll``.
_ALLOWED_PRAGMA_OPERATORS = re.compile(
    r"^\s*(unroll(\s+(\d+|[A-Za-z_]\w*)|\s*\(\s*(\d+|[A-Za-z_]\w*)\s*\))?|nounroll)\s*$")


@dataclass(frozen=True)
class SourceRefusal:
    """One refused directive: ``file`` and ``line`` (1-based, of the checked text) and why."""

    file: str
    line: int
    text: str  # the directive, as written (shortened)
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: `{self.text}` refused: {self.reason}"


@dataclass(frozen=True)
class SourceCheck:
    """The outcome of :func:`check_source`: refusals (empty = allowed) and the local files
    to copy beside the source (relative name -> absolute path, all inside the folder)."""

    refusals: tuple[SourceRefusal, ...]
    local_files: tuple[tuple[str, Path], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.refusals

    def summary(self) -> str:
        return "; ".join(str(r) for r in self.refusals[:5]) + (
            f" (and {len(self.refusals) - 5} more)" if len(self.refusals) > 5 else "")


def _splice(text: str) -> str:
    """Translation phases 1-2 as far as directives care: trigraph ``??/`` and backslash-newline
    splices joined (line numbers are kept by re-inserting the newlines after the line)."""
    text = text.replace("??/\n", "\\\n")
    out: list[str] = []
    pending = 0
    for line in text.split("\n"):
        if line.endswith("\\"):
            out.append(line[:-1])
            pending += 1
            continue
        out.append(line + "\n" + "\n" * pending)
        pending = 0
    return "".join(out)[:-1] if out else ""


def _strip_comments(text: str) -> str:
    """Comments replaced by spaces (newlines kept), string and char literals kept intact.

    Used to find directives exactly; :func:`_suspicious_lines` double-checks the raw text
    so that a lexing mistake here can only make the check stricter.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        two = text[i:i + 2]
        if two == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_DIRECTIVE = re.compile(r"^[ \t\f\v]*(#|%:|\?\?=)[ \t\f\v]*([A-Za-z_]\w*)?(.*)$")
_SUSPICIOUS = re.compile(
    r"(^[ \t\f\v]*(#|%:|\?\?=)[ \t\f\v]*(include|include_next|import|embed)\b)"
    r"|\b__has_include(_next)?\b|\.incbin\b|\b_Pragma\b", re.M)
_INCLUDE_TARGET = re.compile(r'^\s*(<([^>\n]*)>|"([^"\n]*)")\s*$')


def _header_allowed(name: str) -> bool:
    if not _HEADER_NAME.match(name) or ".." in name.split("/"):
        return False
    return name in SYSTEM_HEADERS or name.startswith(SYSTEM_HEADER_FAMILIES)


def _local_file(name: str, include_dir: Path | None) -> tuple[Path | None, str]:
    """The file a quoted include names inside ``include_dir``, or None and why not."""
    if name.startswith("/") or "\\" in name or re.match(r"^[A-Za-z]:", name):
        return None, "an absolute path (only files inside the kernel folder may be included)"
    if ".." in Path(name).parts:
        return None, "`..` leaves the kernel folder"
    if not _HEADER_NAME.match(name):
        return None, "not a plain relative file name"
    if include_dir is None:
        return None, "no kernel folder to include from (only system headers are allowed)"
    root = include_dir.resolve()
    candidate = include_dir / name
    if not candidate.exists() and not candidate.is_symlink():
        return None, f"no file {name} in the kernel folder"
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        return None, "a symlink that leaves the kernel folder"
    if not resolved.is_file():
        return None, "not a regular file"
    return resolved, ""


def check_source(source: str, include_dir: str | Path | None = None, *,
                 file_name: str = "source.cu") -> SourceCheck:
    """Refusals for every directive of ``source`` that would read a file it may not read.

    ``include_dir`` is the kernel folder (quoted includes of files in it are allowed and
    returned in ``local_files``); see the module docstring for the rules.
    """
    folder = Path(include_dir) if include_dir is not None else None
    refusals: list[SourceRefusal] = []
    local: dict[str, Path] = {}
    _check_text(source, file_name, folder, refusals, local, depth=0)
    return SourceCheck(tuple(refusals), tuple(sorted(local.items())))


def _check_text(source: str, file_name: str, folder: Path | None,
                refusals: list[SourceRefusal], local: dict[str, Path], depth: int) -> None:
    line_marks: list[tuple[int, int, str]] = []  # (index of a #line, its number, its file)

    def refuse(index: int, text: str, reason: str) -> None:
        shown = text.strip()
        file, line = file_name, index
        for mark_index, number, mark_file in line_marks:  # the #line in force, if any
            if mark_index < index:
                file, line = mark_file, number + index - mark_index - 1
        refusals.append(SourceRefusal(file, line,
                                      shown if len(shown) <= 120 else shown[:117] + "...", reason))

    spliced = _splice(source)
    raw_lines = spliced.split("\n")

    def directive(index: int, name: str, rest: str) -> None:
        shown = raw_lines[index - 1]
        if name in ("include_next", "import", "embed"):
            refuse(index, shown, f"#{name} is not allowed in a template")
        elif name == "pragma" and re.search(r"\b(dependency|system_header|include)\b", rest):
            refuse(index, shown, "a #pragma that reads or names files is not allowed")
        elif name == "include":
            _check_include(index, shown, rest, folder, refuse, refusals, local, depth)

    seen_lines: set[int] = set()
    for index, line in enumerate(_strip_comments(spliced).split("\n"), start=1):
        match = _DIRECTIVE.match(line)
        if match is not None and match.group(2) is not None:
            seen_lines.add(index)
            mark = re.match(r'\s*(\d+)\s*(?:"([^"]*)")?', match.group(3))
            if match.group(2) == "line" and mark is not None:
                line_marks.append((index, int(mark.group(1)),
                                   mark.group(2) or (line_marks[-1][2] if line_marks
                                                     else file_name)))
            directive(index, match.group(2), match.group(3))
    # The raw text again, comments and strings included: a directive the comment-aware pass
    # did not see is checked as if it were one (a lexing slip can only make this stricter).
    for match in _SUSPICIOUS.finditer(spliced):
        index = spliced.count("\n", 0, match.start()) + 1
        token = match.group(0).strip()
        if token.startswith(("#", "%:", "??=")):
            if index not in seen_lines:
                seen_lines.add(index)
                raw = _DIRECTIVE.match(raw_lines[index - 1])
                if raw is not None and raw.group(2) is not None:
                    directive(index, raw.group(2), raw.group(3))
        elif token.startswith("_Pragma"):
            argument = re.match(r'_Pragma\s*\(\s*"((?:[^"\\]|\\.)*)"\s*\)',
                                spliced[match.start():match.start() + 200])
            if argument is None or not _ALLOWED_PRAGMA_OPERATORS.match(argument.group(1)):
                refuse(index, raw_lines[index - 1],
                       '_Pragma is allowed only as _Pragma("unroll"), _Pragma("unroll N") with N a '
                       'number or a name, or _Pragma("nounroll")')
        else:
            refuse(index, raw_lines[index - 1], f"{token} reads files and is not allowed")


def _check_include(index: int, shown: str, rest: str, folder: Path | None,
                   refuse: Callable[[int, str, str], None], refusals: list[SourceRefusal],
                   local: dict[str, Path], depth: int) -> None:
    target = _INCLUDE_TARGET.match(rest)
    if target is None:
        refuse(index, shown, 'a computed #include (only <header> or "file" is allowed)')
        return
    angle, quoted = target.group(2), target.group(3)
    if angle is not None:
        if not _header_allowed(angle):
            refuse(index, shown, f"<{angle}> is not on the system-header allow-list")
        return
    assert quoted is not None
    path, why = _local_file(quoted, folder)
    if path is None:
        if _header_allowed(quoted) and not quoted.startswith("/"):
            return  # not in the folder: the compiler falls back to the system header
        refuse(index, shown, why)
        return
    if quoted in local:
        return
    if depth >= _MAX_INCLUDE_DEPTH:
        refuse(index, shown, f"local includes nested deeper than {_MAX_INCLUDE_DEPTH}")
        return
    try:
        data = path.read_bytes()[:_MAX_INCLUDED_BYTES + 1]
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        refuse(index, shown, f"cannot be read as UTF-8 text ({type(exc).__name__})")
        return
    if len(data) > _MAX_INCLUDED_BYTES:
        refuse(index, shown, f"larger than {_MAX_INCLUDED_BYTES} bytes")
        return
    local[quoted] = path
    _check_text(text, quoted, folder, refusals, local, depth + 1)
