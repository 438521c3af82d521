"""Module globals as inputs: ``__constant__`` (and ``__device__``) arrays a kernel reads.

A kernel that reads a table from constant memory depends on values no kernel argument
carries: left alone they are zero, every output is zero, and comparing a config with the
baseline compares zeros with zeros. So each such global is an input of the kernel folder:

- declared in kernel.toml::

      [[constants]]
      name = "filt"        # the symbol in the .cu
      dtype = "f32"        # an argument dtype (core.dtypes.ARG_DTYPES)
      shape = ["KS", "KS"] # expressions over the [shapes] sizes, or literal integers

- or, when not declared, derived from the baseline's declaration at file scope
  (``__constant__ float filt[KS * KS];``): the element type gives the dtype (``float4``:
  f32 with a trailing dimension of 4), each extent is an integer literal or an expression
  of the file's object-like ``#define`` macros. A global with an initializer
  (``__constant__ float c[3] = {...}``) holds the source's own values and is not an input.

Values come from reference.py ``make_inputs()`` when it returns the constant's name (an
array with as many elements as the constant holds: the symbol is flat memory), otherwise
they are generated per dtype like any input (:func:`workbench.core.inputs.default_inputs`;
never all zeros). The GPU worker uploads them into the module's global before every run of
the baseline and of every candidate; reference() sees them in its inputs dict.

Pure: no GPU, no pycuda. :func:`constants_plan` is what the worker receives.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.cuda_source import CUDA_SCALAR_DTYPES, CudaSource
from workbench.core.dtypes import ARG_DTYPES, arg_storage
from workbench.core.errors import ExpressionError, Problem
from workbench.core.expr import Expr, parse_expr

__all__ = ["CONSTANT_KEYS", "ConstantSpec", "SourceGlobal", "constants_plan", "module_globals",
           "read_constants"]

CONSTANT_KEYS = frozenset({"name", "dtype", "shape"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUALIFIERS = ("__constant__", "__device__")
# CUDA vector types: (element type, lanes)
_VECTORS = {f"{base}{n}": (elem, n) for base, elem in
            (("float", "float"), ("int", "int"), ("uint", "unsigned int"),
             ("char", "signed char"), ("uchar", "unsigned char"), ("short", "short"),
             ("ushort", "unsigned short"), ("longlong", "long long"))
            for n in (2, 3, 4)}
_MAX_DIMS = 8
_MAX_EXTENT_DEPTH = 16  # macro expansions while evaluating one extent


@dataclass(frozen=True)
class ConstantSpec:
    """One module global the kernel reads as an input (see the module doc)."""

    name: str
    dtype: str  # "T" (the element dtype) or one of core.dtypes.ARG_DTYPES
    shape: tuple[Expr, ...]  # () for a scalar global
    declared: bool = True  # False: derived from the source declaration
    line: int = 0  # the baseline's declaration line (0: not found)

    def resolved_dtype(self, dtype: str) -> str:
        return dtype if self.dtype == "T" else self.dtype

    def shape_for(self, env: Mapping[str, Any]) -> tuple[int, ...]:
        return tuple(int(e.evaluate(env)) for e in self.shape)


@dataclass(frozen=True)
class SourceGlobal:
    """A file-scope ``__constant__`` / ``__device__`` variable as the source declares it."""

    name: str
    qualifier: str  # __constant__ | __device__
    ctype: str  # the element type as written
    dtype: str | None  # its workbench dtype; None: a type the workbench cannot fill
    extents: tuple[str, ...]  # each [..] as written (a vector type adds its lanes)
    counts: tuple[int, ...] | None  # the extents evaluated; None: one does not evaluate
    initialized: bool
    line: int
    why: str = ""  # why ``counts`` or ``dtype`` is None

    @property
    def elements(self) -> int | None:
        return None if self.counts is None else math.prod(self.counts)


def _macros(source: CudaSource) -> dict[str, list[str]]:
    """Object-like ``#define NAME VALUE`` bodies by name (every definition, in order)."""
    out: dict[str, list[str]] = {}
    for node in source.walk(source.tree.root_node):
        if node.type != "preproc_def":
            continue
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None:
            out.setdefault(source.node_text(name), []).append(
                source.node_text(value).strip() if value is not None else "")
    return out


_C_INT = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b")


def _eval_extent(text: str, macros: Mapping[str, list[str]], depth: int = 0) -> int:
    """An array extent as C evaluates it: integer literals, + - * / % << >> and
    parentheses, object-like macros expanded (each defined once). ValueError says why not."""
    if depth > _MAX_EXTENT_DEPTH:
        raise ValueError("macros nested too deeply")
    tree = ast.parse(_C_INT.sub(lambda m: str(int(m.group(1), 0)), text.strip()), mode="eval")
    return _eval_node(tree.body, macros, depth)


