"""``workbench import-kt``: a Kernel Tuner tuning script read as a kernel folder's plan.

The script's ``tune_kernel(...)`` call gives everything a kernel folder needs: the kernel
source, ``tune_params`` (the parameters), ``restrictions`` (the constraints), the grid
divisors and ``block_size_names`` (the launch rules), ``problem_size`` and ``arguments``
(the problem sizes and the ``[[args]]``). The script is never run: its straight-line code is
read by :mod:`workbench.core.kt_literals`, and restrictions, grid divisors and string
problem sizes are translated into the workbench's expression language (:mod:`expr`), each
refused with its line where it has no translation.

Kernel Tuner's conventions, kept here:

- a config's parameters reach the kernel as ``#define NAME value`` lines, the workbench's
  own renderer, so the source is taken as is; the template gains ``#ifndef NAME`` defaults
  (the first value of each list, or the user's) so it compiles on its own, and ``extern "C"``
  on the kernel so the workbench finds it by name;
- block: ``block_size_x/y/z`` (or ``block_size_names``), 256 x 1 x 1 for names not tuned;
  the product of the tuned block sizes is at most the device's threads per block;
- grid: ``ceil(problem_size[i] / grid_div_i)``, a divisor list multiplying its items, a
  missing divisor meaning that dimension's block size (1 when it is not tuned);
- ``answer``: its non-None entries are outputs; otherwise a pointer's role comes from the
  kernel's reads and writes (:mod:`cuda_access`).
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.cuda_access import pointer_access
from workbench.core.cuda_source import KernelSignature, parse_cuda
from workbench.core.defines import define_lines
from workbench.core.errors import CudaSourceError, ExpressionError, ParameterError, SpaceError
from workbench.core.expr import parse_constraint, parse_expr
from workbench.core.hardware import default_device, device_env
from workbench.core.identifiers import identifier_problem
from workbench.core.kernel_folder import SCALAR_DTYPES
from workbench.core.kt_literals import (
    MAX_SCRIPT_BYTES,
    Array,
    Function,
    KtImportError,
    Num,
    Scalar,
    ScriptReader,
    Unknown,
    assigned_names,
)
from workbench.core.params import Choice, IntRange, Parameter, Pow2Range, validate_parameter_name
from workbench.core.space import SearchSpace

__all__ = ["KtArg", "KtImport", "KtImportError", "plan_kt_import"]

DEFAULT_BLOCK_NAMES = ("block_size_x", "block_size_y", "block_size_z")
_CALL_ARGS = ("kernel_name", "kernel_source", "problem_size", "arguments", "tune_params")
_IGNORED = {"iterations", "verbose", "cache", "strategy", "strategy_options", "metrics",
            "observers", "objective", "objective_higher_is_better", "simulation_mode", "device",
            "platform", "quiet", "log", "verify", "compiler_options", "compiler", "lang",
            "answer", "atol", "restrictions", "grid_div_x", "grid_div_y", "grid_div_z",
            "block_size_names", "smem_args", "cuda_args"}
_REFUSED = {"cmem_args": "constant memory arguments (a __constant__ array's data)",
            "texmem_args": "texture memory arguments", "defines": "a custom defines dict "
            "(the workbench defines each tune parameter as Kernel Tuner does without it)"}
_KT_LANGS = {"cuda", "cupy", "nvcuda"}
_SIZE_ENV = frozenset({"elem_bytes", *device_env(default_device())})


@dataclass(frozen=True)
class KtArg:
    """One kernel argument as the kernel folder holds it."""

    name: str
    dtype: str
    role: str  # in | out | inout | scalar
    shape: tuple[str, ...]  # expressions over the problem sizes (buffers)
    value: str | None  # the scalar's value expression
    why: str  # where the role came from


@dataclass(frozen=True)
class KtImport:
    """What ``import-kt`` writes: the template (source, parameters, constraints, launch),
    the baseline (the kernel at the template's defaults), sizes and arguments."""

    script: str
    name: str
    entry: str
    template_source: str
    params: tuple[Parameter, ...]
    constraints: tuple[str, ...]
    grid: tuple[str, ...]
    block: tuple[str, ...]
    smem_bytes: str
    baseline_grid: tuple[str, ...]
    baseline_block: tuple[str, ...]
    baseline_smem_bytes: str
    sizes: Mapping[str, int]
    args: tuple[KtArg, ...]
    atol: float
    configs: int  # configs of the space at the script's sizes (Kernel Tuner's count)
    notes: tuple[str, ...]

    @property
    def default_config(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}


def _find_call(tree: ast.Module, reader: ScriptReader) -> ast.Call:
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and (name := _dotted_func(n)) is not None
             and reader.resolve(name) in ("kernel_tuner.tune_kernel", "tune_kernel")]
    if len(calls) != 1:
        lines = ", ".join(str(c.lineno) for c in calls) or "none"
        raise reader.refuse(calls[1] if calls[1:] else 0,
                            f"found {len(calls)} tune_kernel calls (lines {lines})",
                            "exactly one kernel_tuner.tune_kernel(...) call")
    return calls[0]


