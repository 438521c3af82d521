"""``workbench init``'s plan: a kernel folder's ``kernel.toml`` from a bare ``.cu`` file.

Pure: text in, text out. The kernel's signature comes from the CUDA parser
(:mod:`workbench.core.cuda_source`) and the pointer roles from the read/write analysis
(:mod:`workbench.core.cuda_access`):

- a ``const`` pointer is ``in``; a written pointer is ``out``, or ``inout`` when the kernel
  also reads it; a pointer the analysis cannot follow needs ``--role NAME=ROLE``;
- an integer scalar becomes a problem size of the same name (its value in each shape);
- a float scalar's value is the placeholder ``FILL_IN`` (only the user knows what their
  code passes: an epsilon, a scale);
- the baseline launch comes from ``--grid``/``--block`` (else ``__launch_bounds__`` for the
  block), and what only the user knows is written as the placeholder ``FILL_IN``, which the
  loader names until it is replaced.

No ``[template]`` is written (``workbench propose --write`` adds one) and no
``reference.py`` (the baseline's outputs are the golden outputs).

Only names the loader can hold enter the kernel.toml: the kernel's and every argument's name
must be an ASCII C identifier (an integer argument, which becomes a problem size, must not
start with ``_``), and each ``--grid``/``--block`` dimension must be a printable-ASCII
expression of at most :data:`MAX_DIM_CHARS` characters that the expression language
parses; anything else is a ScaffoldError naming the argument or the option and its value.
Every string is written as an escaped TOML basic string, and the text is checked to load
with ``tomllib`` before it is handed out.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.core.cuda_access import pointer_access
from workbench.core.cuda_source import KernelSignature, parse_cuda
from workbench.core.dtypes import ARG_DTYPES, INTEGER_DTYPES
from workbench.core.errors import ExpressionError, ScaffoldError
from workbench.core.expr import parse_expr
from workbench.core.kernel_folder.schema import PLACEHOLDER, SCALAR_DTYPES

__all__ = ["MAX_DIM_CHARS", "Scaffold", "ScaffoldArg", "scaffold", "split_dims"]

MAX_DIM_CHARS = 200  # characters of one --grid / --block dimension
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the loader's identifier (kernel_folder)

_ELEMENT_OF = {"f32": "fp32", "fp16": "fp16", "bf16": "bf16"}
_DEFAULT_TOL = {"fp32": (1e-5, 1e-5), "fp16": (1e-3, 1e-3), "bf16": (1e-2, 1e-2)}
_ROLES = ("in", "out", "inout")


@dataclass(frozen=True)
class ScaffoldArg:
    """One argument as init writes it, with where its role came from."""

    name: str
    dtype: str
    role: str  # in | out | inout | scalar
    why: str  # "const pointer", "written at line 12", "--role", ...
    type_text: str


@dataclass(frozen=True)
class Scaffold:
    """Everything ``workbench init`` writes, and what is left for the user to fill in."""

    kernel: KernelSignature
    args: tuple[ScaffoldArg, ...]
    dtypes: tuple[str, ...]
    sizes: tuple[str, ...]
    grid: tuple[str, ...]
    block: tuple[str, ...]
    baseline_source: str
    notes: tuple[str, ...]

    @property
    def to_fill(self) -> tuple[str, ...]:
        """The kernel.toml keys still holding the placeholder."""
        keys = [f"shapes.{s}.{n}" for s in ("small", "large") for n in self.sizes]
        keys += [f"args ({a.name}).shape" for a in self.args if a.role != "scalar"]
        keys += [f"args ({a.name}).value" for a in self.args
                 if a.role == "scalar" and a.dtype not in INTEGER_DTYPES]
        if PLACEHOLDER in self.grid:
            keys.append("baseline.grid")
        if PLACEHOLDER in self.block:
            keys.append("baseline.block")
        return tuple(keys)

    def kernel_toml(self) -> str:
        """The kernel.toml text, with comments saying what to check or fill in."""
        k = self.kernel
        q, c = _quote, _comment
        lines = [
            f"# Written by `workbench init` from {k.name} (line {k.line}). Replace every",
            f"# {PLACEHOLDER}, then: workbench propose <folder> --write; workbench tune <folder>.",
            f"name = {q(k.name)}",
            f"description = {q(f'{k.name}: describe what the kernel computes')}",
            f"dtypes = [{', '.join(q(d) for d in self.dtypes)}]",
            'check_shape = "small"',
            "# bytes_moved defaults to every buffer read or written once.",
            "",
            "# Problem sizes (the kernel's integer arguments): a small shape that checks",
            "# edge cases and a large one that measures bandwidth.",
            "[shapes]",
        ]
        for shape in ("small", "large"):
            if self.sizes:
                body = ", ".join(f"{n} = {q(PLACEHOLDER)}" for n in self.sizes)
            else:
                body = f"n = {q(PLACEHOLDER)}"
            lines.append(f"{shape} = {{ {body} }}")
        lines += ["", "# Outputs are compared with the baseline's own outputs (no reference.py):",
                  "# floats within rtol/atol below, integer outputs exactly unless an argument",
                  "# has tolerance = { atol = N } (|got - want| <= N, compared as integers).",
                  "[tolerances]"]
        for d in self.dtypes:
            rtol, atol = _DEFAULT_TOL[d]
            lines.append(f"{d} = {{ rtol = {rtol:g}, atol = {atol:g} }}  # review")
        for a in self.args:
            lines += ["", "[[args]]", f"name = {q(a.name)}", f"dtype = {q(a.dtype)}",
                      f"role = {q(a.role)}  # {c(a.why)}"]
            if a.role == "scalar":
                if a.dtype in INTEGER_DTYPES:
                    lines.append(f"value = {q(a.name)}  # the problem size of the same name")
                else:
                    lines.append(f"value = {q(PLACEHOLDER)}  # the value your code passes "
                                 "(e.g. 1e-6 for an epsilon): a number or an expression of "
                                 "the problem sizes")
            else:
                hint = f" e.g. [{', '.join(q(s) for s in self.sizes)}]" if self.sizes else ""
                lines.append(f"shape = [{q(PLACEHOLDER)}]  # {c(a.type_text)}: its extent "
                             f"in elements,{hint}")
        lines += ["", "[baseline]", 'source = "baseline.cu"', f"entry = {q(k.name)}",
                  f"grid = [{', '.join(q(g) for g in self.grid)}]",
                  f"block = [{', '.join(q(b) for b in self.block)}]", ""]
        text = "\n".join(lines)
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:  # a bug here, never a file written
            raise ScaffoldError(f"{k.name}: the kernel.toml init would write does not load "
                                f"({exc}); nothing was written", file="kernel.toml",
                                line=k.line, argument="") from None
        return text


_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                 "\f": "\\f", "\r": "\\r"}


def _quote(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and every control character
    (C0, DEL) escaped; non-ASCII text as itself (the file is UTF-8)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:  # a lone surrogate cannot be written as UTF-8
            out.append("\\uFFFD")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    """``text`` fit for a TOML comment: one line, no control characters."""
    return "".join("?" if ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF
                   else ch for ch in text)


def _shown(text: str) -> str:
    return text if text.isprintable() and text.isascii() else ascii(text)


def _dims(text: str, option: str, file: str, line: int) -> tuple[str, ...]:
    """``--grid``/``--block`` text as 1 to 3 checked dimension expressions."""
    def refuse(why: str) -> ScaffoldError:
        return ScaffoldError(f"{option} {_shown(text)}: {why}", file=file, line=line,
                             argument="", option=option, value=text)

    if not all(" " <= ch <= "~" for ch in text):
        raise refuse("expected printable ASCII (names are C identifiers); found a control "
                     "or non-ASCII character")
    dims = split_dims(text)
    if not 1 <= len(dims) <= 3:
        raise refuse(f"expected 1 to 3 comma-separated expressions, got {len(dims)}")
    for dim in dims:
        if len(dim) > MAX_DIM_CHARS:
            raise refuse(f"a dimension of {len(dim)} characters is over the limit of "
                         f"{MAX_DIM_CHARS}")
        try:
            parse_expr(dim)
        except ExpressionError as exc:
            raise refuse(f"{dim!r} is not an expression the workbench reads "
                         f"({exc.message})") from None
    return dims


def split_dims(text: str) -> tuple[str, ...]:
    """``"ceil_div(n, 256), rows"`` -> ("ceil_div(n, 256)", "rows"): top-level commas only."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return tuple(p for p in parts if p)