def _eval_node(node: ast.AST, macros: Mapping[str, list[str]], depth: int) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        bodies = macros.get(node.id)
        if not bodies:
            raise ValueError(f"{node.id} is not an object-like #define of this file")
        if len(set(bodies)) > 1:
            raise ValueError(f"{node.id} is defined more than once ({', '.join(bodies)})")
        return _eval_extent(bodies[0], macros, depth + 1)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval_node(node.operand, macros, depth)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        a, b = _eval_node(node.left, macros, depth), _eval_node(node.right, macros, depth)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod):
            if b == 0:
                raise ValueError("division by zero")
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # C truncates
            return q if not isinstance(node.op, ast.Mod) else a - q * b
        if isinstance(node.op, ast.LShift) and 0 <= b < 64:
            return a << b
        if isinstance(node.op, ast.RShift) and 0 <= b < 64:
            return a >> b
    raise ValueError(f"{ast.unparse(node)!r} is not an integer constant expression")


def _declarator_parts(source: CudaSource, node: Any) -> tuple[str, list[str], bool] | None:
    """(name, extents as written, has an initializer) of one declarator; None: a function."""
    initialized = False
    if node.type == "init_declarator":
        initialized = True
        node = node.child_by_field_name("declarator")
    extents: list[str] = []
    while node is not None and node.type == "array_declarator":
        size = node.child_by_field_name("size")
        extents.insert(0, source.node_text(size) if size is not None else "")
        node = node.child_by_field_name("declarator")
    if node is None or node.type != "identifier":
        return None
    return source.node_text(node), extents, initialized


def module_globals(source: CudaSource) -> dict[str, SourceGlobal]:
    """Every file-scope ``__constant__`` / ``__device__`` variable of ``source``."""
    macros = _macros(source)
    found: dict[str, SourceGlobal] = {}
    for node in source.tree.root_node.children:
        if node.type != "declaration":
            continue
        words = [source.node_text(c) for c in node.children
                 if c.type in ("type_qualifier", "storage_class_specifier", "__device__",
                               "__constant__")]
        qualifier = next((q for q in _QUALIFIERS if q in words), None)
        type_node = node.child_by_field_name("type")
        if qualifier is None or type_node is None:
            continue
        ctype = " ".join(source.node_text(type_node).split())
        for declarator in node.children_by_field_name("declarator"):
            parts = _declarator_parts(source, declarator)
            if parts is None:
                continue
            name, extents, initialized = parts
            lanes = _VECTORS.get(ctype)
            base = lanes[0] if lanes else ctype
            dtype = CUDA_SCALAR_DTYPES.get(base)
            dtype = None if dtype == "T" else dtype
            counts: tuple[int, ...] | None = None
            why = "" if dtype is not None else f"the element type {ctype} (not a number type " \
                                                "the workbench generates)"
            try:
                counts = tuple(_eval_extent(e, macros) if e else _raise("an unsized array")
                               for e in extents) + ((lanes[1],) if lanes else ())
            except (ValueError, SyntaxError, RecursionError) as exc:
                why = why or f"the extent [{', '.join(extents)}] ({exc})"
            found[name] = SourceGlobal(name, qualifier, ctype, dtype,
                                       tuple(extents) + ((str(lanes[1]),) if lanes else ()),
                                       counts, initialized, source.line_of(node), why)
    return found


def _raise(message: str) -> int:
    raise ValueError(message)