def _dotted_func(call: ast.Call) -> str | None:
    node, parts = call.func, []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _contains(stmt: ast.AST, target: ast.AST) -> bool:
    return any(n is target for n in ast.walk(stmt))


class _Walker:
    """Straight-line statements up to the tune_kernel call, bound as values (never run)."""

    def __init__(self, reader: ScriptReader, call: ast.Call) -> None:
        self.reader = reader
        self.call = call
        self.symbols: dict[str, int] = {}  # problem-size names: positive ints bound by name
        self.syntax: dict[str, ast.expr] = {}  # name -> the expression last assigned to it
        self.notes: list[str] = []

    def block(self, stmts: Sequence[ast.stmt], env: dict[str, Any]) -> dict[str, Any]:
        deferred: ast.stmt | None = None
        for stmt in stmts:
            if _contains(stmt, self.call):
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    deferred = stmt  # run after the module's other statements, like a call
                    env[stmt.name] = Unknown(stmt.lineno, "the function that tunes")
                    continue
                return self.enter(stmt, env)
            self.apply(stmt, env)
        assert deferred is not None
        return self.enter(deferred, env)

    def enter(self, stmt: ast.stmt, env: dict[str, Any]) -> dict[str, Any]:
        r = self.reader
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            scope = dict(env)
            for a in [*stmt.args.posonlyargs, *stmt.args.args, *stmt.args.kwonlyargs]:
                scope[a.arg] = Unknown(stmt.lineno, f"a parameter of function {stmt.name}")
            return self.block(stmt.body, scope)
        if isinstance(stmt, ast.If):
            body = stmt.body if any(_contains(s, self.call) for s in stmt.body) else stmt.orelse
            return self.block(body, env)
        if isinstance(stmt, ast.With):
            self._with_items(stmt, env)
            return self.block(stmt.body, env)
        if isinstance(stmt, ast.Try):
            for part in (stmt.body, stmt.orelse, stmt.finalbody):
                if any(_contains(s, self.call) for s in part):
                    return self.block(part, env)
        if isinstance(stmt, ast.For | ast.While | ast.AsyncFor | ast.Try):
            raise r.refuse(stmt, "tune_kernel is called inside a loop or handler",
                           "one tune_kernel call in straight-line code (tune one problem "
                           "size; import the script once per size)")
        return env  # the statement holding the call itself

    def _with_items(self, stmt: ast.With, env: dict[str, Any]) -> None:
        for item in stmt.items:
            if isinstance(item.optional_vars, ast.Name):
                env[item.optional_vars.id] = self._try(item.context_expr, env)

    def _try(self, node: ast.expr, env: Mapping[str, Any]) -> Any:
        try:
            return self.reader.value(node, env)
        except KtImportError as exc:
            return Unknown(exc.line, str(exc.details.get("what", exc.message)), exc.expected)

    def _name(self, name: str, value: Any) -> Any:
        """A positive integer bound to a name becomes a problem-size symbol."""
        if isinstance(value, Num) and isinstance(value.value, int) and value.value > 0 and \
                value.expr is None and self.symbols.get(name, value.value) == value.value:
            self.symbols[name] = value.value
            return Num(value.value, name)
        return value

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any], line: int) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = self._name(target.id, value)
        elif isinstance(target, ast.Tuple | ast.List):
            ok = isinstance(value, list | tuple) and len(value) == len(target.elts)
            for i, t in enumerate(target.elts):
                self.assign(t, value[i] if ok else Unknown(line, "unpacked from a value the "
                                                           "importer cannot read"), env, line)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
                isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str) \
                and isinstance(env.get(target.value.id), dict):
            env[target.value.id] = {**env[target.value.id], target.slice.value: value}
        else:
            for name in assigned_names(ast.Assign(targets=[target], value=ast.Constant(0))):
                env[name] = Unknown(line, "changed by an assignment the importer does not read")

    def apply(self, stmt: ast.stmt, env: dict[str, Any]) -> None:
        if isinstance(stmt, ast.Assign):
            value = self._try(stmt.value, env)
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self.syntax[target.id] = stmt.value
                self.assign(target, value, env, stmt.lineno)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(stmt.target, self._try(stmt.value, env), env, stmt.lineno)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            node = ast.BinOp(left=ast.Name(stmt.target.id, ast.Load()), op=stmt.op,
                             right=stmt.value)
            ast.copy_location(node, stmt)
            env[stmt.target.id] = self._try(node, env)
        elif isinstance(stmt, ast.FunctionDef) and not stmt.decorator_list:
            env[stmt.name] = self._function(stmt, env)
        elif isinstance(stmt, ast.With):
            self._with_items(stmt, env)
            for s in stmt.body:
                self.apply(s, env)
        elif isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass):
            for name in assigned_names(stmt):
                env.pop(name, None)  # an import alias, never a value
        elif isinstance(stmt, ast.Expr) and not isinstance(stmt.value, ast.Call):
            pass  # a docstring or a bare expression changes nothing
        else:
            kind = type(stmt).__name__.lower()
            for name in assigned_names(stmt):
                env[name] = Unknown(stmt.lineno, f"changed by a {kind} statement the importer "
                                    "does not run")

    def _function(self, stmt: ast.FunctionDef, env: Mapping[str, Any]) -> Any:
        body = [s for s in stmt.body if not (isinstance(s, ast.Expr)
                                             and isinstance(s.value, ast.Constant))]
        a = stmt.args
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None \
                and not (a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs):
            return Function(tuple(x.arg for x in a.args), body[0].value, stmt.lineno, dict(env))
        return Unknown(stmt.lineno, f"function {stmt.name} is not one `return EXPR`")


