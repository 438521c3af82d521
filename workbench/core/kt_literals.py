"""A Kernel Tuner script read as data: its straight-line assignments evaluated from the
syntax tree, never executed.

The script is untrusted. It is parsed with :mod:`ast` and only a whitelist of literal forms
is evaluated by this module's own walker; no code object is ever built, nothing is imported
and no name the script defines is called. What is evaluated:

- numbers, strings, booleans, ``None``; lists, tuples, dicts with string keys;
- ``+ - * / // % **`` on numbers (integers stay within 64 bits; ``**`` with an exponent of
  at most 64), ``+`` on strings and lists (sizes capped);
- ``range(...)``, ``list(...)``, ``tuple(...)``, ``int(...)``, ``float(...)``, ``len(...)``,
  ``dict(k=v)``, ``OrderedDict(...)`` and list comprehensions over such lists (at most
  :data:`MAX_ELEMENTS` elements in all);
- numpy scalars (``np.int32(n)``, ``np.float32(x)``) and arrays made by ``np.zeros`` /
  ``ones`` / ``empty`` / ``*_like`` / ``arange`` / ``np.random.*`` with ``.astype(...)``
  (only their shape and dtype are kept: no array is ever built);
- the script's folder (``os.path.dirname(os.path.realpath(__file__))``,
  ``Path(__file__).parent``), ``os.path.join``, ``Path / "name"``, and a file's text by
  ``open(NAME).read()``, ``Path(NAME).read_text()`` or ``with open(NAME) as f: ... f.read()``;
  files are read only inside the script's folder (:func:`inside_root`: no symlink, no
  ``..``) and only when a value needs them;
- lambdas and one-line functions are kept as syntax (:class:`Function`), for the importer
  to translate, never called.

A statement the walker does not evaluate (an ``if``, a loop, a call) binds every name it
assigns to :class:`Unknown`, so a later use fails with the line that made it unknown rather
than silently using an older value. Every refusal is a :class:`KtImportError` naming the
file, the line and what was expected.
"""

from __future__ import annotations

import ast
import math
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.errors import WorkbenchError, WriteRefusedError
from workbench.core.write_policy import inside_root

__all__ = ["MAX_ELEMENTS", "MAX_SCRIPT_BYTES", "Array", "Function", "KtImportError",
           "Num", "Scalar", "ScriptReader", "Unknown"]

MAX_SCRIPT_BYTES = 1 << 20  # a tuning script or a kernel file it names
MAX_ELEMENTS = 1_000_000  # elements of one list, and list-comprehension steps in all
_MAX_INT = 2**63 - 1
_MAX_STRING = MAX_SCRIPT_BYTES

# numpy scalar and dtype names -> workbench argument dtypes (core.dtypes.ARG_DTYPES)
NUMPY_DTYPES: Mapping[str, str] = {
    "float32": "f32", "single": "f32", "float16": "fp16", "half": "fp16",
    "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
    "intc": "i32", "uint32": "u32", "uintc": "u32", "int64": "i64", "float64": "f64",
    "double": "f64", "float_": "f64", "bool_": "u8",
}
_ARRAY_MAKERS = ("zeros", "ones", "empty", "full")
_LIKE_MAKERS = ("zeros_like", "ones_like", "empty_like", "full_like", "copy", "array",
                "asarray", "ascontiguousarray")
_RANDOM_DIMS = ("randn", "rand")  # np.random.randn(d0, d1, ...)
_RANDOM_SIZE = ("random", "random_sample", "uniform", "normal", "randint", "standard_normal")


class KtImportError(WorkbenchError):
    """A Kernel Tuner script cannot be imported: ``file``, 1-based ``line`` (0: the whole
    script) and what was ``expected`` there."""

    def __init__(self, message: str, *, file: str, line: int, expected: str = "",
                 **details: Any) -> None:
        super().__init__(message, file=file, line=line, expected=expected, **details)
        self.file = file
        self.line = line
        self.expected = expected


@dataclass(frozen=True)
class Unknown:
    """A name the walker could not give a value: where and why."""

    line: int
    why: str
    expected: str = "a literal"