def _extern_c(text: str, kernel: KernelSignature) -> str:
    """The source with ``extern "C"`` before the kernel (the worker looks it up by name)."""
    data = text.encode("utf-8")
    at = kernel.start_byte
    return (data[:at] + b'extern "C" ' + data[at:]).decode("utf-8")


def scaffold(text: str, file: str, entry: str | None = None, *,
             grid: str | None = None, block: str | None = None,
             roles: Mapping[str, str] | None = None,
             dtypes: Mapping[str, str] | None = None) -> Scaffold:
    """Plan a kernel folder for the ``__global__`` kernel ``entry`` of ``text``.

    Raises CudaSourceError for source the parser refuses (naming the line) and
    ScaffoldError for arguments whose role or dtype must be given (naming each one and the
    option that sets it)."""
    roles, dtypes = dict(roles or {}), dict(dtypes or {})
    source = parse_cuda(text, file)
    kernel = source.kernel(entry)
    if kernel.template_params:
        raise ScaffoldError(
            f"{file}:{kernel.line}: kernel {kernel.name!r} is a C++ template "
            f"(template parameters {', '.join(kernel.template_params)}); write it with the "
            "element type SCALAR_T (the workbench defines it per dtype) and constants as "
            "literals, then run init again", file=file, line=kernel.line, argument="")
    _check_names(kernel, file)
    names = {p.name for p in kernel.params}
    for key, table, allowed in (("--role", roles, _ROLES), ("--dtype", dtypes, ARG_DTYPES)):
        for name, value in table.items():
            if name not in names:
                raise ScaffoldError(f"{key} {_shown(name)}={_shown(value)}: {kernel.name} has "
                                    f"no argument {name!r}; its arguments are {sorted(names)}",
                                    file=file, line=kernel.line, argument=name)
            if value not in allowed:
                raise ScaffoldError(f"{key} {_shown(name)}={_shown(value)}: expected one of "
                                    f"{list(allowed)}", file=file, line=kernel.line,
                                    argument=name)
    access = pointer_access(source, kernel)
    args: list[ScaffoldArg] = []
    asks: list[str] = []
    for p in kernel.params:
        dtype = dtypes.get(p.name, p.dtype)
        where = f"{p.type_text} {p.name}, line {p.line}"
        if dtype is None:
            asks.append(f"argument {p.name!r} ({where}) has no workbench dtype; give its "
                        f"element dtype with --dtype {p.name}=DTYPE "
                        f"(one of {', '.join(ARG_DTYPES[1:])})")
            continue
        if p.is_scalar:
            if dtype not in SCALAR_DTYPES:
                asks.append(f"scalar argument {p.name!r} ({where}) is {dtype}; kernel "
                            f"arguments passed by value must be one of {list(SCALAR_DTYPES)}")
                continue
            args.append(ScaffoldArg(p.name, dtype, "scalar", "passed by value", p.type_text))
            continue
        acc = access[p.name]
        if p.name in roles:
            role, why = roles[p.name], "set with --role"
        elif acc.role is None:
            asks.append(f"cannot tell whether argument {p.name!r} ({where}) is read or "
                        f"written: {acc.why_unknown}; say which with --role {p.name}=in "
                        "(or out, or inout)")
            continue
        else:
            role = acc.role
            why = _why(p.is_const, acc.write_lines, acc.read_lines, role)
        args.append(ScaffoldArg(p.name, dtype, role, why, p.type_text))
    if asks:
        raise ScaffoldError(f"{file}: {kernel.name}: " + "; ".join(asks), file=file,
                            line=kernel.line, argument=asks[0].split("'")[1], asks=asks)
    if not any(a.role in ("out", "inout") for a in args):
        raise ScaffoldError(f"{file}: {kernel.name} writes none of its pointer arguments; "
                            "a kernel folder needs at least one output (set one with --role "
                            "NAME=out)", file=file, line=kernel.line, argument="")
    return _plan(text, file, kernel, args, grid, block)