# ---------------------------------------------------------------------- translation


class _Translate:
    """Kernel Tuner restrictions, divisors and sizes as workbench expression text."""

    def __init__(self, reader: ScriptReader, params: Sequence[str]) -> None:
        self.reader = reader
        self.params = tuple(params)

    def text(self, value: Any, node: ast.AST | int, what: str, *, constraint: bool) -> str:
        """A string (Kernel Tuner's expression over tune parameters), a number or a function
        as expression text, checked by the workbench's parser."""
        r = self.reader
        line = node if isinstance(node, int) else getattr(node, "lineno", 0)
        if isinstance(value, Num) and not constraint:
            return value.text
        if isinstance(value, str):
            try:
                tree = ast.parse(value.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError):
                raise r.refuse(line, f"{what} {value!r} is not an expression",
                               "a Python expression over the tune parameters") from None
            text = self._expr(tree, line, what, {}, None)
        elif isinstance(value, Function):
            line = value.line
            if len(value.args) == 1 and value.args[0] not in self.params:
                text = self._expr(value.body, line, what, value.closure, value.args[0])
            elif all(a in self.params for a in value.args):
                closure = {k: v for k, v in value.closure.items() if k not in value.args}
                text = self._expr(value.body, line, what, closure, None, set(value.args))
            else:
                raise r.refuse(line, f"{what}: a function of ({', '.join(value.args)})",
                               "lambda p: EXPR over p['name'], or lambda NAME, ...: EXPR "
                               "naming tune parameters")
        else:
            raise r.refuse(line, f"{what} given as {type(value).__name__}",
                           "a string expression or a lambda over the tune parameters")
        try:
            if constraint:
                parse_constraint(text, known_names=self.params)
            else:
                parse_expr(text, known_names=self.params)
        except ExpressionError as exc:
            raise r.refuse(line, f"{what} {text!r} is refused ({exc.message})",
                           "an expression the workbench reads: + - * / // % **, comparisons, "
                           "and/or/not, min/max/abs over tune parameters") from None
        return text

    def _expr(self, node: ast.expr, line: int, what: str, closure: Mapping[str, Any],
              dict_arg: str | None, names: set[str] | None = None) -> str:
        r = self.reader
        allowed = set(self.params) if names is None else names

        def go(n: ast.expr) -> str:
            if isinstance(n, ast.Constant) and isinstance(n.value, bool | int | float):
                return repr(n.value)
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                return json.dumps(n.value)
            if isinstance(n, ast.Name):
                if n.id in allowed and n.id != dict_arg:
                    return n.id
                bound = closure.get(n.id)
                if isinstance(bound, Num):
                    return repr(bound.value)  # a script constant, read as its value
                raise r.refuse(line, f"{what}: name {n.id!r} is not a tune parameter",
                               f"names from tune_params ({', '.join(self.params)})")
            if isinstance(n, ast.Subscript) and dict_arg is not None and \
                    isinstance(n.value, ast.Name) and n.value.id == dict_arg and \
                    isinstance(n.slice, ast.Constant) and n.slice.value in self.params:
                return str(n.slice.value)
            if isinstance(n, ast.BinOp):
                ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
                       ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
                if type(n.op) in ops:
                    return f"({go(n.left)} {ops[type(n.op)]} {go(n.right)})"
            if isinstance(n, ast.UnaryOp):
                ops1 = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not "}
                if type(n.op) in ops1:
                    return f"({ops1[type(n.op)]}{go(n.operand)})"
            if isinstance(n, ast.BoolOp):
                word = " and " if isinstance(n.op, ast.And) else " or "
                return "(" + word.join(go(v) for v in n.values) + ")"
            if isinstance(n, ast.Compare):
                cmp = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                       ast.NotEq: "!="}
                if all(type(o) in cmp for o in n.ops):
                    parts = [go(n.left)]
                    for o, c in zip(n.ops, n.comparators, strict=True):
                        parts += [cmp[type(o)], go(c)]
                    return "(" + " ".join(parts) + ")"
            if isinstance(n, ast.IfExp):
                return f"({go(n.body)} if {go(n.test)} else {go(n.orelse)})"
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                    n.func.id in ("min", "max", "abs") and not n.keywords and n.args:
                return f"{n.func.id}({', '.join(go(a) for a in n.args)})"
            shown = ast.unparse(n) if len(ast.unparse(n)) < 80 else type(n).__name__
            raise r.refuse(line, f"{what}: {shown!r} has no translation",
                           "numbers, tune parameters, + - * / // % **, comparisons, "
                           "and/or/not, x if c else y, min/max/abs")

        try:
            return go(node)
        except RecursionError:
            raise r.refuse(line, f"{what} nested too deeply", "a short expression") from None


