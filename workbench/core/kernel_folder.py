"""Kernel folders: ``kernel.toml`` + ``baseline.cu`` [+ ``template.cu``] [+ ``reference.py``].

Loading a malformed folder reports every problem at once, each naming the file, the key,
the value found and what was expected (see docs/design.md for the format).

A folder fresh from ``workbench init`` has no ``[template]``: the baseline then stands in
as a template with no parameters (``has_template`` is False) until ``propose --write``
adds one. ``reference.py`` is optional: without it the baseline's own outputs are the
golden outputs and inputs come from :func:`workbench.core.inputs.default_inputs`.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from workbench.core.cuda_source import CudaSource, parse_cuda
from workbench.core.dtypes import ARG_DTYPES, ELEM_BYTES, INTEGER_DTYPES
from workbench.core.errors import (
    CudaSourceError,
    ExpressionError,
    KernelFolderError,
    ParameterError,
    Problem,
    TemplateError,
    WorkbenchError,
)
from workbench.core.expr import Expr, parse_constraint, parse_expr
from workbench.core.hardware import DeviceSpec, default_device, device_env
from workbench.core.module_constants import (
    ConstantSpec,
    check_constant_counts,
    constants_plan,
    module_globals,
    read_constants,
)
from workbench.core.params import Parameter, parameter_from_dict
from workbench.core.shape_params import ShapeBounds, hull, split_shape_bounds
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate, LaunchRules

ROLES = ("in", "out", "inout", "scalar")
SCALAR_DTYPES = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "f32")
#: What ``workbench init`` writes where only the user knows the value.
PLACEHOLDER = "FILL_IN"
DEFAULT_DEVICE = "h100_sxm"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # used with fullmatch (no trailing "\n")
_TOP_KEYS = {"name", "description", "dtypes", "bytes_moved", "check_shape", "shapes",
             "tolerances", "args", "constants", "baseline", "template"}
_ARG_KEYS = {"name", "dtype", "shape", "role", "value", "tolerance", "compare"}
#: How an output is compared with the baseline's: element by element, or (``sum``) by the
#: sum over the array, for outputs whose layout the config changes (one partial sum per
#: block): see workbench.engine.gpu_verify.compare_sum.
COMPARES = ("elementwise", "sum")
#: The functions reference.py may define.
REFERENCE_FUNCTIONS = ("make_inputs", "reference", "verify")
_LAUNCH_KEYS = {"source", "entry", "grid", "block", "smem_bytes", "pdl"}


@dataclass(frozen=True)
class Tolerance:
    """|got - want| <= atol + rtol * |want|. Integer outputs use rtol = 0 and an integral
    atol (0: exact), compared as integers, never through float32."""

    rtol: float
    atol: float

    def to_dict(self) -> dict[str, float]:
        return {"rtol": self.rtol, "atol": self.atol}


EXACT = Tolerance(0.0, 0.0)


@dataclass(frozen=True)
class ArgSpec:
    """One kernel argument, in call order."""

    name: str
    dtype: str  # "T" (the element dtype) or one of core.dtypes.ARG_DTYPES
    role: str  # in | out | inout | scalar
    shape: tuple[Expr, ...] = ()
    value: Expr | None = None  # scalars only
    tolerance: Tolerance | None = None
    compare: str = "elementwise"  # one of COMPARES (outputs only)

    @property
    def is_buffer(self) -> bool:
        return self.role != "scalar"

    def resolved_dtype(self, dtype: str) -> str:
        """The concrete dtype name: the element dtype for "T"."""
        return dtype if self.dtype == "T" else self.dtype

    def shape_for(self, env: Mapping[str, Any]) -> tuple[int, ...]:
        return tuple(int(e.evaluate(env)) for e in self.shape)


@dataclass(frozen=True)
class KernelFolder:
    """A loaded, validated kernel folder."""

    path: Path
    name: str
    description: str
    dtypes: tuple[str, ...]
    shapes: Mapping[str, Mapping[str, int]]
    tolerances: Mapping[str, Tolerance]
    args: tuple[ArgSpec, ...]
    bytes_moved: Expr
    check_shape: str
    baseline: KernelTemplate
    template: KernelTemplate
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    has_template: bool = True  # False: no [template] yet; ``template`` is the baseline
    constants: tuple[ConstantSpec, ...] = ()  # module globals read as inputs

    def constant_layout(self, shape: str, dtype: str) -> list[dict[str, Any]]:
        """Every module-global input at (shape, dtype): name, concrete dtype and shape (the
        form the GPU worker uploads; workbench.core.module_constants)."""
        return constants_plan(self.constants, self.env(shape, dtype), dtype)

    @property
    def reference_functions(self) -> frozenset[str]:
        """Which of make_inputs / reference / verify the folder's reference.py defines
        (none: no file)."""
        ref = self.path / "reference.py"
        if not ref.is_file():
            return frozenset()
        try:
            tree = ast.parse(ref.read_text())
        except SyntaxError:
            return frozenset()
        return frozenset(n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                         and n.name in REFERENCE_FUNCTIONS)

    @property
    def shape_names(self) -> tuple[str, ...]:
        return tuple(self.shapes)

    def shape_values(self, shape: str) -> dict[str, int]:
        if shape not in self.shapes:
            raise WorkbenchError(f"unknown shape {shape!r} for {self.name}; "
                                 f"expected one of {list(self.shapes)}",
                                 key="shape", value=shape, choices=list(self.shapes))
        return dict(self.shapes[shape])

    def check_dtype(self, dtype: str) -> str:
        if dtype not in self.dtypes:
            raise WorkbenchError(f"{self.name} does not support dtype {dtype!r}; "
                                 f"expected one of {list(self.dtypes)}",
                                 key="dtype", value=dtype, choices=list(self.dtypes))
        return dtype

    def env(self, shape: str, dtype: str, device: DeviceSpec | None = None) -> dict[str, Any]:
        """Names visible to expressions: problem sizes, elem_bytes and device limits."""
        self.check_dtype(dtype)
        spec = device or default_device()
        return {**device_env(spec), **self.shape_values(shape), "elem_bytes": ELEM_BYTES[dtype]}

    def bytes_moved_for(self, shape: str, dtype: str) -> int:
        return int(self.bytes_moved.evaluate(self.env(shape, dtype)))

    def space(self, shape: str, dtype: str, device: DeviceSpec | None = None) -> SearchSpace:
        return self.template.space(self.env(shape, dtype, device))

    def tolerance_for(self, arg: ArgSpec, dtype: str) -> Tolerance:
        """The argument's own tolerance, else exact for integers, else the dtype's."""
        if arg.tolerance is not None:
            return arg.tolerance
        return EXACT if arg.resolved_dtype(dtype) in INTEGER_DTYPES else self.tolerances[dtype]

    def arg_layout(self, shape: str, dtype: str) -> list[dict[str, Any]]:
        """Every argument at (shape, dtype): name, role, concrete dtype, tolerance, and the
        buffer's shape or the scalar's value (the form the GPU worker and profiler take)."""
        env = self.env(shape, dtype)
        out = []
        for arg in self.args:
            tol = self.tolerance_for(arg, dtype)
            out.append({"name": arg.name, "role": arg.role, "dtype": arg.resolved_dtype(dtype),
                        "rtol": tol.rtol, "atol": tol.atol,
                        "shape": list(arg.shape_for(env)) if arg.is_buffer else [],
                        "value": None if arg.is_buffer or arg.value is None
                        else arg.value.evaluate(env),
                        **({"compare": arg.compare} if arg.compare != "elementwise" else {})})
        return out

    def load_reference(self) -> ModuleType:
        """Import reference.py (trusted, user-written numpy code) as a private module."""
        path = self.path / "reference.py"
        spec = importlib.util.spec_from_file_location(f"_workbench_reference_{self.name}", path)
        if spec is None or spec.loader is None:
            raise KernelFolderError(str(self.path), [Problem("reference.py", "", "unloadable",
                                                             "an importable Python file")])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


class _Collector:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, file: str, key: str, value: Any, expected: str) -> None:
        if value == PLACEHOLDER or (isinstance(value, list) and PLACEHOLDER in value):
            expected += " (workbench init left this placeholder for you to fill in)"
        shown = value if isinstance(value, str) else repr(value)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        self.problems.append(Problem(file, key, shown, expected))


def _expr(c: _Collector, text: Any, key: str, known: list[str]) -> Expr | None:
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


def _expr_list(c: _Collector, value: Any, key: str, known: list[str],
               lo: int = 1, hi: int = 3) -> list[Expr] | None:
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        c.add("kernel.toml", key, value, f"a list of {lo} to {hi} expression strings")
        return None
    out = [_expr(c, v, f"{key}[{i}]", known) for i, v in enumerate(value)]
    return None if any(e is None for e in out) else [e for e in out if e is not None]


def _read_text(c: _Collector, folder: Path, name: str, what: str) -> str | None:
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


def _read_source(c: _Collector, folder: Path, name: Any, key: str, default: str) -> str | None:
    if name is None:
        name = default
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        c.add("kernel.toml", key, name, "a file name inside the kernel folder")
        return None
    return _read_text(c, folder, name, f"the CUDA source named by {key}")


def _parse(c: _Collector, source: str | None, file: str) -> CudaSource | None:
    """The source parsed once; a source the parser refuses (too large, nested too deeply,
    no kernel: CudaSourceError) is a problem of the folder naming the file and the line."""
    if source is None:
        return None
    try:
        return parse_cuda(source, file)
    except CudaSourceError as exc:
        c.add(file, "", exc.message, "CUDA source the workbench can read")
        return None


def _entry(c: _Collector, section: Mapping[str, Any], key: str, parsed: CudaSource | None,
           file: str) -> str | None:
    entry = section.get("entry")
    if not isinstance(entry, str) or not _IDENT.fullmatch(entry):
        c.add("kernel.toml", f"{key}.entry", entry, "the kernel function's name (a C identifier)")
        return None
    if parsed is not None and not any(k.name == entry and k.extern_c for k in parsed.kernels):
        c.add(file, key + ".entry", entry, f'an extern "C" __global__ function named {entry}')
    return entry


def _launch(c: _Collector, section: Mapping[str, Any], key: str,
            known: list[str]) -> LaunchRules | None:
    grid = _expr_list(c, section.get("grid"), f"{key}.grid", known)
    block = _expr_list(c, section.get("block"), f"{key}.block", known)
    smem = _expr(c, section.get("smem_bytes", "0"), f"{key}.smem_bytes", known)
    pdl = _expr(c, section["pdl"], f"{key}.pdl", known) if "pdl" in section else None
    if grid is None or block is None or smem is None or ("pdl" in section and pdl is None):
        return None
    return LaunchRules(grid=tuple(grid), block=tuple(block), smem_bytes=smem, pdl=pdl)


def _int_tolerance(c: _Collector, value: Any, key: str, dtype: str) -> Tolerance | None:
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


def _tolerance(c: _Collector, value: Any, key: str) -> Tolerance | None:
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


def load_kernel_folder(path: str | Path) -> KernelFolder:
    """Load and validate a kernel folder, reporting every problem at once."""
    folder = Path(path)
    c = _Collector()
    toml_path = folder / "kernel.toml"
    if not folder.is_dir():
        raise KernelFolderError(str(folder), [Problem(str(folder), "", "not a directory",
                                                      "a kernel folder")])
    if not toml_path.is_file():
        raise KernelFolderError(str(folder), [Problem("kernel.toml", "", "missing file",
                                                      "kernel.toml describing the kernel")])
    toml_text = _read_text(c, folder, "kernel.toml", "kernel.toml describing the kernel")
    if toml_text is None:
        raise KernelFolderError(str(folder), c.problems)
    try:
        data = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        raise KernelFolderError(str(folder), [Problem("kernel.toml", "", str(exc),
                                                      "valid TOML")]) from exc
    except RecursionError:
        raise KernelFolderError(str(folder), [Problem(
            "kernel.toml", "", "arrays or tables nested too deeply to read",
            "TOML nested a few levels deep")]) from None

    for key in sorted(set(data) - _TOP_KEYS):
        c.add("kernel.toml", key, "unknown key", f"one of {sorted(_TOP_KEYS)}")

    name = data.get("name")
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        c.add("kernel.toml", "name", name, "a C identifier naming the kernel")
        name = "kernel"
    description = data.get("description", "")
    if not isinstance(description, str):
        c.add("kernel.toml", "description", description, "a string")
        description = ""

    dtypes_raw = data.get("dtypes")
    dtypes: list[str] = []
    if not isinstance(dtypes_raw, list) or not dtypes_raw:
        c.add("kernel.toml", "dtypes", dtypes_raw, f"a non-empty list drawn from {sorted(ELEM_BYTES)}")
    else:
        for i, d in enumerate(dtypes_raw):
            if d not in ELEM_BYTES:
                c.add("kernel.toml", f"dtypes[{i}]", d, f"one of {sorted(ELEM_BYTES)}")
            elif d not in dtypes:
                dtypes.append(d)

    # Shapes: every shape names the same integer problem sizes.
    shapes: dict[str, dict[str, int]] = {}
    names_by_shape: dict[str, frozenset[str]] = {}
    shapes_raw = data.get("shapes")
    if not isinstance(shapes_raw, dict) or not shapes_raw:
        c.add("kernel.toml", "shapes", shapes_raw, "a table of named shapes, e.g. small = { tokens = 7, d = 256 }")
    else:
        for sname, sval in shapes_raw.items():
            if not isinstance(sval, dict) or not sval:
                c.add("kernel.toml", f"shapes.{sname}", sval, "a table of positive integers")
                continue
            good = {}
            for k, v in sval.items():
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    c.add("kernel.toml", f"shapes.{sname}.{k}", v, "a positive integer")
                elif not _IDENT.fullmatch(k) or k.startswith("_"):
                    c.add("kernel.toml", f"shapes.{sname}.{k}", k, "a lower-case identifier")
                else:
                    good[k] = v
            shapes[sname] = good
            names_by_shape[sname] = frozenset(sval)
        keysets = set(names_by_shape.values())
        if len(keysets) > 1:
            c.add("kernel.toml", "shapes", {k: sorted(v) for k, v in names_by_shape.items()},
                  "every shape to name the same problem sizes")
    # names from every shape, valid values or not (a placeholder value is one problem, not
    # one more for each expression that names the size)
    size_names = sorted({k for v in names_by_shape.values() for k in v if _IDENT.fullmatch(k)})
    env_names = [*size_names, "elem_bytes", *device_env(default_device())]

    check_shape = data.get("check_shape")
    if not isinstance(check_shape, str) or check_shape not in shapes:
        c.add("kernel.toml", "check_shape", check_shape, f"one of the shapes {sorted(shapes)}")
        check_shape = next(iter(shapes), "")

    tolerances: dict[str, Tolerance] = {}
    tol_raw = data.get("tolerances")
    if not isinstance(tol_raw, dict):
        c.add("kernel.toml", "tolerances", tol_raw, "a table of { rtol, atol } per dtype")
    else:
        for d in dtypes:
            if d not in tol_raw:
                c.add("kernel.toml", f"tolerances.{d}", "missing", "a { rtol, atol } table")
            else:
                t = _tolerance(c, tol_raw[d], f"tolerances.{d}")
                if t:
                    tolerances[d] = t
        for d in tol_raw:
            if d not in ELEM_BYTES:
                c.add("kernel.toml", f"tolerances.{d}", d, f"a dtype in {sorted(ELEM_BYTES)}")

    bytes_moved_raw = data.get("bytes_moved")

    args: list[ArgSpec] = []
    args_raw = data.get("args")
    if not isinstance(args_raw, list) or not args_raw:
        c.add("kernel.toml", "args", args_raw, "an array of [[args]] tables")
    else:
        seen: set[str] = set()
        for i, a in enumerate(args_raw):
            key = f"args[{i}]"
            if not isinstance(a, dict):
                c.add("kernel.toml", key, a, "a table")
                continue
            for k in sorted(set(a) - _ARG_KEYS):
                c.add("kernel.toml", f"{key}.{k}", "unknown key", f"one of {sorted(_ARG_KEYS)}")
            aname = a.get("name")
            if not isinstance(aname, str) or not _IDENT.fullmatch(aname):
                c.add("kernel.toml", f"{key}.name", aname, "a C identifier")
                continue
            key = f"args[{i}] ({aname})"
            if aname in seen:
                c.add("kernel.toml", f"{key}.name", aname, "a unique argument name")
            seen.add(aname)
            role, adtype = a.get("role"), a.get("dtype")
            if role not in ROLES:
                c.add("kernel.toml", f"{key}.role", role, f"one of {list(ROLES)}")
                continue
            if adtype not in ARG_DTYPES:
                c.add("kernel.toml", f"{key}.dtype", adtype, f"one of {list(ARG_DTYPES)}")
                continue
            tol = None
            if "tolerance" in a:
                tol = (_int_tolerance(c, a["tolerance"], f"{key}.tolerance", adtype)
                       if adtype in INTEGER_DTYPES
                       else _tolerance(c, a["tolerance"], f"{key}.tolerance"))
            compare = a.get("compare", "elementwise")
            if compare not in COMPARES:
                c.add("kernel.toml", f"{key}.compare", compare, f"one of {list(COMPARES)}")
                continue
            if compare != "elementwise" and role not in ("out", "inout"):
                c.add("kernel.toml", f"{key}.compare", compare,
                      f"no compare for a {role} argument (only outputs are compared)")
                continue
            if role == "scalar" and adtype not in SCALAR_DTYPES:
                c.add("kernel.toml", f"{key}.dtype", adtype,
                      f"a scalar dtype, one of {list(SCALAR_DTYPES)}")
                continue
            if role == "scalar":
                if "shape" in a:
                    c.add("kernel.toml", f"{key}.shape", a["shape"], "no shape for a scalar")
                val = _expr(c, a.get("value"), f"{key}.value", env_names)
                if val is not None:
                    args.append(ArgSpec(aname, adtype, role, (), val, tol))
            else:
                if "value" in a:
                    c.add("kernel.toml", f"{key}.value", a["value"], "no value for a buffer")
                shp = _expr_list(c, a.get("shape"), f"{key}.shape", env_names, 1, 8)
                if shp is not None:
                    args.append(ArgSpec(aname, adtype, role, tuple(shp), None, tol, compare))
        if len(args) == len(args_raw) and not any(a.role in ("out", "inout") for a in args):
            c.add("kernel.toml", "args", [a.name for a in args], "at least one out or inout argument")
    if bytes_moved_raw is None and args:
        bytes_moved_raw = default_bytes_moved(args)
    bytes_moved = _expr(c, bytes_moved_raw, "bytes_moved", env_names)

    # Baseline.
    baseline: KernelTemplate | None = None
    bparsed: CudaSource | None = None
    bsrc_name: Any = "baseline.cu"
    bsec = data.get("baseline")
    if not isinstance(bsec, dict):
        c.add("kernel.toml", "baseline", bsec, "a [baseline] table with entry, grid, block")
    else:
        for k in sorted(set(bsec) - _LAUNCH_KEYS):
            c.add("kernel.toml", f"baseline.{k}", "unknown key", f"one of {sorted(_LAUNCH_KEYS)}")
        bsrc_name = bsec.get("source", "baseline.cu")
        bsrc = _read_source(c, folder, bsrc_name, "baseline.source", "baseline.cu")
        bparsed = _parse(c, bsrc, str(bsrc_name))
        bentry = _entry(c, bsec, "baseline", bparsed, str(bsrc_name))
        blaunch = _launch(c, bsec, "baseline", env_names)
        if bsrc is not None and bentry and blaunch:
            baseline = KernelTemplate(name=name, source=bsrc, entry=bentry, params=(),
                                      constraints=(), launch=blaunch, source_name=str(bsrc_name))

    # Template.
    template: KernelTemplate | None = None
    tparsed: CudaSource | None = None
    tsec = data.get("template")
    if tsec is None:
        template = baseline  # no template yet: the baseline, with no parameters
    elif not isinstance(tsec, dict):
        c.add("kernel.toml", "template", tsec, "a [template] table with entry, grid, block, params")
    else:
        allowed = _LAUNCH_KEYS | {"params", "constraints"}
        for k in sorted(set(tsec) - allowed):
            c.add("kernel.toml", f"template.{k}", "unknown key", f"one of {sorted(allowed)}")
        tsrc_name = tsec.get("source", "template.cu")
        tsrc = _read_source(c, folder, tsrc_name, "template.source", "template.cu")
        tparsed = _parse(c, tsrc, str(tsrc_name))
        tentry = _entry(c, tsec, "template", tparsed, str(tsrc_name))
        params: list[Parameter] = []
        bounds: list[ShapeBounds] = []
        praw = tsec.get("params")
        if not isinstance(praw, dict) or not praw:
            c.add("kernel.toml", "template.params", praw, "a table of parameter definitions")
        else:
            for pname, pdef in praw.items():
                if not isinstance(pdef, dict):
                    c.add("kernel.toml", f"template.params.{pname}", pdef, "a table")
                    continue
                try:
                    static, bound = split_shape_bounds(pname, pdef, env_names)
                    params.append(parameter_from_dict(pname, static))
                    if bound is not None:
                        bounds.append(bound)
                except (ParameterError, ValueError, TypeError) as exc:
                    c.add("kernel.toml", f"template.params.{pname}", pdef, str(exc))
                    continue
                if pname in env_names:
                    c.add("kernel.toml", f"template.params.{pname}", pname,
                          "a name that is not a shape size, elem_bytes or a device limit")
                if tsrc is not None and not re.search(rf"\b{re.escape(pname)}\b", tsrc):
                    c.add(str(tsrc_name), f"template.params.{pname}", pname,
                          "the parameter to be used in the template source")
        known = [*env_names, *(p.name for p in params)]
        cons = tsec.get("constraints", [])
        parsed_cons = []
        if not isinstance(cons, list):
            c.add("kernel.toml", "template.constraints", cons, "a list of constraint strings")
        else:
            for i, text in enumerate(cons):
                if not isinstance(text, str):
                    c.add("kernel.toml", f"template.constraints[{i}]", text, "a constraint string")
                    continue
                try:
                    parsed_cons.append(parse_constraint(text, known_names=known))
                except ExpressionError as exc:
                    c.add("kernel.toml", f"template.constraints[{i}]", text,
                          f"a valid constraint ({exc.message})")
        tlaunch = _launch(c, tsec, "template", known)
        if tsrc is not None and tentry and tlaunch and isinstance(praw, dict) and \
                len(params) == len(praw):
            try:
                params = _shape_hulls(params, bounds, shapes, dtypes)
            except ParameterError as exc:
                c.add("kernel.toml", f"template.params.{exc.details.get('key', '')}",
                      exc.details.get("value"), exc.message)
            template = KernelTemplate(name=name, source=tsrc, entry=tentry, params=tuple(params),
                                      constraints=tuple(parsed_cons), launch=tlaunch,
                                      source_name=str(tsrc_name), shape_bounds=tuple(bounds))

    # Module globals read as inputs: [[constants]] plus the baseline's undeclared ones.
    constants: list[ConstantSpec] = []
    if baseline is not None or "constants" in data:
        constants, found = read_constants(data.get("constants"), env_names, bparsed,
                                          str(bsrc_name), [a.name for a in args])
        c.problems.extend(found)
        if template is not None and template is not baseline and tparsed is not None:
            held = module_globals(tparsed)
            for spec in constants:
                if spec.name not in held:
                    c.add(str(tsrc_name), "", f"no module global {spec.name}",
                          f"the template to keep the baseline's {spec.name} (an input "
                          "uploaded before every run)")

    _check_reference(c, folder)

    if c.problems or baseline is None or template is None or bytes_moved is None:
        if not c.problems:  # pragma: no cover - every None above records a problem
            c.add("kernel.toml", "", "incomplete", "a complete kernel folder")
        raise KernelFolderError(str(folder), c.problems)

    kf = KernelFolder(path=folder, name=name, description=description, dtypes=tuple(dtypes),
                      shapes=shapes, tolerances=tolerances, args=tuple(args),
                      bytes_moved=bytes_moved, check_shape=check_shape, baseline=baseline,
                      template=template, raw=data, has_template=tsec is not None,
                      constants=tuple(constants))
    _check_defaults(c, kf)
    for shape in kf.shapes:
        if c.problems:
            break
        c.problems.extend(check_constant_counts(kf.constants, bparsed, kf.env(shape, dtypes[0]),
                                                str(bsrc_name), f"at shape {shape!r}"))
    if c.problems:
        raise KernelFolderError(str(folder), c.problems)
    return kf


def _shape_hulls(params: list[Parameter], bounds: list[ShapeBounds],
                 shapes: Mapping[str, Mapping[str, int]], dtypes: list[str]) -> list[Parameter]:
    """Static parameters for shape-aware ones: the hull over the named shapes and dtypes on
    the default device (workbench.core.shape_params)."""
    if not bounds:
        return params
    spec = default_device()
    envs = [{**device_env(spec), **sizes, "elem_bytes": ELEM_BYTES[d]}
            for sizes in shapes.values() for d in dtypes if d in ELEM_BYTES]
    by = {b.name: b for b in bounds}
    return [hull(p, by[p.name], envs) if p.name in by else p for p in params]


def _check_reference(c: _Collector, folder: Path) -> None:
    """reference.py is optional; when present it defines make_inputs(), reference() or both."""
    ref = folder / "reference.py"
    if not ref.exists() and not ref.is_symlink():
        return
    text = _read_text(c, folder, "reference.py",
                      "a numpy reference with make_inputs() and/or reference()")
    if text is None:
        return
    try:
        tree = ast.parse(text, filename=str(ref))
    except SyntaxError as exc:
        c.add("reference.py", f"line {exc.lineno}", exc.msg, "valid Python")
        return
    except (ValueError, RecursionError, MemoryError) as exc:
        c.add("reference.py", "", f"unparseable ({type(exc).__name__})", "valid Python")
        return
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if not set(defined) & set(REFERENCE_FUNCTIONS):
        c.add("reference.py", "", "none of make_inputs, reference, verify defined",
              "a top-level make_inputs(shape, dtype, rng), reference(inputs, shape, dtype) "
              "and/or verify(outputs, golden, shape)")
    verify = defined.get("verify")
    if verify is not None:
        positional = [*verify.args.posonlyargs, *verify.args.args]
        needed = len(positional) - len(verify.args.defaults)
        takes_three = verify.args.vararg is not None or len(positional) >= 3
        if not takes_three or needed > 3:
            c.add("reference.py", f"line {verify.lineno}",
                  f"verify({', '.join(a.arg for a in positional)})",
                  "verify(outputs, golden, shape): three positional parameters")


def default_bytes_moved(args: list[ArgSpec]) -> str:
    """Bytes a kernel must move at least: every buffer read once (in), written once (out)
    or both (inout), at its dtype's size; the default for kernel.toml's ``bytes_moved``."""
    from workbench.core.dtypes import arg_storage

    terms = []
    for arg in args:
        if not arg.is_buffer:
            continue
        size = "elem_bytes" if arg.dtype == "T" else str(arg_storage(arg.dtype).itemsize)
        times = "2 * " if arg.role == "inout" else ""
        terms.append(f"{times}{size} * " + " * ".join(f"({e.text})" for e in arg.shape))
    return " + ".join(terms) or "0"


def _check_defaults(c: _Collector, kf: KernelFolder) -> None:
    """The template's defaults must satisfy its constraints and launch at every shape; an
    expression that does not evaluate is reported under the key that holds it."""
    default = kf.template.default_config()
    for shape in kf.shapes:
        for dtype in kf.dtypes:
            env = kf.env(shape, dtype)
            where = f"at shape {shape!r} / {dtype}"
            if not _expressions_evaluate(c, kf, env, where):
                return
            try:
                why = kf.template.space(env).rejection(default)
            except (WorkbenchError, ZeroDivisionError, OverflowError, ValueError) as exc:
                key = exc.details.get("key", "") if isinstance(exc, WorkbenchError) else ""
                c.add("kernel.toml", f"template.params.{key}" if key else "template.params",
                      f"{getattr(exc, 'message', exc)} {where}", "ranges that resolve")
                return
            if why is not None:
                c.add("kernel.toml", "template.params (defaults)", dict(default),
                      f"defaults that satisfy every constraint at shape {shape!r} / {dtype} "
                      f"(rejected by {why!r})")
                return
            if not _values_in_range(c, kf, shape, dtype, env):
                return


_EVAL_ERRORS = (WorkbenchError, ZeroDivisionError, OverflowError, ValueError, TypeError)


def _expressions_evaluate(c: _Collector, kf: KernelFolder, env: Mapping[str, Any],
                          where: str) -> bool:
    """Evaluate every expression of kernel.toml at one problem (the template's at its
    defaults), each alone, so a failure names its own key (``args[1] (input).shape[0]``,
    ``template.grid[0]``, ``template.constraints[2]``), never the shape it failed at."""
    default = {k: int(v) if isinstance(v, bool) else v
               for k, v in kf.template.default_config().items()}
    config_env = {**env, **default}
    checks: list[tuple[str, Expr, Mapping[str, Any]]] = []
    for i, arg in enumerate(kf.args):
        key = f"args[{i}] ({arg.name})"
        checks.extend((f"{key}.shape[{j}]", e, env) for j, e in enumerate(arg.shape))
        if arg.value is not None:
            checks.append((f"{key}.value", arg.value, env))
    checks.append(("bytes_moved", kf.bytes_moved, env))
    sections = (("baseline", kf.baseline, env),
                ("template" if kf.has_template else "baseline", kf.template, config_env))
    for section, template, at in sections:
        rules = template.launch
        checks.extend((f"{section}.grid[{j}]", e, at) for j, e in enumerate(rules.grid))
        checks.extend((f"{section}.block[{j}]", e, at) for j, e in enumerate(rules.block))
        checks.append((f"{section}.smem_bytes", rules.smem_bytes, at))
        if rules.pdl is not None:
            checks.append((f"{section}.pdl", rules.pdl, at))
    for key, expr, at in checks:
        try:
            expr.evaluate(at)
        except _EVAL_ERRORS as exc:
            c.add("kernel.toml", key, f"{expr.text} {where}",
                  f"an expression that evaluates ({getattr(exc, 'message', exc)})")
            return False
    for i, constraint in enumerate(kf.template.constraints if kf.has_template else ()):
        try:
            constraint.holds(config_env)
        except _EVAL_ERRORS as exc:
            c.add("kernel.toml", f"template.constraints[{i}]",
                  f"{constraint.text} {where}, defaults {default}",
                  f"a constraint that evaluates to true or false "
                  f"({getattr(exc, 'message', exc)})")
            return False
    for section, template, at in sections:
        try:
            template.launch.evaluate(at)
        except TemplateError as exc:  # a value no launch can take (negative, fractional)
            c.add("kernel.toml", f"{section}.{exc.details.get('key', 'launch')}",
                  f"{exc.details.get('expr', '')} = {exc.details.get('value')!r} {where}",
                  "a non-negative integer")
            return False
    return True


_SCALAR_RANGES = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}


def _values_in_range(c: _Collector, kf: KernelFolder, shape: str, dtype: str,
                     env: Mapping[str, Any]) -> bool:
    """bytes_moved, buffer dimensions and scalar values hold what they stand for."""
    where = f"at shape {shape!r} / {dtype}"
    return _check_ranges(c, kf, env, where)  # every expression evaluated (_check_defaults)


def _check_ranges(c: _Collector, kf: KernelFolder, env: Mapping[str, Any], where: str) -> bool:
    moved = kf.bytes_moved.evaluate(env)
    if isinstance(moved, bool) or moved <= 0:
        c.add("kernel.toml", "bytes_moved", f"{kf.bytes_moved.text} = {moved} {where}",
              "a positive number of bytes")
        return False
    for index, arg in enumerate(kf.args):
        key = f"args[{index}] ({arg.name})"
        if arg.is_buffer:
            for i, expr in enumerate(arg.shape):
                dim = expr.evaluate(env)
                if isinstance(dim, bool) or dim < 0 or dim != int(dim):
                    c.add("kernel.toml", f"{key}.shape[{i}]",
                          f"{expr.text} = {dim} {where}", "a non-negative integer")
                    return False
        elif arg.value is not None:
            value = arg.value.evaluate(env)
            low, high = _SCALAR_RANGES.get(arg.dtype, (None, None))
            if low is not None and high is not None and (
                    value != int(value) or not low <= value <= high):
                c.add("kernel.toml", f"{key}.value",
                      f"{arg.value.text} = {value} {where}",
                      f"an integer that fits {arg.dtype} ({low} to {high})")
                return False
    return True