def _check_names(kernel: KernelSignature, file: str) -> None:
    """The kernel's and its arguments' names must be names the kernel.toml loader holds."""
    if not _IDENT.fullmatch(kernel.name):
        raise ScaffoldError(f"{file}:{kernel.line}: kernel name {_shown(kernel.name)} is not "
                            "an ASCII C identifier ([A-Za-z_][A-Za-z0-9_]*); rename it",
                            file=file, line=kernel.line, argument="")
    for p in kernel.params:
        if not _IDENT.fullmatch(p.name):
            raise ScaffoldError(
                f"{file}:{p.line}: argument name {_shown(p.name) or '(none)'} of "
                f"{kernel.name} is not an ASCII C identifier ([A-Za-z_][A-Za-z0-9_]*); "
                "name every argument with one", file=file, line=p.line, argument=p.name)
        if p.is_scalar and p.dtype in INTEGER_DTYPES and p.name.startswith("_"):
            raise ScaffoldError(
                f"{file}:{p.line}: integer argument {p.name} becomes a problem size, and a "
                "size name may not start with '_'; rename it", file=file, line=p.line,
                argument=p.name)


def _why(is_const: bool, writes: tuple[int, ...], reads: tuple[int, ...], role: str) -> str:
    if is_const:
        return "const pointer"
    if writes:
        return f"written at line {writes[0]}" + (" and read" if role == "inout" else "")
    return f"only read (line {reads[0]})"


