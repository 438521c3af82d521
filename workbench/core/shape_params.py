"""Shape-aware ranges: parameter bounds and choices written as expressions of the problem's
sizes and the device, resolved for each (shape, dtype, device).

In kernel.toml a range bound or a choice entry may be a string in the safe expression
language instead of a number::

    [template.params.ROW_SPLIT]      # blocks sharing one row: up to ~2 waves of blocks
    kind = "pow2"
    min = 1
    max = "max(8, ceil_div(2 * num_sms, tokens))"

    [template.params.HIDDEN_CONST]   # compile the row length in: offer the shape's own
    kind = "choice"
    values = [0, "hidden"]

A power-of-two bound is rounded into the range (the maximum down, the minimum up to a power
of two); an integer bound onto the range's step. The template keeps a static parameter for
display and for checks that have no shape (the hull of the named shapes' resolved ranges);
:meth:`ShapeBounds.resolve` gives the exact parameter of one problem, which the search space
and the runner use.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from workbench.core.errors import ExpressionError, ParameterError
from workbench.core.expr import Expr, parse_expr
from workbench.core.params import Choice, IntRange, Parameter, Pow2Range
from workbench.core.records import Value


@dataclass(frozen=True)
class ShapeBounds:
    """The expression parts of one parameter (``None`` / empty: the static value holds)."""

    name: str
    min: Expr | None = None
    max: Expr | None = None
    values: tuple[Expr | Value, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The expression parts as written (what an approval covers beside the hull)."""
        out: dict[str, Any] = {}
        if self.min is not None:
            out["min"] = self.min.text
        if self.max is not None:
            out["max"] = self.max.text
        if self.values:
            out["values"] = [v.text if isinstance(v, Expr) else v for v in self.values]
        return out

    def resolve(self, param: Parameter, env: Mapping[str, Any]) -> Parameter:
        """``param`` with its expression parts evaluated in ``env`` (sizes, elem_bytes,
        device limits). Refuses (ParameterError naming the expression) a bound that does not
        evaluate to a positive integer."""
        if isinstance(param, Pow2Range):
            lo = _pow2_up(self._int(self.min, env, "min")) if self.min is not None \
                else param.min
            hi = _pow2_down(self._int(self.max, env, "max")) if self.max is not None \
                else param.max
            hi = max(hi, lo)
            return replace(param, min=lo, max=hi, default=min(max(param.default, lo), hi))
        if isinstance(param, IntRange):
            lo = self._int(self.min, env, "min") if self.min is not None else param.min
            hi = self._int(self.max, env, "max") if self.max is not None else param.max
            hi = max(lo, lo + (hi - lo) // param.step * param.step)
            return replace(param, min=lo, max=hi, default=min(max(param.default, lo), hi))
        if isinstance(param, Choice) and self.values:
            values: list[Value] = []
            for i, v in enumerate(self.values):
                got = self._int(v, env, f"values[{i}]") if isinstance(v, Expr) else v
                if got not in values:
                    values.append(got)
            if param.default not in values:
                values.insert(0, param.default)
            return replace(param, values_=tuple(values))
        return param

    def _int(self, expr: Expr, env: Mapping[str, Any], part: str) -> int:
        """``expr`` (the ``part`` of this parameter: min, max, values[i]) evaluated; a
        ParameterError's ``key`` is ``NAME.part``, the kernel.toml key under
        ``template.params`` that holds it."""
        key = f"{self.name}.{part}"
        try:
            value = expr.evaluate(env)
        except ExpressionError as exc:
            raise ParameterError(f"parameter {self.name}: {part} = {expr} cannot be evaluated "
                                 f"here ({exc.message})", key=key, value=str(expr),
                                 expected="an expression of the shape's sizes and the device"
                                 ) from exc
        if isinstance(value, bool) or not float(value).is_integer() or value < 0:
            raise ParameterError(f"parameter {self.name}: {part} = {expr} = {value!r}; "
                                 f"expected an integer >= 0", key=key, value=str(expr),
                                 expected="an integer >= 0")
        return int(value)


def _pow2_down(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def _pow2_up(n: int) -> int:
    return 1 << (max(n, 1) - 1).bit_length()


def split_shape_bounds(name: str, data: Mapping[str, Any], known_names: Collection[str],
                       ) -> tuple[dict[str, Any], ShapeBounds | None]:
    """A parameter table from kernel.toml split into a static table (string bounds replaced
    by placeholders: 1 for pow2/int, the static choice entries only) and its ShapeBounds
    (None when nothing is an expression). Expressions are parsed by the safe parser with
    ``known_names`` (sizes, elem_bytes, device limits); a refused one is a ParameterError."""
    def parse(text: str, key: str) -> Expr:
        try:
            return parse_expr(text, known_names=known_names)
        except ExpressionError as exc:
            raise ParameterError(f"parameter {name}: {key} = {text!r} is not a valid "
                                 f"expression ({exc.message})", key=key, value=text,
                                 expected="an expression of sizes, elem_bytes and device "
                                          "limits") from exc

    static = dict(data)
    kind = data.get("kind")
    found: dict[str, Any] = {}
    if kind in ("pow2", "int"):
        for key in ("min", "max"):
            if isinstance(data.get(key), str):
                found[key] = parse(data[key], key)
                static[key] = 1
        if found and "default" not in data:
            static["default"] = 1
    elif kind == "choice" and isinstance(data.get("values"), list) and any(
            isinstance(v, str) for v in data["values"]):
        values = tuple(parse(v, "values") if isinstance(v, str) else v for v in data["values"])
        found["values"] = values
        static["values"] = [v for v in data["values"] if not isinstance(v, str)] or \
            [data.get("default", 0)]
    if not found:
        return static, None
    return static, ShapeBounds(name=name, **found)


def accepting(param: Parameter, bound: ShapeBounds, value: Value) -> Parameter:
    """``param`` opened where ``bound`` has expressions, so that a value one shape resolves
    to validates outside the folder's hull (a compiled-in size of a shape the kernel.toml
    does not name). Only the value's kind is checked here; the space at that shape, which
    every searched config comes from, holds the exact range."""
    if isinstance(param, Pow2Range):
        return replace(param, min=1 if bound.min is not None else param.min,
                       max=max(param.max, 2 ** 30) if bound.max is not None else param.max)
    if isinstance(param, IntRange) and isinstance(value, int) and not isinstance(value, bool):
        lo = min(param.min, value) if bound.min is not None else param.min
        hi = max(param.max, value) if bound.max is not None else param.max
        return replace(param, min=lo, max=hi) if (value - lo) % param.step == 0 else param
    if (isinstance(param, Choice) and any(isinstance(v, Expr) for v in bound.values)
            and isinstance(value, int) and not isinstance(value, bool)
            and value not in param.values()):
        return replace(param, values_=(*param.values_, value))
    return param


def resolve_params(params: Sequence[Parameter], bounds: Sequence[ShapeBounds],
                   env: Mapping[str, Any]) -> tuple[Parameter, ...]:
    """``params`` with every shape-aware one resolved in ``env``."""
    by = {b.name: b for b in bounds}
    return tuple(by[p.name].resolve(p, env) if p.name in by else p for p in params)


def hull(param: Parameter, bound: ShapeBounds, envs: Sequence[Mapping[str, Any]]) -> Parameter:
    """The smallest static parameter containing ``bound`` resolved in every env: the widest
    range, or every choice any shape offers (what a check without a shape accepts)."""
    resolved = [bound.resolve(param, env) for env in envs]
    if not resolved:
        return param
    if isinstance(param, Pow2Range | IntRange):
        lo = min(r.min for r in resolved)  # type: ignore[attr-defined]
        hi = max(r.max for r in resolved)  # type: ignore[attr-defined]
        return replace(param, min=lo, max=hi, default=min(max(param.default, lo), hi))
    if isinstance(param, Choice):
        values: list[Value] = []
        for r in resolved:
            for v in r.values():
                if v not in values:
                    values.append(v)
        return replace(param, values_=tuple(values))
    return param
