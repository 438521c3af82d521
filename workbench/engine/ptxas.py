"""Reading what nvcc and ptxas print: per-function resource reports and failure kinds.

Pure text processing (no subprocesses), so it is tested on captured compiler output.

``nvcc -Xptxas -v`` reports every function in the module, e.g. (ptxas 13.0)::

    ptxas info    : Compiling entry function 'my_kernel' for 'sm_90a'
    ptxas info    : Function properties for my_kernel
        256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 34 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]

Older releases print ``Used 34 registers, 1024 bytes smem, 368 bytes cmem[0]``; the
pieces are matched one by one so both forms read the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.core.records import ResourceUsage

_COMPILING = re.compile(r"Compiling entry function '(?P<name>[^']+)'(?: for '(?P<arch>[^']+)')?")
_PROPERTIES = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, "
                    r"(?P<loads>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<regs>\d+) registers")
_SMEM = re.compile(r"(?P<bytes>\d+) bytes smem")
_CMEM = re.compile(r"(?P<bytes>\d+) bytes cmem\[\d+\]")


@dataclass(frozen=True)
class FunctionReport:
    """ptxas's numbers for one function (an entry, or a non-inlined device function)."""

    name: str  # as ptxas prints it: the plain name for extern "C", else the mangled one
    is_entry: bool
    arch: str = ""
    regs_per_thread: int = 0
    static_smem_bytes: int = 0
    const_bytes: int = 0
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0

    def usage(self) -> ResourceUsage:
        """This report as the workbench's ResourceUsage record (no dynamic shared memory)."""
        return ResourceUsage(
            regs_per_thread=self.regs_per_thread,
            static_smem_bytes=self.static_smem_bytes,
            stack_frame_bytes=self.stack_frame_bytes,
            spill_store_bytes=self.spill_store_bytes,
            spill_load_bytes=self.spill_load_bytes,
            const_bytes=self.const_bytes,
        )


def parse_ptxas_report(log: str) -> dict[str, FunctionReport]:
    """Every function ptxas reported on, by name (in the order reported)."""
    found: dict[str, dict[str, object]] = {}
    compiling: str | None = None  # the entry whose "Used ..." line comes next
    properties_of: str | None = None  # the function whose frame line comes next

    def record(name: str) -> dict[str, object]:
        return found.setdefault(name, {"name": name, "is_entry": False})

    for line in log.splitlines():
        if match := _COMPILING.search(line):
            compiling = match["name"]
            record(compiling).update(is_entry=True, arch=match["arch"] or "")
        elif match := _PROPERTIES.search(line):
            properties_of = match["name"]
            record(properties_of)
        elif (match := _FRAME.search(line)) and properties_of is not None:
            record(properties_of).update(
                stack_frame_bytes=int(match["stack"]),
                spill_store_bytes=int(match["stores"]),
                spill_load_bytes=int(match["loads"]))
            properties_of = None
        elif (match := _USED.search(line)) and compiling is not None:
            smem = _SMEM.search(line)
            record(compiling).update(
                regs_per_thread=int(match["regs"]),
                static_smem_bytes=int(smem["bytes"]) if smem else 0,
                const_bytes=sum(int(m["bytes"]) for m in _CMEM.finditer(line)))
            compiling = None
    return {name: FunctionReport(**fields) for name, fields in found.items()}  # type: ignore[arg-type]


def find_entry(reports: Mapping[str, FunctionReport], entry: str) -> FunctionReport | None:
    """The report for ``entry``: its exact name, else its C++-mangled form (``_Z9my_kernelPf``)."""
    if entry in reports:
        return reports[entry]
    mangled_prefix = f"_Z{len(entry)}{entry}"
    matches = [r for name, r in reports.items() if r.is_entry and name.startswith(mangled_prefix)]
    return matches[0] if len(matches) == 1 else None


def entry_usage(log: str, entry: str) -> ResourceUsage | None:
    """ResourceUsage of ``entry`` from an ``-Xptxas -v`` log, or None when it is not there."""
    report = find_entry(parse_ptxas_report(log), entry)
    return report.usage() if report else None


# --- failure classification ----------------------------------------------------------

TIMEOUT_MARKER = "workbench: nvcc did not finish within"

# The one table that turns compiler output into a failure kind. First match wins, so the
# specific resource messages come before the generic source-error forms.
FAILURE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("timeout", re.compile(re.escape(TIMEOUT_MARKER))),
    ("resource", re.compile(r"uses too much (?:shared|local|parameter|global constant|constant)"
                            r" (?:data|space)")),
    ("resource", re.compile(r"Entry function '[^']*' uses too much")),
    ("resource", re.compile(r"too many resources", re.IGNORECASE)),
    # EDG front end: template.cu(12): error: ...
    ("syntax", re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?:catastrophic )?error")),
    # host preprocessor: template.cu:3:10: fatal error: x.h: No such file or directory
    ("syntax", re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error")),
    # the source calls a device function that is declared but never defined
    ("syntax", re.compile(r"Unresolved extern function")),
    # inline PTX assembly rejected by ptxas: ptxas /tmp/x.ptx, line 30; error : ...
    ("syntax", re.compile(r"^ptxas .*, line \d+; error")),
)


@dataclass(frozen=True)
class FailureDiagnosis:
    """What went wrong in a failed compile, read from its log."""

    kind: str  # "syntax" | "resource" | "timeout" | "internal"
    summary: str  # the first line that decided the kind (or the log's first line)
    file: str | None = None  # where a source error points (after #line: the author's file)
    line: int | None = None


def classify_failure(log: str) -> FailureDiagnosis:
    """Classify a failed compile's output with :data:`FAILURE_PATTERNS`; unknown = internal."""
    lines = [line.rstrip() for line in log.splitlines() if line.strip()]
    for kind, pattern in FAILURE_PATTERNS:
        for index, line in enumerate(lines):
            match = pattern.search(line)
            if match is None:
                continue
            groups = match.groupdict()
            return FailureDiagnosis(
                kind=kind,
                summary=line.strip() + _unroll_macro_hint(line, lines[index + 1:index + 2]),
                file=groups.get("file"),
                line=int(groups["line"]) if groups.get("line") else None)
    return FailureDiagnosis(kind="internal", summary=lines[0].strip() if lines else "")


_UNDEFINED = re.compile(r'identifier "(?P<name>[A-Za-z_]\w*)" is undefined')


def _unroll_macro_hint(line: str, echoed: Sequence[str]) -> str:
    """What to write instead when the undefined identifier is a ``#pragma unroll`` count:
    nvcc reads a constant expression there and does not expand a macro (the front end
    echoes the offending source line after its message)."""
    match = _UNDEFINED.search(line)
    if match is None or not echoed:
        return ""
    name = match["name"]
    if not re.match(rf"\s*#\s*pragma\s+unroll\s*\(?\s*{name}\b", echoed[0]):
        return ""
    return (f" (nvcc does not expand a macro in #pragma unroll: write "
            f"`constexpr int k_{name} = {name};` and `#pragma unroll (k_{name})`)")