# ---------------------------------------------------------------------- the plan


def _parameter(name: str, values: Any, default: Any, line: int, r: ScriptReader) -> Parameter:
    try:
        validate_parameter_name(name)
    except ParameterError as exc:
        raise r.refuse(line, f"tune parameter {name!r}: {exc.message}",
                       "a parameter name the workbench can #define") from None
    problem = identifier_problem(name)
    if problem is not None:
        raise r.refuse(line, f"tune parameter {name!r}: {problem}",
                       "a parameter name the workbench can #define")
    if not isinstance(values, list | tuple) or not values:
        raise r.refuse(line, f"tune_params[{name!r}] is not a non-empty list",
                       "a list of values")
    raw: list[Any] = [v.value if isinstance(v, Num) else v for v in values]
    if any(isinstance(v, float) for v in raw):
        raise r.refuse(line, f"tune_params[{name!r}] holds a float",
                       "ints, identifier-like strings or booleans")
    first: Any = raw[0] if default is None else default
    try:
        ints = [v for v in raw if isinstance(v, int) and not isinstance(v, bool)]
        if len(ints) == len(raw) >= 3 and len(set(ints)) == len(ints):
            step = ints[1] - ints[0]
            if step > 0 and all(b - a == step for a, b in itertools.pairwise(ints)):
                return IntRange(name, ints[0], ints[-1], step, first)
            if ints[0] > 0 and all(b == 2 * a for a, b in itertools.pairwise(ints)) \
                    and ints[0] & (ints[0] - 1) == 0:
                return Pow2Range(name, ints[0], ints[-1], first)
        return Choice(name, tuple(raw), first)
    except ParameterError as exc:
        raise r.refuse(line, f"tune_params[{name!r}]: {exc.message}",
                       "values the workbench can hold") from None


def _with_extern_c(text: str, kernel: KernelSignature) -> str:
    if kernel.extern_c:
        return text
    data = text.encode("utf-8")
    return (data[:kernel.start_byte] + b'extern "C" ' + data[kernel.start_byte:]).decode("utf-8")


_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
_GUARD = re.compile(r"^\s*#\s*(ifndef\s+([A-Za-z_]\w*)|if\s+!\s*defined\s*\(?\s*([A-Za-z_]\w*))")


def _check_defines(source: str, params: Sequence[str], file: str) -> None:
    """A tune parameter #defined without an ``#ifndef`` guard would override every config."""
    guard: str | None = None
    for number, line in enumerate(source.splitlines(), 1):
        m = _GUARD.match(line)
        if m:
            guard = m.group(2) or m.group(3)
            continue
        d = _DEFINE.match(line)
        if d and d.group(1) in params and guard != d.group(1):
            raise KtImportError(
                f"{file}:{number}: #define {d.group(1)} without an #ifndef {d.group(1)} guard "
                "overrides the value every config defines; expected the default inside "
                f"#ifndef {d.group(1)} ... #endif", file=file, line=number,
                expected=f"#ifndef {d.group(1)} around the default")
        if line.strip().startswith("#"):
            guard = None


