"""Reading one field of a kernel folder: each reader records a problem instead of raising.

A :class:`Collector` gathers every :class:`~workbench.core.errors.Problem` (file, key, value
found, what was expected) so the loader reports all of them at once; the readers here turn
one raw TOML value or one file of the folder into its typed form (an expression, a launch
rule, a tolerance, a parsed CUDA source) or record why they could not.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.core.cuda_source import CudaSource, parse_cuda
from workbench.core.errors import CudaSourceError, ExpressionError, Problem
from workbench.core.expr import Expr, parse_expr
from workbench.core.kernel_folder.schema import IDENT, PLACEHOLDER, Tolerance
from workbench.core.template import LaunchRules


class Collector:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, file: str, key: str, value: Any, expected: str) -> None:
        if value == PLACEHOLDER or (isinstance(value, list) and PLACEHOLDER in value):
            expected += " (workbench init left this placeholder for you to fill in)"
        shown = value if isinstance(value, str) else repr(value)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        self.problems.append(Problem(file, key, shown, expected))


def read_expr(c: Collector, text: Any, key: str, known: list[str]) -> Expr | None:
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        c.add("kernel.toml", key, text, "an expression string (or a number)")
        return None
    if text == PLACEHOLDER:
        c.add("kernel.toml", key, text, "an expression, e.g. of the problem sizes")
        return None
    try:
        return parse_expr(str(text), known_names=known)
    except ExpressionError as exc:
        c.add("kernel.toml", key, str(text), f"a valid expression ({exc.message})")
        return None


def read_expr_list(c: Collector, value: Any, key: str, known: list[str],
               lo: int = 1, hi: int = 3) -> list[Expr] | None:
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        c.add("kernel.toml", key, value, f"a list of {lo} to {hi} expression strings")
        return None
    out = [read_expr(c, v, f"{key}[{i}]", known) for i, v in enumerate(value)]
    return None if any(e is None for e in out) else [e for e in out if e is not None]


def read_text(c: Collector, folder: Path, name: str, what: str) -> str | None:
    """A file of the folder as UTF-8 text; a problem (not an exception) when it is missing,
    a symlink that leaves the folder, not a regular file, or not UTF-8."""
    path = folder / name
    if not path.exists():
        c.add(name, "", "missing file", what)
        return None
    if not path.resolve().is_relative_to(folder.resolve()):
        c.add(name, "", f"a symlink to {path.resolve()}, outside the kernel folder",
              f"{what}, inside the kernel folder")
        return None
    if not path.is_file():
        c.add(name, "", "not a regular file", what)
        return None
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        c.add(name, f"line {line}", f"bytes that are not UTF-8 (byte {exc.start}: "
              f"{data[exc.start:exc.start + 1]!r})", "UTF-8 text")
        return None


def read_source(c: Collector, folder: Path, name: Any, key: str, default: str) -> str | None:
    if name is None:
        name = default
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        c.add("kernel.toml", key, name, "a file name inside the kernel folder")
        return None
    return read_text(c, folder, name, f"the CUDA source named by {key}")


def parse_source(c: Collector, source: str | None, file: str) -> CudaSource | None:
    """The source parsed once; a source the parser refuses (too large, nested too deeply,
    no kernel: CudaSourceError) is a problem of the folder naming the file and the line."""
    if source is None:
        return None
    try:
        return parse_cuda(source, file)
    except CudaSourceError as exc:
        c.add(file, "", exc.message, "CUDA source the workbench can read")
        return None


def read_entry(c: Collector, section: Mapping[str, Any], key: str, parsed: CudaSource | None,
           file: str) -> str | None:
    entry = section.get("entry")
    if not isinstance(entry, str) or not IDENT.fullmatch(entry):
        c.add("kernel.toml", f"{key}.entry", entry, "the kernel function's name (a C identifier)")
        return None
    if parsed is not None and not parsed.launches_by_name(entry):
        c.add(file, key + ".entry", entry, f'an extern "C" __global__ function named {entry}')
    return entry


def read_launch(c: Collector, section: Mapping[str, Any], key: str,
            known: list[str]) -> LaunchRules | None:
    grid = read_expr_list(c, section.get("grid"), f"{key}.grid", known)
    block = read_expr_list(c, section.get("block"), f"{key}.block", known)
    smem = read_expr(c, section.get("smem_bytes", "0"), f"{key}.smem_bytes", known)
    pdl = read_expr(c, section["pdl"], f"{key}.pdl", known) if "pdl" in section else None
    if grid is None or block is None or smem is None or ("pdl" in section and pdl is None):
        return None
    return LaunchRules(grid=tuple(grid), block=tuple(block), smem_bytes=smem, pdl=pdl)


def read_int_tolerance(c: Collector, value: Any, key: str, dtype: str) -> Tolerance | None:
    """An integer output's tolerance: { atol = N }, N a non-negative integer (|Δ| <= N)."""
    if not isinstance(value, dict) or set(value) != {"atol"}:
        c.add("kernel.toml", key, value,
              f"an integer tolerance {{ atol = <int> }} for a {dtype} output (|got - want| "
              "<= atol, compared as integers; rtol does not apply)")
        return None
    atol = value["atol"]
    if isinstance(atol, bool) or not isinstance(atol, int) or atol < 0:
        c.add("kernel.toml", f"{key}.atol", atol,
              f"a non-negative integer for a {dtype} output (e.g. 1 for |Δq| <= 1)")
        return None
    return Tolerance(0.0, float(atol))


def read_tolerance(c: Collector, value: Any, key: str) -> Tolerance | None:
    if not isinstance(value, dict) or set(value) != {"rtol", "atol"}:
        c.add("kernel.toml", key, value, "a table { rtol = <float>, atol = <float> }")
        return None
    ok = True
    for k in ("rtol", "atol"):
        v = value[k]
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            c.add("kernel.toml", f"{key}.{k}", v, "a non-negative number")
            ok = False
    return Tolerance(float(value["rtol"]), float(value["atol"])) if ok else None


