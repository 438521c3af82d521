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
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.core.errors import ExpressionError

# The checker and the operation tables live in their own modules; the names other modules
# use are re-exported here so that `workbench.core.expr` stays the one public module.
from workbench.core.expr_check import FUNCTIONS as FUNCTIONS
from workbench.core.expr_check import MAX_DEPTH as MAX_DEPTH
from workbench.core.expr_check import MAX_POW_EXPONENT as MAX_POW_EXPONENT
from workbench.core.expr_check import _Compiler
from workbench.core.expr_ops import ScalarEnv as ScalarEnv
from workbench.core.expr_ops import ScalarFn as ScalarFn
from workbench.core.expr_ops import Vec as Vec
from workbench.core.expr_ops import VectorEnv as VectorEnv
from workbench.core.expr_ops import VectorFn as VectorFn

MAX_EXPRESSION_CHARS = 2000

Number = int | float | bool


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
        if isinstance(result, float) and not math.isfinite(result):
            raise ExpressionError(
                f"`{self.text}` evaluates to {result} (floating-point overflow or an undefined "
                "value); expected a finite number", text=self.text, piece=self.text)
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