def read_constants(raw: Any, env_names: Sequence[str], source: CudaSource | None,
                   file: str, arg_names: Sequence[str]) -> tuple[list[ConstantSpec],
                                                                list[Problem]]:
    """kernel.toml's ``[[constants]]`` (``raw``: the value found, None when absent) plus the
    baseline's undeclared module globals, and every problem found (file, key, value,
    expected), each naming the key or the source line."""
    problems: list[Problem] = []

    def add(where: str, key: str, value: Any, expected: str) -> None:
        shown = value if isinstance(value, str) else repr(value)
        problems.append(Problem(where, key, shown[:200], expected))

    globals_ = module_globals(source) if source is not None else {}
    specs: list[ConstantSpec] = []
    if raw is not None and not isinstance(raw, list):
        add("kernel.toml", "constants", raw, "an array of [[constants]] tables")
        raw = []
    seen: set[str] = set()
    for i, entry in enumerate(raw or []):
        key = f"constants[{i}]"
        if not isinstance(entry, dict):
            add("kernel.toml", key, entry, "a table { name, dtype, shape }")
            continue
        for k in sorted(set(entry) - CONSTANT_KEYS):
            add("kernel.toml", f"{key}.{k}", "unknown key", f"one of {sorted(CONSTANT_KEYS)}")
        name = entry.get("name")
        if not isinstance(name, str) or not _IDENT.fullmatch(name):
            add("kernel.toml", f"{key}.name", name, "a C identifier (the global's symbol)")
            continue
        key = f"constants[{i}] ({name})"
        if name in seen or name in arg_names:
            add("kernel.toml", f"{key}.name", name,
                "a name no other constant or argument has")
            continue
        seen.add(name)
        dtype = entry.get("dtype")
        if dtype not in ARG_DTYPES:
            add("kernel.toml", f"{key}.dtype", dtype, f"one of {list(ARG_DTYPES)}")
            continue
        shape_raw = entry.get("shape")
        if not isinstance(shape_raw, list) or not 1 <= len(shape_raw) <= _MAX_DIMS:
            add("kernel.toml", f"{key}.shape", shape_raw,
                f"a list of 1 to {_MAX_DIMS} expressions over the [shapes] sizes")
            continue
        shape: list[Expr] = []
        for j, dim in enumerate(shape_raw):
            if isinstance(dim, bool) or not isinstance(dim, str | int):
                add("kernel.toml", f"{key}.shape[{j}]", dim, "an expression string or integer")
                continue
            try:
                shape.append(parse_expr(str(dim), known_names=env_names))
            except ExpressionError as exc:
                add("kernel.toml", f"{key}.shape[{j}]", str(dim),
                    f"a valid expression ({exc.message})")
        if len(shape) != len(shape_raw):
            continue
        found = globals_.get(name)
        if source is not None and found is None:
            add(file, f"{key}.name", name, f"a file-scope __constant__ or __device__ variable "
                f"named {name} in {file}")
            continue
        if found is not None and found.dtype is not None and dtype != "T" \
                and arg_storage(found.dtype).itemsize != arg_storage(dtype).itemsize:
            add("kernel.toml", f"{key}.dtype", dtype,
                f"a dtype of {arg_storage(found.dtype).itemsize} bytes, as {file} line "
                f"{found.line} declares {found.ctype} {name}")
            continue
        specs.append(ConstantSpec(name, dtype, tuple(shape), True,
                                  found.line if found else 0))
    for g in globals_.values():
        if g.name in seen or g.initialized:
            continue
        if g.name in arg_names:
            continue  # a parameter shadows it inside the kernel
        if g.dtype is None or g.counts is None:
            add(file, f"line {g.line}", f"{g.qualifier} {g.ctype} {g.name}"
                f"{''.join(f'[{e}]' for e in g.extents)}",
                f"a module global whose values the workbench can generate: {g.why}; declare "
                "it in kernel.toml [[constants]] (name, dtype, shape) or give it an "
                "initializer")
            continue
        specs.append(ConstantSpec(g.name, g.dtype,
                                  tuple(parse_expr(str(n)) for n in g.counts), False, g.line))
    return specs, problems


def check_constant_counts(specs: Sequence[ConstantSpec], source: CudaSource | None,
                          env: Mapping[str, Any], file: str, where: str) -> list[Problem]:
    """Each declared constant's element count at one problem (``env``) against the source's
    declaration, where the source's extent evaluates: uploading more or fewer bytes than the
    symbol holds is refused here, before any GPU."""
    problems: list[Problem] = []
    globals_ = module_globals(source) if source is not None else {}
    for i, spec in enumerate(specs):
        try:
            dims = spec.shape_for(env)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError, ExpressionError) as exc:
            problems.append(Problem("kernel.toml", f"constants[{i}] ({spec.name}).shape",
                                    f"{[e.text for e in spec.shape]} {where}",
                                    f"expressions that evaluate ({exc})"))
            continue
        if any(d <= 0 for d in dims):
            problems.append(Problem("kernel.toml", f"constants[{i}] ({spec.name}).shape",
                                    f"{[e.text for e in spec.shape]} = {list(dims)} {where}",
                                    "positive integers"))
            continue
        found = globals_.get(spec.name)
        if found is None or found.elements is None or not spec.declared:
            continue
        if math.prod(dims) != found.elements:
            problems.append(Problem(
                "kernel.toml", f"constants[{i}] ({spec.name}).shape",
                f"{[e.text for e in spec.shape]} = {math.prod(dims)} elements {where}",
                f"{found.elements} elements, as {file} line {found.line} declares "
                f"{found.ctype} {spec.name}{''.join(f'[{e}]' for e in found.extents)}"))
    return problems


def constants_plan(specs: Sequence[ConstantSpec], env: Mapping[str, Any],
                   dtype: str) -> list[dict[str, Any]]:
    """What the GPU worker uploads at one problem: name, concrete dtype and shape of each
    constant (the form :func:`workbench.core.inputs.default_inputs` and the worker read)."""
    return [{"name": s.name, "role": "constant", "dtype": s.resolved_dtype(dtype),
             "shape": list(s.shape_for(env))} for s in specs]