@dataclass(frozen=True)
class Num:
    """A number, with its text over the script's problem-size names when it has one
    (``size``, ``n * 2``), else None: a literal."""

    value: int | float
    expr: str | None = None

    @property
    def text(self) -> str:
        return self.expr if self.expr is not None else repr(self.value)


@dataclass(frozen=True)
class Array:
    """A numpy array the script would make: its shape and dtype only."""

    shape: tuple[Num, ...]
    dtype: str  # a key of NUMPY_DTYPES' values ("f32", "i32", ..., "f64")
    line: int


@dataclass(frozen=True)
class Scalar:
    """A numpy scalar argument (``np.int32(n)``)."""

    dtype: str
    value: Num
    line: int


@dataclass(frozen=True)
class Function:
    """A lambda or a one-line ``def`` (``return EXPR``), kept as syntax: never called.
    ``closure`` holds the script's bindings when it was defined (for names it reads)."""

    args: tuple[str, ...]
    body: ast.expr
    line: int
    closure: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class _Dtype:
    name: str  # workbench dtype


@dataclass(frozen=True)
class _Path:
    """A path the script names (absolute, as text)."""

    path: str


@dataclass(frozen=True)
class _FileHandle:
    path: str


@dataclass(frozen=True)
class _Module:
    dotted: str