def _header(params: Sequence[Parameter], script: str, source: str) -> str:
    script = "".join(ch if " " <= ch <= "~" else "?" for ch in script)  # one comment line
    lines = [f"// Imported by `workbench import-kt` from the Kernel Tuner script {script}.",
             "// Each tune parameter is #defined per config before this source (Kernel",
             "// Tuner's convention); the defaults below let it compile on its own."]
    lines += define_lines([(p.name, p.default) for p in params], guarded=True)
    for axis in "xyz":
        if re.search(rf"\bgrid_size_{axis}\b", source):
            lines += [f"#ifndef grid_size_{axis}",
                      f"#define grid_size_{axis} ((int)gridDim.{axis})", "#endif"]
    if re.search(r"\bkernel_tuner\b", source):
        lines += ["#ifndef kernel_tuner", "#define kernel_tuner 1", "#endif"]
    return "\n".join(lines) + "\n"


def plan_kt_import(text: str, script: str | Path, *,
                   defaults: Mapping[str, str] | None = None,
                   name: str | None = None) -> KtImport:
    """Plan a kernel folder from a Kernel Tuner script's text (read only as data; files it
    names are read inside its folder). ``defaults`` overrides a parameter's default (its
    value as text). Raises KtImportError naming the line and what was expected."""
    script_path = Path(script)
    file = script_path.name
    reader = ScriptReader(file, script_path.parent.resolve())
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SCRIPT_BYTES:
        raise reader.refuse(0, "the script is over the size limit",
                            f"at most {MAX_SCRIPT_BYTES} bytes")
    try:
        tree = ast.parse(text, filename=file)
    except SyntaxError as exc:
        raise reader.refuse(exc.lineno or 0, f"not valid Python ({exc.msg})",
                            "a Python script") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise reader.refuse(0, f"unparseable ({type(exc).__name__})", "a Python script") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                head = alias.name.split(".")[0]
                reader.aliases[alias.asname or head] = alias.name if alias.asname else head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                reader.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    call = _find_call(tree, reader)
    walker = _Walker(reader, call)
    env = walker.block(tree.body, {})
    return _plan(reader, walker, call, env, dict(defaults or {}), name, file)


def _call_args(reader: ScriptReader, call: ast.Call) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred) or i >= len(_CALL_ARGS):
            raise reader.refuse(a, "a tune_kernel argument the importer cannot place",
                                f"the positional arguments {', '.join(_CALL_ARGS)}")
        out[_CALL_ARGS[i]] = a
    for k in call.keywords:
        if k.arg is None:
            raise reader.refuse(k.value, "tune_kernel(**options)", "keyword arguments")
        out[k.arg] = k.value
    missing = [a for a in _CALL_ARGS if a not in out]
    if missing:
        raise reader.refuse(call, f"tune_kernel without {', '.join(missing)}",
                            f"the arguments {', '.join(_CALL_ARGS)}")
    return out


