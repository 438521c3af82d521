"""The AST whitelist of the expression language and its compiler to closures.

:class:`_Compiler` walks a tree from :func:`ast.parse`, refuses every node, operator, name
and call outside the grammar described in :mod:`workbench.core.expr` (the error names the
refused piece), and builds a scalar and a vectorized closure from the operation tables in
:mod:`workbench.core.expr_ops`.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from workbench.core.errors import ExpressionError
from workbench.core.expr_ops import (
    _INT64_MAX,
    _INT64_MIN,
    _SCALAR_BINOPS,
    _SCALAR_FUNCS,
    _VECTOR_BINOPS,
    _VECTOR_FUNCS,
    ScalarEnv,
    ScalarFn,
    Vec,
    VectorEnv,
    VectorFn,
    _or,
    _scalar_binop_sub,
    _scalar_compare,
    _scalar_pos,
    _scalar_pow,
    _truth,
    _vbin,
    _vector_compare,
    _vector_pow,
    _vector_sub,
    _vmap,
    _vnum,
    _vtruth,
)

MAX_DEPTH = 50
MAX_POW_EXPONENT = 64
FUNCTIONS: tuple[str, ...] = ("min", "max", "ceil_div", "gcd", "is_pow2", "abs", "log2")

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