def _dotted(node: ast.expr) -> str | None:
    """``np.random.randn`` -> "np.random.randn"; None for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class ScriptReader:
    """The bindings of one script's straight-line code, evaluated on demand by the walker."""

    def __init__(self, file: str, folder: Path) -> None:
        self.file = file
        self.folder = folder
        self.aliases: dict[str, str] = {}  # import alias -> module or object dotted name
        self.steps = 0
        self.files_read: dict[str, str] = {}  # text -> the file name it was read from

    # ------------------------------------------------------------------ errors

    def refuse(self, node: ast.AST | int, what: str, expected: str) -> KtImportError:
        line = node if isinstance(node, int) else getattr(node, "lineno", 0)
        return KtImportError(f"{self.file}:{line}: {what}; expected {expected}",
                             file=self.file, line=line, expected=expected, what=what)

    def unknown(self, value: Unknown, name: str, node: ast.AST | int) -> KtImportError:
        """The error behind a value the importer could not read, at the line that made it,
        naming where it was needed."""
        use = node if isinstance(node, int) else getattr(node, "lineno", 0)
        return self.refuse(value.line, f"{value.why} (needed by {name} at line {use})",
                           value.expected)

    def known(self, value: Any, name: str, node: ast.AST | int) -> Any:
        """``value``, or the error behind it when it (or an item of it) is Unknown."""
        if isinstance(value, Unknown):
            raise self.unknown(value, name, node)
        items = value.values() if isinstance(value, dict) else (
            value if isinstance(value, list | tuple) else ())
        for item in items:
            self.known(item, name, node)
        return value

    # ------------------------------------------------------------------ names

    def resolve(self, dotted: str) -> str:
        """The dotted name with its import alias expanded (np.zeros -> numpy.zeros)."""
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

    def lookup(self, node: ast.Name, env: Mapping[str, Any]) -> Any:
        if node.id in env:
            value = env[node.id]
            if isinstance(value, Unknown):
                raise self.unknown(value, repr(node.id), node)
            return value
        if node.id == "__file__":
            return _Path(str(self.folder / "__script__.py"))
        if node.id in self.aliases:
            return _Module(self.aliases[node.id])
        raise self.refuse(node, f"name {node.id!r} is not bound by an assignment the importer "
                          "reads", "a name assigned earlier in the script to a literal")

    # ------------------------------------------------------------------ expressions

    def value(self, node: ast.expr, env: Mapping[str, Any]) -> Any:
        """The value of ``node``, or KtImportError naming the line and what was expected."""
        try:
            return self._value(node, env)
        except RecursionError:
            raise self.refuse(node, "an expression nested too deeply",
                              "a literal nested a few levels deep") from None

    def _value(self, node: ast.expr, env: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or node.value is None or isinstance(node.value, str):
                return node.value
            if isinstance(node.value, int | float):
                return self._num(node, node.value, None)
            raise self.refuse(node, f"a {type(node.value).__name__} literal",
                              "a number, a string, True/False or None")
        if isinstance(node, ast.Name):
            return self.lookup(node, env)
        if isinstance(node, ast.List | ast.Tuple):
            items = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    raise self.refuse(elt, "a starred item", "plain list items")
                items.append(self._value(elt, env))
            self._count(node, len(items))
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for key, val in zip(node.keys, node.values, strict=True):
                if key is None:
                    raise self.refuse(val, "a ** unpacking in a dict", "key: value pairs")
                k = self._value(key, env)
                if not isinstance(k, str):
                    raise self.refuse(key, "a dict key that is not a string",
                                      "string keys (tune parameter names)")
                out[k] = self._value(val, env)
            return out
        if isinstance(node, ast.BinOp):
            return self._binop(node, self._value(node.left, env), self._value(node.right, env))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self._value(node.operand, env)
            if not isinstance(operand, Num):
                raise self.refuse(node, "a sign on something that is not a number", "a number")
            if isinstance(node.op, ast.UAdd):
                return operand
            expr = None if operand.expr is None else f"-({operand.expr})"
            return self._num(node, -operand.value, expr)
        if isinstance(node, ast.ListComp):
            return self._listcomp(node, env)
        if isinstance(node, ast.Lambda):
            return self.function(node, env)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, env)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        raise self.refuse(node, f"a {type(node).__name__} expression",
                          "a literal: numbers, strings, lists, dicts, range(...), list "
                          "comprehensions, numpy arrays and scalars")

    def function(self, node: ast.Lambda, env: Mapping[str, Any]) -> Function:
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults or a.posonlyargs:
            raise self.refuse(node, "a lambda with defaults, * or ** arguments",
                              "lambda p: EXPR or lambda NAME, ...: EXPR")
        return Function(tuple(x.arg for x in a.args), node.body, node.lineno, dict(env))

    def _num(self, node: ast.AST, value: int | float, expr: str | None) -> Num:
        if isinstance(value, int) and not -_MAX_INT - 1 <= value <= _MAX_INT:
            raise self.refuse(node, f"an integer of {value.bit_length()} bits",
                              "an integer within 64 bits")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.refuse(node, f"the number {value}", "a finite number")
        return Num(value, expr)

    def _count(self, node: ast.AST, n: int) -> None:
        self.steps += n
        if n > MAX_ELEMENTS or self.steps > 20 * MAX_ELEMENTS:
            raise self.refuse(node, f"a list of {n} elements (or too many in all)",
                              f"at most {MAX_ELEMENTS} elements")

    def _binop(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        op = node.op
        if isinstance(left, str) and isinstance(right, str) and isinstance(op, ast.Add):
            if len(left) + len(right) > _MAX_STRING:
                raise self.refuse(node, "a string too long", f"at most {_MAX_STRING} characters")
            return left + right
        if isinstance(left, _Path) and isinstance(right, str) and isinstance(op, ast.Div | ast.Add):
            joined = (os.path.join(left.path, right) if isinstance(op, ast.Div)
                      else left.path + right)
            return _Path(joined)
        if isinstance(left, _Path) and isinstance(right, _Path | str) and isinstance(op, ast.Add):
            return _Path(left.path + (right.path if isinstance(right, _Path) else right))
        if isinstance(left, str) and isinstance(right, _Path) and isinstance(op, ast.Add):
            return _Path(left + right.path)
        if isinstance(left, list) and isinstance(right, list) and isinstance(op, ast.Add):
            self._count(node, len(left) + len(right))
            return left + right
        if isinstance(left, tuple) and isinstance(right, tuple) and isinstance(op, ast.Add):
            self._count(node, len(left) + len(right))
            return left + right
        if not isinstance(left, Num) or not isinstance(right, Num):
            raise self.refuse(node, f"{type(op).__name__} on {_kind(left)} and {_kind(right)}",
                              "arithmetic on numbers, + on strings or lists")
        a, b = left.value, right.value
        symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
                   ast.Mod: "%", ast.Pow: "**"}
        symbol = symbols.get(type(op))
        if symbol is None:
            raise self.refuse(node, f"the operator {type(op).__name__}",
                              "one of + - * / // % **")
        if symbol in ("/", "//", "%") and b == 0:
            raise self.refuse(node, "a division by zero", "a non-zero divisor")
        if symbol == "**":
            if not isinstance(b, int) or not 0 <= b <= 64:
                raise self.refuse(node, f"an exponent of {b}", "an integer exponent 0..64")
            if isinstance(a, int) and abs(a) > 1 and abs(a).bit_length() * b > 70:
                raise self.refuse(node, f"{a} ** {b} (over 64 bits)", "an integer within 64 bits")
        result = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                  "/": lambda: a / b, "//": lambda: a // b, "%": lambda: a % b,
                  "**": lambda: a ** b}[symbol]()
        expr = None
        if left.expr is not None or right.expr is not None:
            expr = f"({left.text}) {symbol} ({right.text})"
        return self._num(node, result, expr)

    def _listcomp(self, node: ast.ListComp, env: Mapping[str, Any]) -> list[Any]:
        out: list[Any] = []

        def walk(level: int, scope: dict[str, Any]) -> None:
            if level == len(node.generators):
                out.append(self._value(node.elt, scope))
                self._count(node, len(out))
                return
            gen = node.generators[level]
            if gen.is_async:
                raise self.refuse(node, "an async comprehension", "a plain comprehension")
            items = self._value(gen.iter, scope)
            if not isinstance(items, list | tuple):
                raise self.refuse(gen.iter, f"a comprehension over {_kind(items)}",
                                  "a comprehension over a list or range(...)")
            for item in items:
                inner = dict(scope)
                self._bind(gen.target, item, inner)
                if all(self._truth(cond, inner) for cond in gen.ifs):
                    walk(level + 1, inner)
                self._count(node, 1)

        walk(0, dict(env))
        return out

    def _truth(self, node: ast.expr, env: Mapping[str, Any]) -> bool:
        """A comprehension filter: comparisons of numbers, and/or/not."""
        if isinstance(node, ast.BoolOp):
            values = [self._truth(v, env) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self._truth(node.operand, env)
        if isinstance(node, ast.Compare):
            left = self._value(node.left, env)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self._value(right_node, env)
                a = left.value if isinstance(left, Num) else left
                b = right.value if isinstance(right, Num) else right
                if not isinstance(a, int | float) or not isinstance(b, int | float):
                    raise self.refuse(node, "a comparison of things that are not numbers",
                                      "a comparison of numbers")
                checks = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b,
                          ast.Eq: a == b, ast.NotEq: a != b}
                if type(op) not in checks:
                    raise self.refuse(node, f"the comparison {type(op).__name__}",
                                      "< <= > >= == !=")
                if not checks[type(op)]:
                    return False
                left = right
            return True
        raise self.refuse(node, f"a {type(node).__name__} filter",
                          "a comparison of numbers (with and/or/not)")

    def _bind(self, target: ast.expr, item: Any, scope: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = item
            return
        if isinstance(target, ast.Tuple) and isinstance(item, list | tuple) and \
                len(item) == len(target.elts):
            for t, v in zip(target.elts, item, strict=True):
                self._bind(t, v, scope)
            return
        raise self.refuse(target, "a comprehension target the importer cannot bind",
                          "a name or a tuple of names")

    def _subscript(self, node: ast.Subscript, env: Mapping[str, Any]) -> Any:
        base = self._value(node.value, env)
        if isinstance(node.slice, ast.Slice):
            raise self.refuse(node, "a slice", "an index or a key")
        key = self._value(node.slice, env)
        if isinstance(base, dict) and isinstance(key, str):
            if key not in base:
                raise self.refuse(node, f"key {key!r} is not in the dict", f"one of {list(base)}")
            return base[key]
        if isinstance(base, list | tuple) and isinstance(key, Num) and isinstance(key.value, int):
            if not -len(base) <= key.value < len(base):
                raise self.refuse(node, f"index {key.value} is out of range",
                                  f"an index below {len(base)}")
            return base[key.value]
        raise self.refuse(node, f"an index into {_kind(base)}", "a list index or a dict key")

    def _attribute(self, node: ast.Attribute, env: Mapping[str, Any]) -> Any:
        dotted = _dotted(node)
        root = dotted.split(".")[0] if dotted else None
        if dotted is not None and root is not None and root not in env and root != "__file__":
            full = self.resolve(dotted)
            module, _, attr = full.rpartition(".")
            if module == "numpy" and attr in NUMPY_DTYPES:
                return _Dtype(NUMPY_DTYPES[attr])
            raise self.refuse(node, f"{dotted}", "a numpy dtype (np.float32, np.int32, ...)")
        base = self._value(node.value, env)
        if isinstance(base, Array) and node.attr == "shape":
            return base.shape
        if isinstance(base, Array) and node.attr == "size":
            return self._product(node, base.shape)
        if isinstance(base, Array) and node.attr == "dtype":
            return _Dtype(base.dtype)
        if isinstance(base, _Path) and node.attr == "parent":
            return _Path(os.path.dirname(base.path))
        raise self.refuse(node, f".{node.attr} of {_kind(base)}",
                          "an array's .shape/.size/.dtype or a path's .parent")

    def _product(self, node: ast.AST, dims: tuple[Num, ...]) -> Num:
        out = Num(1)
        for d in dims:
            value = out.value * d.value
            expr = None if out.expr is None and d.expr is None else (
                d.text if out.value == 1 and out.expr is None else f"({out.text}) * ({d.text})")
            out = self._num(node, value, expr)
        return out

    # ------------------------------------------------------------------ calls

    def _args(self, node: ast.Call, env: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.refuse(a, "a *args call", "plain arguments")
            args.append(self._value(a, env))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.refuse(k.value, "a **kwargs call", "plain keyword arguments")
            kwargs[k.arg] = self._value(k.value, env)
        return args, kwargs

    def _call(self, node: ast.Call, env: Mapping[str, Any]) -> Any:
        func = node.func
        # a method of a value: arr.astype(dt), f.read(), path.read_text()
        dotted = _dotted(func)
        if isinstance(func, ast.Attribute) and (
                dotted is None or dotted.split(".")[0] in env or dotted.startswith("__file__")):
            return self._method(node, func, env)
        if dotted is None:
            raise self.refuse(node, "a call of a computed function",
                              "a call of range, int, np.zeros, open(...).read(), ...")
        name = self.resolve(dotted)
        args, kwargs = self._args(node, env)
        return self._builtin(node, name, args, kwargs)

    def _method(self, node: ast.Call, func: ast.Attribute, env: Mapping[str, Any]) -> Any:
        base = self._value(func.value, env)
        args, kwargs = self._args(node, env)
        if isinstance(base, Array) and func.attr == "astype":
            dtype = self._dtype(node, args[0] if args else kwargs.get("dtype"))
            return Array(base.shape, dtype, node.lineno)
        if isinstance(base, Array) and func.attr in ("copy", "flatten", "ravel"):
            shape = base.shape if func.attr == "copy" else (self._product(node, base.shape),)
            return Array(shape, base.dtype, node.lineno)
        if isinstance(base, _FileHandle) and func.attr == "read" and not args:
            return self.read_file(node, base.path)
        if isinstance(base, _Path) and func.attr == "read_text":
            return self.read_file(node, base.path)
        if isinstance(base, _Path) and func.attr in ("resolve", "absolute"):
            return base
        if isinstance(base, _Path) and func.attr == "joinpath":
            return _Path(os.path.join(base.path, *[self._text(node, a) for a in args]))
        if isinstance(base, _Path | _FileHandle) and func.attr == "open":
            return _FileHandle(base.path)
        raise self.refuse(node, f"the call .{func.attr}() on {_kind(base)}",
                          "arr.astype(dtype), open(NAME).read() or Path(NAME).read_text()")

    def _text(self, node: ast.AST, value: Any) -> str:
        if isinstance(value, _Path):
            return value.path
        if isinstance(value, str):
            return value
        raise self.refuse(node, f"{_kind(value)} where a path is needed", "a string or a path")

    def _dtype(self, node: ast.AST, value: Any) -> str:
        if isinstance(value, _Dtype):
            return value.name
        if isinstance(value, str) and value in NUMPY_DTYPES:
            return NUMPY_DTYPES[value]
        raise self.refuse(node, f"the dtype {value!r}",
                          f"a numpy dtype ({', '.join(sorted(NUMPY_DTYPES))})")

    def _shape(self, node: ast.AST, value: Any) -> tuple[Num, ...]:
        dims = tuple(value) if isinstance(value, list | tuple) else (value,)
        for d in dims:
            if not isinstance(d, Num) or not isinstance(d.value, int) or d.value < 0:
                raise self.refuse(node, f"an array dimension {_kind(d)}",
                                  "a non-negative integer (or a name bound to one)")
        if not 1 <= len(dims) <= 8:
            raise self.refuse(node, f"an array of {len(dims)} dimensions", "1 to 8 dimensions")
        return dims

    def _builtin(self, node: ast.Call, name: str, args: list[Any],
                 kwargs: dict[str, Any]) -> Any:
        if name == "range":
            if kwargs or not 1 <= len(args) <= 3 or not all(
                    isinstance(a, Num) and isinstance(a.value, int) for a in args):
                raise self.refuse(node, "range() of something that is not 1 to 3 integers",
                                  "range(stop), range(start, stop) or range(start, stop, step)")
            ints = [a.value for a in args]
            if len(ints) == 3 and ints[2] == 0:
                raise self.refuse(node, "range() with step 0", "a non-zero step")
            span = range(*ints)
            self._count(node, len(span))
            return [Num(v) for v in span]
        if name in ("list", "tuple") and len(args) == 1 and not kwargs and \
                isinstance(args[0], list | tuple):
            return list(args[0]) if name == "list" else tuple(args[0])
        if name in ("int", "float") and len(args) == 1 and not kwargs and isinstance(args[0], Num):
            if name == "int":
                return self._num(node, int(args[0].value), args[0].expr)
            return self._num(node, float(args[0].value), args[0].expr)
        if name == "len" and len(args) == 1 and isinstance(args[0], list | tuple | dict | str):
            return Num(len(args[0]))
        if name in ("dict", "collections.OrderedDict", "OrderedDict"):
            out: dict[str, Any] = {}
            if args:
                pairs = args[0]
                if len(args) > 1 or not isinstance(pairs, list | tuple | dict):
                    raise self.refuse(node, f"{name}() of {_kind(pairs)}",
                                      f"{name}(), {name}(key=value) or a list of pairs")
                items = pairs.items() if isinstance(pairs, dict) else pairs
                for pair in items:
                    if not isinstance(pair, list | tuple) or len(pair) != 2 or \
                            not isinstance(pair[0], str):
                        raise self.refuse(node, f"{name}() of something not (name, value) "
                                          "pairs", "(string, value) pairs")
                    out[pair[0]] = pair[1]
            out.update(kwargs)
            return out
        module, _, attr = name.rpartition(".")
        if module == "numpy" and attr in NUMPY_DTYPES and len(args) == 1 and not kwargs:
            value = args[0]
            if not isinstance(value, Num):
                raise self.refuse(node, f"numpy.{attr}() of {_kind(value)}",
                                  "a number (or a name bound to one)")
            return Scalar(NUMPY_DTYPES[attr], value, node.lineno)
        if module == "numpy" and attr in _ARRAY_MAKERS and args:
            dtype = self._dtype(node, kwargs["dtype"]) if "dtype" in kwargs else "f64"
            if attr == "full" and "dtype" not in kwargs:
                dtype = "f64"
            return Array(self._shape(node, args[0]), dtype, node.lineno)
        if module == "numpy" and attr in _LIKE_MAKERS and args and isinstance(args[0], Array):
            dtype = self._dtype(node, kwargs["dtype"]) if "dtype" in kwargs else args[0].dtype
            return Array(args[0].shape, dtype, node.lineno)
        if module == "numpy" and attr == "arange" and len(args) == 1:
            dtype = self._dtype(node, kwargs["dtype"]) if "dtype" in kwargs else "i64"
            return Array(self._shape(node, args[0]), dtype, node.lineno)
        if module == "numpy.random" and attr in _RANDOM_DIMS:
            return Array(self._shape(node, tuple(args)), "f64", node.lineno)
        if module == "numpy.random" and attr in _RANDOM_SIZE:
            size = kwargs.get("size", args[-1] if attr in ("random", "random_sample",
                                                            "standard_normal") and args else None)
            if size is None and attr in ("uniform", "normal", "randint") and len(args) == 3:
                size = args[2]
            if size is None:
                raise self.refuse(node, f"numpy.random.{attr}() without a size",
                                  "a size (size=N or size=(N, M))")
            dtype = "i64" if attr == "randint" else "f64"
            if "dtype" in kwargs:
                dtype = self._dtype(node, kwargs["dtype"])
            return Array(self._shape(node, size), dtype, node.lineno)
        if name in ("os.path.dirname", "os.path.realpath", "os.path.abspath",
                    "os.path.normpath") and len(args) == 1:
            path = self._text(node, args[0])
            return _Path(os.path.dirname(path) if name.endswith("dirname")
                         else os.path.normpath(path))
        if name == "os.path.join" and args:
            return _Path(os.path.join(*[self._text(node, a) for a in args]))
        if name in ("pathlib.Path", "Path", "pathlib.PurePath") and len(args) == 1:
            return _Path(self._text(node, args[0]))
        if name == "open" and args and all(isinstance(a, str) for a in args[1:]):
            mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
            if mode not in ("r", "rt"):
                raise self.refuse(node, f"open() with mode {mode!r}", "open(NAME) for reading")
            return _FileHandle(self._text(node, args[0]))
        raise self.refuse(node, f"a call of {name}()",
                          "range, list, int, float, len, dict, OrderedDict, numpy scalars "
                          "and array makers (np.zeros, np.random.randn, ...), os.path and "
                          "pathlib paths, open(NAME).read()")

    # ------------------------------------------------------------------ files

    def read_file(self, node: ast.AST | int, name: str) -> str:
        """A text file inside the script's folder: no symlink on the way, no ``..``, a
        regular file of at most MAX_SCRIPT_BYTES, UTF-8."""
        try:
            path = inside_root(self.folder, name)
        except WriteRefusedError as exc:
            raise self.refuse(node, f"the file {name!r} is refused ({exc.details['reason']})",
                              "a file inside the script's folder, reached without symlinks"
                              ) from None
        try:
            info = os.lstat(path)
        except OSError:
            raise self.refuse(node, f"the file {name!r} does not exist",
                              "a file inside the script's folder") from None
        if not stat.S_ISREG(info.st_mode):
            raise self.refuse(node, f"{name!r} is not a regular file", "a regular file")
        if info.st_size > MAX_SCRIPT_BYTES:
            raise self.refuse(node, f"{name!r} has {info.st_size} bytes",
                              f"at most {MAX_SCRIPT_BYTES} bytes")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_SCRIPT_BYTES + 1)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise self.refuse(node, f"{name!r} is not UTF-8 text", "UTF-8 text") from None
        self.files_read[text] = path.name
        return text


def _kind(value: Any) -> str:
    if isinstance(value, Num):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a dict"
    if isinstance(value, Array):
        return "an array"
    if isinstance(value, Function):
        return "a function"
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "a boolean"
    return type(value).__name__.lstrip("_").lower()


def assigned_names(stmt: ast.stmt) -> Iterator[str]:
    """Every name a statement may bind or change (assignment targets, subscript roots,
    the object of a method call), for statements the walker does not evaluate."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id
        elif isinstance(node, ast.Subscript | ast.Attribute) and \
                isinstance(node.ctx, ast.Store | ast.Del):
            root = _dotted_root(node)
            if root:
                yield root
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            root = _dotted_root(node.func.value)
            if root:
                yield root
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).split(".")[0]


def _dotted_root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