def _plan(reader: ScriptReader, walker: _Walker, call: ast.Call, env: dict[str, Any],
          defaults: dict[str, str], name: str | None, file: str) -> KtImport:
    r = reader
    a = _call_args(r, call)
    notes = walker.notes
    for key in a:
        if key in _REFUSED:
            raise r.refuse(a[key], f"{key}: {_REFUSED[key]} is not imported",
                           "a tune_kernel call without " + key)
        if key not in _IGNORED and key not in _CALL_ARGS:
            notes.append(f"line {a[key].lineno}: tune_kernel's {key}= is not carried over")
    for key in ("verify", "compiler_options"):
        if key in a:
            notes.append(f"line {a[key].lineno}: {key}= is not carried over (the workbench "
                         "checks every config against the baseline's outputs)")

    def val(key: str) -> Any:
        return r.known(r.value(a[key], env), key, a[key]) if key in a else None

    lang = val("lang")
    if lang is not None and (not isinstance(lang, str) or lang.lower() not in _KT_LANGS):
        raise r.refuse(a["lang"], f"lang={lang!r}", "a CUDA kernel (lang CUDA, CUPY or NVCUDA)")
    entry = val("kernel_name")
    if not isinstance(entry, str) or not re.fullmatch(r"[A-Za-z_]\w*", entry):
        raise r.refuse(a["kernel_name"], f"kernel_name {entry!r}",
                       "the kernel function's name (a C identifier; templated kernels are "
                       "not imported)")
    for label, ident in (("kernel_name", entry), ("--name", name)):
        problem = identifier_problem(ident) if ident is not None else None
        if problem is not None:
            raise r.refuse(a["kernel_name"], f"{label} {ident!r}: {problem}",
                           "a plain C identifier")
    source, source_name = _kernel_source(r, a["kernel_source"], val("kernel_source"))
    try:
        parsed = parse_cuda(source, source_name)
        kernel = parsed.kernel(entry)
    except CudaSourceError as exc:
        raise r.refuse(a["kernel_source"], f"the kernel source: {exc.message}",
                       f"CUDA source defining __global__ {entry}") from None
    if kernel.template_params:
        raise r.refuse(a["kernel_name"], f"{entry} is a C++ template",
                       "a plain __global__ kernel")

    tune = val("tune_params")
    if not isinstance(tune, dict) or not tune:
        raise r.refuse(a["tune_params"], "tune_params is not a dict of lists",
                       "a dict (or OrderedDict) of parameter name -> list of values")
    pnames = list(tune)
    for k in defaults:
        if k not in tune:
            raise r.refuse(0, f"--default {k}: not a tune parameter", f"one of {pnames}")
    _check_defines(source, pnames, source_name)
    tr = _Translate(r, pnames)
    params_line = a["tune_params"].lineno
    params = [_parameter(k, v, _default_value(r, k, defaults.get(k), v), params_line, r)
              for k, v in tune.items()]

    # launch rules
    names = list(DEFAULT_BLOCK_NAMES)
    given_names = val("block_size_names")
    if given_names is not None:
        if not isinstance(given_names, list | tuple) or not 1 <= len(given_names) <= 3 or \
                not all(isinstance(n, str) for n in given_names):
            raise r.refuse(a["block_size_names"], "block_size_names is not 1 to 3 strings",
                           "a list of parameter names")
        names = [*given_names, *DEFAULT_BLOCK_NAMES[len(given_names):]]
    block = [n if n in tune else ("256" if i == 0 else "1") for i, n in enumerate(names)]
    while len(block) > 1 and block[-1] == "1":
        block.pop()
    problem = val("problem_size")
    dims = list(problem) if isinstance(problem, list | tuple) else [problem]
    if not 1 <= len(dims) <= 3:
        raise r.refuse(a["problem_size"], f"problem_size of {len(dims)} dimensions",
                       "an int or 1 to 3 ints or strings")
    grid: list[str] = []
    sizes_from_literals: dict[str, int] = {}
    for i, dim in enumerate(dims):
        axis = "xyz"[i]
        if isinstance(dim, Num) and isinstance(dim.value, int) and dim.value > 0:
            size = dim.text
            if dim.expr is None:
                size = f"problem_{axis}"
                sizes_from_literals[size] = dim.value
        elif isinstance(dim, str | Function):
            size = tr.text(dim, a["problem_size"], f"problem_size[{i}]", constraint=False)
        else:
            raise r.refuse(a["problem_size"], f"problem_size[{i}] is not a positive integer",
                           "a positive integer, a name bound to one, or a string expression")
        key = f"grid_div_{axis}"
        div = _divisor(tr, val(key), a.get(key, a["problem_size"]), names[i], pnames, key)
        grid.append(size if div == "1" else f"ceil_div({size}, {div})")

    smem = "0"
    smem_args = val("smem_args")
    if smem_args is not None:
        if not isinstance(smem_args, dict) or "size" not in smem_args:
            raise r.refuse(a["smem_args"], "smem_args without a size", "dict(size=...)")
        smem = tr.text(smem_args["size"], a["smem_args"], "smem_args size", constraint=False)

    # constraints: Kernel Tuner's own block limit, then the restrictions
    constraints: list[str] = []
    tuned_blocks = [n for n in names if n in tune]
    if tuned_blocks:
        constraints.append(" * ".join(tuned_blocks) + " <= max_threads_per_block")
    restrictions = val("restrictions")
    items = restrictions if isinstance(restrictions, list | tuple) else (
        [] if restrictions is None else [restrictions])
    node = a.get("restrictions")
    for i, item in enumerate(items):
        where = node.elts[i] if isinstance(node, ast.List | ast.Tuple) and \
            i < len(node.elts) else (node or 0)
        constraints.append(tr.text(item, where, f"restriction {i}", constraint=True))

    args = _arguments(r, a, env, val("arguments"), _answer(a, walker), kernel, parsed)
    atol_value = val("atol")
    atol = float(atol_value.value) if isinstance(atol_value, Num) else 1e-6

    # problem sizes: the names the expressions read, and literal problem sizes
    texts = [*grid, smem, *(d for x in args for d in x.shape),
             *(x.value for x in args if x.value is not None)]
    used = set().union(*(parse_expr(t).names for t in texts)) if texts else set()
    sizes = {n: walker.symbols[n] for n in sorted(used) if n in walker.symbols}
    sizes.update(sizes_from_literals)
    clash = sorted(set(sizes) & set(pnames))
    if clash:
        raise r.refuse(a["problem_size"], f"the problem size {clash[0]!r} has the name of a "
                       "tune parameter", "problem-size variables named apart from tune_params")
    renames = {n: _size_name(n, set(pnames) | set(sizes)) for n in sizes
               if n in _SIZE_ENV or n.startswith("_")}
    if renames:
        grid, args, smem, sizes = _rename(renames, grid, args, smem, sizes)
    if not sizes:
        raise r.refuse(a["problem_size"], "no problem size", "a positive problem_size")
    for size_name in sizes:
        problem = identifier_problem(size_name)
        if problem is not None:
            raise r.refuse(a["problem_size"], f"the problem size {size_name!r}: {problem}",
                           "problem-size variables with plain identifier names")
    space_env = {**device_env(default_device()), **sizes, "elem_bytes": 4}
    params = _feasible_defaults(r, params, constraints, space_env, defaults, params_line, notes)
    space = SearchSpace(params, constraints, space_env)
    base_values = {p.name: str(int(p.default) if isinstance(p.default, bool) else p.default)
                   for p in params}
    kname = name or entry
    return KtImport(
        script=file, name=kname, entry=entry,
        template_source=_header(params, file, source) + _with_extern_c(source, kernel),
        params=tuple(params), constraints=tuple(constraints), grid=tuple(grid),
        block=tuple(block), smem_bytes=smem,
        baseline_grid=tuple(_substitute(g, base_values) for g in grid),
        baseline_block=tuple(_substitute(b, base_values) for b in block),
        baseline_smem_bytes=_substitute(smem, base_values), sizes=sizes, args=tuple(args),
        atol=atol, configs=len(space), notes=tuple(notes))