def _plan(text: str, file: str, kernel: KernelSignature, args: Sequence[ScaffoldArg],
          grid: str | None, block: str | None) -> Scaffold:
    notes: list[str] = []
    if any(a.dtype == "T" for a in args):
        element: tuple[str, ...] = ("bf16", "fp16")
    else:
        floats = [_ELEMENT_OF[a.dtype] for a in args
                  if a.role != "scalar" and a.dtype in _ELEMENT_OF]
        element = (floats[0] if floats else "fp32",)
    sizes = tuple(a.name for a in args if a.role == "scalar" and a.dtype in INTEGER_DTYPES)
    grid_dims = _dims(grid, "--grid", file, kernel.line) if grid else (PLACEHOLDER,)
    if block:
        block_dims = _dims(block, "--block", file, kernel.line)
    elif kernel.launch_bounds is not None and kernel.launch_bounds.max_threads.isdigit():
        block_dims = (kernel.launch_bounds.max_threads,)
        notes.append(f"block = {block_dims[0]} threads from __launch_bounds__ "
                     f"(line {kernel.launch_bounds.line})")
    else:
        block_dims = (PLACEHOLDER,)
    baseline = text
    if not kernel.extern_c:
        baseline = _extern_c(text, kernel)
        notes.append(f'baseline.cu: added extern "C" before {kernel.name} (line {kernel.line}) '
                     "so the workbench can find it by name")
    return Scaffold(kernel, tuple(args), element, sizes, grid_dims, block_dims, baseline,
                    tuple(notes))
