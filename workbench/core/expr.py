"""The safe expression language used by constraints, launch rules, shapes and byte counts.

An expression is parsed once with :mod:`ast` and checked against a strict whitelist; the
checked tree is turned into two sets of plain Python closures (one scalar, one over numpy
arrays). User text is never handed to ``eval``/``exec`` and no code object is ever run.

Grammar (everything else is refused with :class:`ExpressionError` naming the piece):

* literals: ``int`` (64-bit range), ``float``, ``True``/``False``; string literals only as a
  direct operand of ``==``/``!=`` (to compare a string choice parameter, ``LAYOUT == "row"``)
* names not starting with ``_`` (parameters, shape names, ``elem_bytes``, device limits)
* ``+ - * / // %``, unary ``+``/``-``; ``**`` only with a literal integer exponent 0..64 and
  a base that contains no other ``**`` (no towers)
* comparisons ``< <= > >= == !=`` (chains allowed), ``and``/``or``/``not``, ``a if c else b``
* calls to ``min, max, ceil_div, gcd, is_pow2, abs, log2`` (``log2`` is the integer floor
  log2 of a positive integer)

Semantics: ``//`` and ``%`` floor like Python; ``and``/``or``/``not`` always give booleans;
integer arithmetic is checked 64-bit (a result outside int64 is an error, so the scalar and
vectorized evaluators agree exactly); division or modulo by zero is an error.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.core.errors import ExpressionError

MAX_EXPRESSION_CHARS = 2000
MAX_DEPTH = 50
MAX_POW_EXPONENT = 64
FUNCTIONS: tuple[str, ...] = ("min", "max", "ceil_div", "gcd", "is_pow2", "abs", "log2")

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_ARITY: dict[str, tuple[int, int | None]] = {
    "min": (2, None), "max": (2, None), "ceil_div": (2, 2), "gcd": (2, 2),
    "is_pow2": (1, 1), "abs": (1, 1), "log2": (1, 1),
}
_REFUSED_NODES: dict[type, str] = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscript",
    ast.Slice: "slice",
    ast.Lambda: "lambda",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.Starred: "starred expression",
    ast.NamedExpr: "assignment expression (:=)",
    ast.List: "list display",
    ast.Tuple: "tuple display",
    ast.Set: "set display",
    ast.Dict: "dict display",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
}
_BINOPS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**",
}
_REFUSED_OPERATORS: dict[type, str] = {
    ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
    ast.MatMult: "@", ast.Invert: "~", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
    ast.NotIn: "not in",
}
_CMPOPS: dict[type, str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
}

Number = int | float | bool
ScalarEnv = Mapping[str, Any]
VectorEnv = Mapping[str, Any]
# A vectorized node returns (values, invalid) where ``invalid`` marks the points at which
# evaluation failed (division by zero, overflow, log2 of a non-positive value); None = none.
Vec = tuple[Any, Any]
ScalarFn = Callable[[ScalarEnv], Any]
VectorFn = Callable[[VectorEnv], Vec]


def _reconstruct(text: str) -> Expr:
    return parse_expr(text)


def _uncompiled_scalar(env: ScalarEnv) -> Any:
    raise AssertionError("Expr used before compilation")


def _uncompiled_vector(env: VectorEnv) -> Vec:
    raise AssertionError("Expr used before compilation")


@dataclass(frozen=True)
class Expr:
    """A parsed, checked expression. Build one with :func:`parse_expr`.

    ``names`` are the free names the expression reads; ``result_kind`` is what the
    expression statically returns: ``"bool"``, ``"number"`` or ``"unknown"`` (a bare name
    or a conditional mixing kinds).
    """

    text: str
    names: frozenset[str]
    result_kind: str = "unknown"
    _scalar: ScalarFn = field(default=_uncompiled_scalar, compare=False, repr=False)
    _vector: VectorFn = field(default=_uncompiled_vector, compare=False, repr=False)

    def __post_init__(self) -> None:
        # `Expr("a + 1", ...)` built directly (not via parse_expr) is parsed and checked here.
        if self._scalar is _uncompiled_scalar or self._vector is _uncompiled_vector:
            parsed = parse_expr(self.text)
            for name in ("names", "result_kind", "_scalar", "_vector"):
                object.__setattr__(self, name, getattr(parsed, name))

    def __reduce__(self) -> tuple[Any, ...]:
        # Closures do not pickle; re-parse from the text (workers receive templates).
        return (_reconstruct, (self.text,))

    def evaluate(self, env: Mapping[str, int | float | bool | str]) -> int | float | bool:
        """Evaluate with scalar values. Raises ExpressionError for a missing name, division
        by zero, 64-bit overflow or a type error (e.g. arithmetic on a string)."""
        result: int | float | bool = self._scalar(env)
        return result

    def evaluate_masked(self, env: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate over numpy arrays (broadcast together), returning ``(values, invalid)``.

        ``invalid`` is a boolean array marking points where scalar evaluation would have
        raised (division by zero, overflow, log2 of a non-positive number); ``values`` is
        meaningless there. Errors that concern the whole expression (a missing name, a type
        error) are raised as ExpressionError.
        """
        with np.errstate(all="ignore"):
            try:
                values, invalid = self._vector(env)
            except ExpressionError:
                raise
            except (TypeError, ValueError) as exc:  # numpy ufunc type errors
                raise ExpressionError(f"cannot evaluate `{self.text}` over arrays: {exc}",
                                      text=self.text, piece=self.text) from exc
        values = np.asarray(values)
        if invalid is None:
            invalid = np.zeros(values.shape, dtype=bool)
        else:
            invalid = np.asarray(invalid, dtype=bool)
            shape = np.broadcast_shapes(values.shape, invalid.shape)
            values = np.broadcast_to(values, shape)
            invalid = np.broadcast_to(invalid, shape)
        return values, invalid

    def evaluate_vectorized(self, env: Mapping[str, np.ndarray | int | float]) -> np.ndarray:
        """Evaluate elementwise over numpy arrays (``and``/``or``/``not`` -> ``& | ~``,
        conditionals -> ``np.where``). Raises ExpressionError if any point fails, exactly
        where :meth:`evaluate` would raise for that point."""
        values, invalid = self.evaluate_masked(env)
        if invalid.any():
            where = np.argwhere(invalid)[0]
            raise ExpressionError(
                f"`{self.text}` cannot be evaluated at {invalid.sum()} point(s) "
                f"(division by zero, 64-bit overflow or log2 of a non-positive value); "
                f"first at index {tuple(int(i) for i in where)}",
                text=self.text, piece=self.text, failed_points=int(invalid.sum()))
        return values

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Constraint:
    """A boolean expression that a configuration must satisfy, with its source text."""

    text: str
    expr: Expr
    names: frozenset[str]

    def __reduce__(self) -> tuple[Any, ...]:
        return (parse_constraint, (self.text,))

    def holds(self, env: Mapping[str, int | float | bool | str]) -> bool:
        """True when the constraint is satisfied; ExpressionError if it cannot be evaluated
        or does not produce a boolean."""
        value = self.expr.evaluate(env)
        if isinstance(value, bool | np.bool_):
            return bool(value)
        raise ExpressionError(
            f"constraint `{self.text}` evaluated to {value!r}, not a boolean",
            text=self.text, piece=self.text, value=value)

    def holds_masked(self, env: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Vectorized :meth:`holds`: ``(satisfied, invalid)`` boolean arrays."""
        values, invalid = self.expr.evaluate_masked(env)
        if values.dtype != np.bool_:
            raise ExpressionError(
                f"constraint `{self.text}` evaluated to {values.dtype} values, not booleans",
                text=self.text, piece=self.text)
        return values, invalid

    def __str__(self) -> str:
        return self.text


def parse_expr(text: str, *, known_names: Collection[str] | None = None) -> Expr:
    """Parse and check ``text``; ExpressionError names the refused piece.

    With ``known_names``, a name outside it is refused (the message lists the known ones).
    """
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be a string, got {type(text).__name__}",
                              text=repr(text), piece=repr(text))
    # Length first: the parser itself must never see a huge input.
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(
            f"expression is {len(text)} characters long; the limit is {MAX_EXPRESSION_CHARS}",
            text=text[:80] + "...", piece=f"{len(text)} characters", length=len(text))
    if not text.strip():
        raise ExpressionError("empty expression", text=text, piece=text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error in `{text}`: {exc.msg}", text=text,
                              piece=exc.text or text) from exc
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ExpressionError(f"cannot parse `{text}`: {exc}", text=text, piece=text) from exc
    compiler = _Compiler(text.strip(), text)
    compiler.prescan(tree.body)
    scalar, vector, kind = compiler.compile(tree.body, 1)
    names = frozenset(compiler.names)
    if known_names is not None:
        known = set(known_names)
        unknown = sorted(names - known)
        if unknown:
            raise ExpressionError(
                f"unknown name `{unknown[0]}` in `{text}`; known names: "
                f"{', '.join(sorted(known)) or '(none)'}",
                text=text, piece=unknown[0], known=sorted(known))
    return Expr(text=text, names=names, result_kind=kind, _scalar=scalar, _vector=vector)


def parse_constraint(text: str, *, known_names: Collection[str] | None = None) -> Constraint:
    """Parse a constraint: an expression that must produce a boolean."""
    expr = parse_expr(text, known_names=known_names)
    if expr.result_kind == "number":
        raise ExpressionError(
            f"constraint `{text}` is arithmetic, not a condition; write a comparison, "
            f"and/or/not or is_pow2(...)", text=text, piece=text)
    return Constraint(text=text, expr=expr, names=expr.names)


# --------------------------------------------------------------------------- checking


class _Compiler:
    """Checks a tree against the whitelist and builds scalar and vectorized closures."""

    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.text = text
        self.names: set[str] = set()

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or type(node).__name__

    def refuse(self, what: str, node: ast.AST, piece: str | None = None) -> ExpressionError:
        piece = piece if piece is not None else self.segment(node)
        return ExpressionError(f"{what} `{piece}` is not allowed in expressions (in `{self.text}`)",
                               text=self.text, piece=piece)

    def prescan(self, root: ast.AST) -> None:
        # Reserved names are the most telling refusal (`__import__`), so report them first.
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and node.id.startswith("_"):
                raise ExpressionError(
                    f"name `{node.id}` is not allowed: names starting with '_' are reserved "
                    f"(in `{self.text}`)", text=self.text, piece=node.id)

    def compile(self, node: ast.AST, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        if depth > MAX_DEPTH:
            raise ExpressionError(
                f"expression nesting depth exceeds {MAX_DEPTH} (in `{self.text[:80]}`)",
                text=self.text, piece=self.segment(node)[:80], max_depth=MAX_DEPTH)
        refused = _REFUSED_NODES.get(type(node))
        if refused is not None:
            raise self.refuse(refused, node)
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node, depth)
        if isinstance(node, ast.UnaryOp):
            return self.unaryop(node, depth)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node, depth)
        if isinstance(node, ast.Compare):
            return self.compare(node, depth)
        if isinstance(node, ast.IfExp):
            return self.ifexp(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        raise self.refuse(type(node).__name__, node)

    def constant(self, node: ast.Constant) -> tuple[ScalarFn, VectorFn, str]:
        value = node.value
        if isinstance(value, str):
            raise self.refuse("string literal", node)
        if isinstance(value, bytes):
            raise self.refuse("bytes literal", node)
        if isinstance(value, bool):
            kind = "bool"
        elif isinstance(value, int):
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise self.refuse("integer literal outside the 64-bit range", node)
            kind = "number"
        elif isinstance(value, float):
            kind = "number"
        else:
            raise self.refuse(f"{type(value).__name__} literal", node)
        return (lambda env: value), (lambda env: (value, None)), kind

    def string_operand(self, node: ast.AST, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            return (lambda env: value), (lambda env: (np.str_(value), None)), "string"
        return self.compile(node, depth)

    def name(self, node: ast.Name) -> tuple[ScalarFn, VectorFn, str]:
        ident = node.id
        if ident in FUNCTIONS:
            raise ExpressionError(
                f"function `{ident}` must be called, e.g. `{ident}(...)` (in `{self.text}`)",
                text=self.text, piece=ident)
        self.names.add(ident)
        text = self.text

        def missing() -> ExpressionError:
            return ExpressionError(f"name `{ident}` is not defined (in `{text}`)",
                                   text=text, piece=ident)

        def scalar(env: ScalarEnv) -> Any:
            try:
                return env[ident]
            except KeyError:
                raise missing() from None

        def vector(env: VectorEnv) -> Vec:
            try:
                return env[ident], None
            except KeyError:
                raise missing() from None

        return scalar, vector, "unknown"

    def binop(self, node: ast.BinOp, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        symbol = _BINOPS.get(type(node.op))
        if symbol is None:
            raise self.refuse(f"operator `{_op_name(node.op)}` in", node)
        if symbol == "**":
            return self.power(node, depth)
        ls, lv, _ = self.compile(node.left, depth + 1)
        rs, rv, _ = self.compile(node.right, depth + 1)
        scalar_op = _SCALAR_BINOPS[symbol]
        vector_op = _VECTOR_BINOPS[symbol]
        text = self.text

        def scalar(env: ScalarEnv) -> Any:
            return scalar_op(ls(env), rs(env), text)

        def vector(env: VectorEnv) -> Vec:
            a, ea = lv(env)
            b, eb = rv(env)
            value, err = vector_op(a, b, text)
            return value, _or(_or(ea, eb), err)

        return scalar, vector, "number"

    def power(self, node: ast.BinOp, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        exponent = node.right
        if not (isinstance(exponent, ast.Constant) and type(exponent.value) is int
                and 0 <= exponent.value <= MAX_POW_EXPONENT):
            raise ExpressionError(
                f"exponent `{self.segment(exponent)}` is not allowed: `**` needs a literal "
                f"integer exponent between 0 and {MAX_POW_EXPONENT} (in `{self.text}`)",
                text=self.text, piece=self.segment(exponent))
        for sub in ast.walk(node.left):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Pow):
                raise ExpressionError(
                    f"exponent tower `{self.segment(node)}` is not allowed (in `{self.text}`)",
                    text=self.text, piece=self.segment(node))
        k: int = exponent.value
        bs, bv, _ = self.compile(node.left, depth + 1)
        text = self.text

        def scalar(env: ScalarEnv) -> Any:
            return _scalar_pow(bs(env), k, text)

        def vector(env: VectorEnv) -> Vec:
            base, err = bv(env)
            value, err2 = _vector_pow(base, k, text)
            return value, _or(err, err2)

        return scalar, vector, "number"

    def unaryop(self, node: ast.UnaryOp, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        os_, ov, _ = self.compile(node.operand, depth + 1)
        text = self.text
        if isinstance(node.op, ast.Not):
            return ((lambda env: not _truth(os_(env), text)),
                    (lambda env: _vmap(ov(env), lambda v: ~_vtruth(v, text))), "bool")
        if isinstance(node.op, ast.USub):
            return ((lambda env: _scalar_binop_sub(0, os_(env), text)),
                    (lambda env: _vbin(_vector_sub, (0, None), ov(env), text)), "number")
        if isinstance(node.op, ast.UAdd):
            return ((lambda env: _scalar_pos(os_(env), text)),
                    (lambda env: _vmap(ov(env), lambda v: _vnum(v, "+", text))), "number")
        raise self.refuse(f"operator `{_op_name(node.op)}` in", node)

    def boolop(self, node: ast.BoolOp, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        parts = [self.compile(v, depth + 1) for v in node.values]
        scalars = [p[0] for p in parts]
        vectors = [p[1] for p in parts]
        text = self.text
        is_and = isinstance(node.op, ast.And)

        def scalar(env: ScalarEnv) -> bool:
            for fn in scalars:
                truth = _truth(fn(env), text)
                if truth != is_and:  # short-circuit exactly like Python
                    return truth
            return is_and

        def vector(env: VectorEnv) -> Vec:
            # `pending` marks points whose result is not decided yet; only there can a later
            # operand's failure matter (short-circuit semantics).
            result: Any = np.bool_(is_and)
            pending: Any = np.bool_(True)
            invalid: Any = None
            for fn in vectors:
                value, err = fn(env)
                truth = _vtruth(value, text)
                if err is not None:
                    invalid = _or(invalid, pending & err)
                if is_and:
                    result = result & truth
                    pending = pending & truth
                else:
                    result = result | truth
                    pending = pending & ~truth
            return result, invalid

        return scalar, vector, "bool"

    def compare(self, node: ast.Compare, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        symbols: list[str] = []
        for op in node.ops:
            symbol = _CMPOPS.get(type(op))
            if symbol is None:
                raise self.refuse(f"comparison operator `{_op_name(op)}` in", node)
            symbols.append(symbol)
        operands = [node.left, *node.comparators]
        strings_ok = [all(s in ("==", "!=") for s in symbols)] * len(operands)
        parts = []
        for operand, ok in zip(operands, strings_ok, strict=True):
            parts.append(self.string_operand(operand, depth + 1) if ok
                         else self.compile(operand, depth + 1))
        scalars = [p[0] for p in parts]
        vectors = [p[1] for p in parts]
        text = self.text

        def scalar(env: ScalarEnv) -> bool:
            left = scalars[0](env)
            for symbol, fn in zip(symbols, scalars[1:], strict=True):
                right = fn(env)
                if not _scalar_compare(symbol, left, right, text):
                    return False
                left = right
            return True

        def vector(env: VectorEnv) -> Vec:
            left, invalid = vectors[0](env)
            result: Any = np.bool_(True)
            for symbol, fn in zip(symbols, vectors[1:], strict=True):
                right, err = fn(env)
                # A failing operand only matters where the chain has not already failed.
                if err is not None:
                    invalid = _or(invalid, result & err)
                result = result & _vector_compare(symbol, left, right, text)
                left = right
            return result, invalid

        return scalar, vector, "bool"

    def ifexp(self, node: ast.IfExp, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        cs, cv, _ = self.compile(node.test, depth + 1)
        ys, yv, ykind = self.compile(node.body, depth + 1)
        ns, nv, nkind = self.compile(node.orelse, depth + 1)
        text = self.text

        def scalar(env: ScalarEnv) -> Any:
            return ys(env) if _truth(cs(env), text) else ns(env)

        def vector(env: VectorEnv) -> Vec:
            cond, ec = cv(env)
            truth = _vtruth(cond, text)
            yes, ey = yv(env)
            no, en = nv(env)
            invalid = ec
            if ey is not None:
                invalid = _or(invalid, truth & ey)
            if en is not None:
                invalid = _or(invalid, ~truth & en)
            return np.where(truth, yes, no), invalid

        return scalar, vector, ykind if ykind == nkind else "unknown"

    def call(self, node: ast.Call, depth: int) -> tuple[ScalarFn, VectorFn, str]:
        if not isinstance(node.func, ast.Name):
            # e.g. `__import__('os').system(...)`: refuse the callee (attribute access, ...).
            self.compile(node.func, depth + 1)
            raise self.refuse("call of", node, self.segment(node.func))
        fname = node.func.id
        if fname not in FUNCTIONS:
            raise ExpressionError(
                f"call to {fname} `{self.segment(node)}` is not allowed; allowed functions: "
                f"{', '.join(FUNCTIONS)} (in `{self.text}`)", text=self.text, piece=fname)
        if node.keywords:
            raise self.refuse("keyword argument", node.keywords[0])
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.refuse("starred expression", arg)
        low, high = _ARITY[fname]
        count = len(node.args)
        if count < low or (high is not None and count > high):
            expected = f"{low}" if low == high else f"at least {low}"
            raise ExpressionError(
                f"{fname}() takes {expected} argument(s), got {count}: `{self.segment(node)}`",
                text=self.text, piece=self.segment(node))
        parts = [self.compile(a, depth + 1) for a in node.args]
        scalars = [p[0] for p in parts]
        vectors = [p[1] for p in parts]
        scalar_fn = _SCALAR_FUNCS[fname]
        vector_fn = _VECTOR_FUNCS[fname]
        text = self.text

        def scalar(env: ScalarEnv) -> Any:
            return scalar_fn([fn(env) for fn in scalars], text)

        def vector(env: VectorEnv) -> Vec:
            values = []
            invalid: Any = None
            for fn in vectors:
                value, err = fn(env)
                values.append(value)
                invalid = _or(invalid, err)
            value, err = vector_fn(values, text)
            return value, _or(invalid, err)

        return scalar, vector, "bool" if fname == "is_pow2" else "number"


def _op_name(op: ast.AST) -> str:
    return _REFUSED_OPERATORS.get(type(op), type(op).__name__)


# --------------------------------------------------------------------------- scalar ops


def _fail(text: str, message: str, **details: Any) -> ExpressionError:
    return ExpressionError(f"{message} (in `{text}`)", text=text, piece=text, **details)


def _num(value: Any, op: str, text: str) -> Any:
    if isinstance(value, str | np.str_):
        raise _fail(text, f"string value {value!r} used with `{op}`")
    if isinstance(value, bool | int | float | np.integer | np.floating | np.bool_):
        return value
    raise _fail(text, f"value {value!r} of type {type(value).__name__} used with `{op}`")


def _checked_int(value: Any, text: str) -> Any:
    if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:
        raise _fail(text, "integer result outside the 64-bit range")
    return value


def _is_intlike(value: Any) -> bool:
    return isinstance(value, int | np.integer | np.bool_) and not isinstance(value, float)


def _scalar_add(a: Any, b: Any, text: str) -> Any:
    return _checked_int(_pyint(_num(a, "+", text)) + _pyint(_num(b, "+", text)), text)


def _scalar_binop_sub(a: Any, b: Any, text: str) -> Any:
    return _checked_int(_pyint(_num(a, "-", text)) - _pyint(_num(b, "-", text)), text)


def _scalar_mul(a: Any, b: Any, text: str) -> Any:
    return _checked_int(_pyint(_num(a, "*", text)) * _pyint(_num(b, "*", text)), text)


def _pyint(value: Any) -> Any:
    """numpy integers/bools -> Python int so that checks see the exact value."""
    if isinstance(value, np.integer | np.bool_):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _scalar_div(a: Any, b: Any, text: str) -> Any:
    a, b = _pyint(_num(a, "/", text)), _pyint(_num(b, "/", text))
    if b == 0:
        raise _fail(text, "division by zero")
    return a / b


def _scalar_floordiv(a: Any, b: Any, text: str) -> Any:
    a, b = _pyint(_num(a, "//", text)), _pyint(_num(b, "//", text))
    if b == 0:
        raise _fail(text, "division by zero")
    return _checked_int(a // b, text)


def _scalar_mod(a: Any, b: Any, text: str) -> Any:
    a, b = _pyint(_num(a, "%", text)), _pyint(_num(b, "%", text))
    if b == 0:
        raise _fail(text, "modulo by zero")
    return a % b


def _scalar_pos(a: Any, text: str) -> Any:
    return +_pyint(_num(a, "+", text))


def _scalar_pow(base: Any, k: int, text: str) -> Any:
    base = _pyint(_num(base, "**", text))
    if isinstance(base, float):
        try:
            return base**k
        except OverflowError:
            return math.copysign(math.inf, base) if k % 2 else math.inf
    # Refuse before computing: |base|**k must stay within 64 bits.
    if abs(base) > 1 and (abs(base).bit_length() - 1) * k > 64:
        raise _fail(text, "integer result outside the 64-bit range")
    return _checked_int(base**k, text)


_SCALAR_BINOPS: dict[str, Callable[[Any, Any, str], Any]] = {
    "+": _scalar_add, "-": _scalar_binop_sub, "*": _scalar_mul, "/": _scalar_div,
    "//": _scalar_floordiv, "%": _scalar_mod,
}


def _truth(value: Any, text: str) -> bool:
    if isinstance(value, str | np.str_):
        raise _fail(text, f"string value {value!r} used as a condition")
    return bool(value)


def _scalar_compare(symbol: str, a: Any, b: Any, text: str) -> bool:
    a_str, b_str = isinstance(a, str | np.str_), isinstance(b, str | np.str_)
    if symbol == "==":
        return bool(a == b) if a_str == b_str else False
    if symbol == "!=":
        return bool(a != b) if a_str == b_str else True
    if a_str or b_str:
        raise _fail(text, f"strings cannot be ordered with `{symbol}`")
    a, b = _pyint(a), _pyint(b)
    if symbol == "<":
        return bool(a < b)
    if symbol == "<=":
        return bool(a <= b)
    if symbol == ">":
        return bool(a > b)
    return bool(a >= b)


def _require_ints(args: list[Any], fname: str, text: str) -> list[int]:
    out = []
    for value in args:
        value = _pyint(_num(value, fname, text))
        if not isinstance(value, int):
            raise _fail(text, f"{fname}() needs integers, got {value!r}")
        out.append(value)
    return out


def _s_min(args: list[Any], text: str) -> Any:
    return min(_pyint(_num(a, "min", text)) for a in args)


def _s_max(args: list[Any], text: str) -> Any:
    return max(_pyint(_num(a, "max", text)) for a in args)


def _s_ceil_div(args: list[Any], text: str) -> Any:
    a, b = (_pyint(_num(v, "ceil_div", text)) for v in args)
    if b == 0:
        raise _fail(text, "division by zero in ceil_div")
    return _checked_int(-(-a // b), text)


def _s_gcd(args: list[Any], text: str) -> Any:
    a, b = _require_ints(args, "gcd", text)
    return _checked_int(math.gcd(a, b), text)


def _s_is_pow2(args: list[Any], text: str) -> Any:
    (x,) = _require_ints(args, "is_pow2", text)
    return x > 0 and x & (x - 1) == 0


def _s_abs(args: list[Any], text: str) -> Any:
    return _checked_int(abs(_pyint(_num(args[0], "abs", text))), text)


def _s_log2(args: list[Any], text: str) -> Any:
    (x,) = _require_ints(args, "log2", text)
    if x <= 0:
        raise _fail(text, f"log2 of non-positive value {x}")
    return x.bit_length() - 1


_SCALAR_FUNCS: dict[str, Callable[[list[Any], str], Any]] = {
    "min": _s_min, "max": _s_max, "ceil_div": _s_ceil_div, "gcd": _s_gcd,
    "is_pow2": _s_is_pow2, "abs": _s_abs, "log2": _s_log2,
}


# --------------------------------------------------------------------------- vector ops


def _or(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def _vmap(pair: Vec, fn: Callable[[Any], Any]) -> Vec:
    value, err = pair
    return fn(value), err


def _vbin(op: Callable[[Any, Any, str], Vec], a: Vec, b: Vec, text: str) -> Vec:
    value, err = op(a[0], b[0], text)
    return value, _or(_or(a[1], b[1]), err)


def _vnum(value: Any, op: str, text: str) -> Any:
    """Arithmetic view of an operand: bools become int64 (True + True == 2, like Python)."""
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "b":
        return arr.astype(np.int64)
    if kind in "iu":
        return arr.astype(np.int64, copy=False)
    if kind == "f":
        return arr.astype(np.float64, copy=False)
    if kind in "US":
        raise _fail(text, f"string values used with `{op}`")
    raise _fail(text, f"values of dtype {arr.dtype} used with `{op}`")


def _vtruth(value: Any, text: str) -> Any:
    arr = np.asarray(value)
    if arr.dtype.kind == "b":
        return arr
    if arr.dtype.kind in "US":
        raise _fail(text, "string values used as a condition")
    return arr != 0


def _is_int_arr(arr: np.ndarray) -> bool:
    return bool(arr.dtype.kind in "iu")


def _vector_add(a: Any, b: Any, text: str) -> Vec:
    x, y = _vnum(a, "+", text), _vnum(b, "+", text)
    r = x + y
    if _is_int_arr(r):
        # Two's-complement overflow: both operands differ in sign from the result.
        return r, ((x ^ r) & (y ^ r)) < 0
    return r, None


def _vector_sub(a: Any, b: Any, text: str) -> Vec:
    x, y = _vnum(a, "-", text), _vnum(b, "-", text)
    r = x - y
    if _is_int_arr(r):
        return r, ((x ^ y) & (x ^ r)) < 0
    return r, None


def _checked_mul(x: np.ndarray, y: np.ndarray) -> Vec:
    r = x * y
    if not _is_int_arr(r):
        return r, None
    safe_x = np.where(x == 0, 1, x)
    # If r wrapped, r // x cannot equal y (|r - x*y| is a non-zero multiple of 2**64).
    overflow = (x != 0) & ((r // safe_x != y) | ((x == -1) & (y == _INT64_MIN)))
    return r, overflow


def _vector_mul(a: Any, b: Any, text: str) -> Vec:
    return _checked_mul(_vnum(a, "*", text), _vnum(b, "*", text))


def _vector_div(a: Any, b: Any, text: str) -> Vec:
    x, y = _vnum(a, "/", text), _vnum(b, "/", text)
    zero = y == 0
    return np.true_divide(x, np.where(zero, 1, y)), zero


def _vector_floordiv(a: Any, b: Any, text: str) -> Vec:
    x, y = _vnum(a, "//", text), _vnum(b, "//", text)
    zero = y == 0
    r = np.floor_divide(x, np.where(zero, 1, y))
    if _is_int_arr(r):
        return r, zero | ((x == _INT64_MIN) & (y == -1))
    return r, zero


def _vector_mod(a: Any, b: Any, text: str) -> Vec:
    x, y = _vnum(a, "%", text), _vnum(b, "%", text)
    zero = y == 0
    return np.remainder(x, np.where(zero, 1, y)), zero


_VECTOR_BINOPS: dict[str, Callable[[Any, Any, str], Vec]] = {
    "+": _vector_add, "-": _vector_sub, "*": _vector_mul, "/": _vector_div,
    "//": _vector_floordiv, "%": _vector_mod,
}


def _vector_pow(base: Any, k: int, text: str) -> Vec:
    x = _vnum(base, "**", text)
    if not _is_int_arr(x):
        return np.power(x, k), None
    # Square-and-multiply with checked products. Every square computed is a factor of the
    # final power (the last, unneeded squaring is skipped), so a wrap is flagged exactly
    # when the true result leaves int64.
    result: Any = np.ones_like(x)
    invalid: Any = np.zeros(x.shape, dtype=bool)
    square: Any = x
    while k:
        if k & 1:
            result, err = _checked_mul(result, square)
            invalid = invalid | err
        k >>= 1
        if k:
            square, err = _checked_mul(square, square)
            invalid = invalid | err
    return result, invalid


def _vector_compare(symbol: str, a: Any, b: Any, text: str) -> Any:
    x, y = np.asarray(a), np.asarray(b)
    x_str, y_str = x.dtype.kind in "US", y.dtype.kind in "US"
    if x_str != y_str:
        if symbol in ("==", "!="):
            shape = np.broadcast_shapes(x.shape, y.shape)
            return np.full(shape, symbol == "!=")
        raise _fail(text, f"strings cannot be ordered with `{symbol}`")
    if x_str and symbol not in ("==", "!="):
        raise _fail(text, f"strings cannot be ordered with `{symbol}`")
    if not x_str:
        x, y = _vnum(x, symbol, text), _vnum(y, symbol, text)
    if symbol == "<":
        return x < y
    if symbol == "<=":
        return x <= y
    if symbol == ">":
        return x > y
    if symbol == ">=":
        return x >= y
    if symbol == "==":
        return x == y
    return x != y


def _v_ints(values: list[Any], fname: str, text: str) -> list[np.ndarray]:
    out = []
    for value in values:
        arr = _vnum(value, fname, text)
        if not _is_int_arr(arr):
            raise _fail(text, f"{fname}() needs integers, got {arr.dtype} values")
        out.append(arr)
    return out


def _v_min(values: list[Any], text: str) -> Vec:
    arrays = [_vnum(v, "min", text) for v in values]
    result = arrays[0]
    for arr in arrays[1:]:
        result = np.minimum(result, arr)
    return result, None


def _v_max(values: list[Any], text: str) -> Vec:
    arrays = [_vnum(v, "max", text) for v in values]
    result = arrays[0]
    for arr in arrays[1:]:
        result = np.maximum(result, arr)
    return result, None


def _v_ceil_div(values: list[Any], text: str) -> Vec:
    x, y = (_vnum(v, "ceil_div", text) for v in values)
    zero = y == 0
    safe = np.where(zero, 1, y)
    if _is_int_arr(x) and _is_int_arr(y):
        # -(-a // b) without negating a (which overflows at INT64_MIN).
        q = np.floor_divide(x, safe)
        r = np.remainder(x, safe)
        return q + (r != 0), zero | ((x == _INT64_MIN) & (y == -1))
    return -np.floor_divide(-x, safe), zero


def _v_gcd(values: list[Any], text: str) -> Vec:
    x, y = _v_ints(values, "gcd", text)
    r = np.gcd(x, y)
    return r, r < 0  # gcd(INT64_MIN, 0) does not fit


def _v_is_pow2(values: list[Any], text: str) -> Vec:
    (x,) = _v_ints(values, "is_pow2", text)
    return (x > 0) & ((x & (x - 1)) == 0), None


def _v_abs(values: list[Any], text: str) -> Vec:
    x = _vnum(values[0], "abs", text)
    r = np.abs(x)
    return r, (r < 0) if _is_int_arr(r) else None


def _v_log2(values: list[Any], text: str) -> Vec:
    (x,) = _v_ints(values, "log2", text)
    invalid = x <= 0
    rest = np.where(invalid, 1, x)
    result = np.zeros(rest.shape, dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):  # exact binary search on the highest set bit
        big = rest >= (np.int64(1) << shift)
        rest = np.where(big, rest >> shift, rest)
        result = result + np.where(big, shift, 0)
    return result, invalid


_VECTOR_FUNCS: dict[str, Callable[[list[Any], str], Vec]] = {
    "min": _v_min, "max": _v_max, "ceil_div": _v_ceil_div, "gcd": _v_gcd,
    "is_pow2": _v_is_pow2, "abs": _v_abs, "log2": _v_log2,
}