def _answer(a: Mapping[str, ast.expr], walker: _Walker) -> list[bool] | None:
    """Which entries of ``answer`` are outputs (not None), read from its list's syntax:
    the expected values themselves are numpy computations the importer never runs."""
    node = a.get("answer")
    if isinstance(node, ast.Name):
        node = walker.syntax.get(node.id, node)
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return None
    if not isinstance(node, ast.List | ast.Tuple):
        raise walker.reader.refuse(node, "answer is not a list literal",
                                   "a list [expected_output, None, ...]")
    return [not (isinstance(e, ast.Constant) and e.value is None) for e in node.elts]


def _default_value(r: ScriptReader, name: str, text: str | None, values: Any) -> Any:
    if text is None:
        return None
    raw: list[Any] = [v.value if isinstance(v, Num) else v for v in values] if isinstance(
        values, list | tuple) else []
    for v in raw:
        if str(v) == text or (isinstance(v, bool) and text.lower() == str(v).lower()):
            return v
    raise r.refuse(0, f"--default {name}={text}: not one of its values",
                   f"one of {[str(v) for v in raw]}")


def _feasible_defaults(r: ScriptReader, params: list[Parameter], constraints: list[str],
                       env: Mapping[str, Any], chosen: Mapping[str, str], line: int,
                       notes: list[str]) -> list[Parameter]:
    """The defaults (first values, or the user's) when they satisfy every constraint; else
    the first config Kernel Tuner would enumerate that does."""
    try:
        space = SearchSpace(params, constraints, env)
    except (SpaceError, ExpressionError) as exc:
        raise r.refuse(line, f"the space cannot be built ({exc.message})",
                       "tune_params and restrictions that form a space") from None
    if not len(space):
        raise r.refuse(line, "no config satisfies the restrictions",
                       "restrictions that leave at least one config")
    default = space.default_config()
    why = space.rejection(default)
    if why is None:
        return params
    if chosen:
        raise r.refuse(0, f"the chosen defaults {dict(default)} are rejected by {why!r}",
                       "defaults that satisfy every restriction")
    first = space.config_at(0)
    notes.append(f"the first values {dict(default)} are rejected by {why!r}; the defaults "
                 f"are the first valid config {dict(first)}")
    return [dataclasses.replace(p, default=first[p.name])  # type: ignore[type-var]
            for p in params]


def _divisor(tr: _Translate, value: Any, node: ast.AST, block_name: str,
             params: Sequence[str], what: str) -> str:
    if value is None:
        return block_name if block_name in params else "1"
    items = value if isinstance(value, list | tuple) else [value]
    parts = []
    for item in items:
        if isinstance(item, Num):
            if not isinstance(item.value, int) or item.value <= 0:
                raise tr.reader.refuse(node, f"{what} {item.value}", "a positive integer")
            parts.append(str(item.value))
        else:
            parts.append(tr.text(item, node, what, constraint=False))
    parts = [p for p in parts if p != "1"] or ["1"]
    return " * ".join(parts) if len(parts) == 1 else "(" + " * ".join(parts) + ")"


def _kernel_source(r: ScriptReader, node: ast.expr, value: Any) -> tuple[str, str]:
    """The kernel source text and the file it came from: a string holding the code, or a
    file name (a path inside the script's folder)."""
    from workbench.core.kt_literals import _Path

    if isinstance(value, list | tuple):
        raise r.refuse(node, "kernel_source is a list of files", "one source (string or file)")
    if isinstance(value, _Path):
        return r.read_file(node, value.path), Path(value.path).name
    if isinstance(value, str):
        if "\n" not in value and len(value) < 4096 and "__global__" not in value:
            return r.read_file(node, value), Path(value).name
        return value, r.files_read.get(value, r.file)
    raise r.refuse(node, f"kernel_source is {type(value).__name__}",
                   "the kernel code as a string, a file name, or open(NAME).read()")


def _arguments(r: ScriptReader, a: Mapping[str, ast.expr], env: Mapping[str, Any],
               values: Any, answer: list[bool] | None, kernel: KernelSignature,
               parsed: Any) -> list[KtArg]:
    node = a["arguments"]
    if not isinstance(values, list | tuple):
        raise r.refuse(node, "arguments is not a list", "a list of numpy arrays and scalars")
    if len(values) != len(kernel.params):
        raise r.refuse(node, f"{len(values)} arguments for {kernel.name}'s "
                       f"{len(kernel.params)} parameters", "one argument per kernel parameter")
    outputs = answer
    if outputs is not None and len(outputs) != len(values):
        raise r.refuse(a["answer"], "answer is not a list as long as arguments",
                       "a list with None for each argument that is not an output")
    access = pointer_access(parsed, kernel)
    out: list[KtArg] = []
    for i, (p, v) in enumerate(zip(kernel.params, values, strict=True)):
        where = node.elts[i] if isinstance(node, ast.List | ast.Tuple) else node
        if isinstance(v, Array):
            if not p.is_pointer:
                raise r.refuse(where, f"an array for {p.name} ({p.type_text})",
                               "a numpy scalar for a parameter passed by value")
            if v.dtype == "f64":
                raise r.refuse(v.line, f"{p.name} is a float64 array (numpy's default)",
                               "float32, float16 or integer arrays (add .astype(np.float32))")
            if p.dtype not in (None, v.dtype):
                raise r.refuse(v.line, f"{p.name} is a {v.dtype} array but the kernel takes "
                               f"{p.type_text}", f"an array of the kernel's type ({p.dtype})")
            acc = access[p.name]
            if outputs is not None and outputs[i]:
                role, why = ("inout" if acc.read_lines else "out"), "answer holds an output"
            elif acc.role is not None:
                role, why = acc.role, "the kernel's reads and writes"
            else:
                role, why = "inout", f"unknown ({acc.why_unknown}): read and compared"
            out.append(KtArg(p.name, v.dtype, role, tuple(d.text for d in v.shape), None, why))
        elif isinstance(v, Scalar | Num):
            if p.is_pointer:
                raise r.refuse(where, f"a scalar for the pointer {p.name}", "a numpy array")
            dtype = v.dtype if isinstance(v, Scalar) else (p.dtype or "")
            num = v.value if isinstance(v, Scalar) else v
            if dtype not in SCALAR_DTYPES:
                raise r.refuse(where, f"{p.name} is a {dtype or p.type_text} scalar",
                               f"one of {list(SCALAR_DTYPES)} (np.int32(n), np.float32(x))")
            out.append(KtArg(p.name, dtype, "scalar", (), num.text, "passed by value"))
        else:
            raise r.refuse(where, f"argument {i} ({p.name}) is not an array or a scalar",
                           "numpy arrays (np.zeros, np.random.randn(...).astype(...)) and "
                           "scalars (np.int32(n))")
    if not any(x.role in ("out", "inout") for x in out):
        raise r.refuse(node, f"{kernel.name} writes none of its arguments",
                       "at least one output (an answer entry that is not None)")
    return out


def _size_name(name: str, taken: set[str]) -> str:
    base = "n" + name if name.startswith("_") else name + "_size"
    base = base.lstrip("_") or "n"
    candidate, k = base, 2
    while candidate in taken or candidate in _SIZE_ENV:
        candidate, k = f"{base}{k}", k + 1
    taken.add(candidate)
    return candidate


def _substitute(text: str, values: Mapping[str, str]) -> str:
    if not values:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in values) + r")\b")
    return pattern.sub(lambda m: values[m.group(1)], text)


def _rename(renames: Mapping[str, str], grid: list[str], args: list[KtArg], smem: str,
            sizes: dict[str, int]) -> tuple[list[str], list[KtArg], str, dict[str, int]]:
    sub = dict(renames)
    new_args = [KtArg(x.name, x.dtype, x.role, tuple(_substitute(d, sub) for d in x.shape),
                      None if x.value is None else _substitute(x.value, sub), x.why)
                for x in args]
    return ([_substitute(g, sub) for g in grid], new_args, _substitute(smem, sub),
            {sub.get(k, k): v for k, v in sizes.items()})
