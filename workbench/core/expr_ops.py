"""Scalar and vectorized operation tables for the expression language.

Each operator and function of :mod:`workbench.core.expr` has two implementations here: a
scalar one over Python/numpy scalars and a vectorized one over numpy arrays that returns
``(values, invalid)``. They are kept side by side so that both agree exactly: integer
arithmetic is checked 64-bit, and a point where the scalar version raises (division by
zero, overflow, log2 of a non-positive value) is marked invalid by the vectorized one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from workbench.core.errors import ExpressionError

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

ScalarEnv = Mapping[str, Any]
VectorEnv = Mapping[str, Any]
# A vectorized node returns (values, invalid) where ``invalid`` marks the points at which
# evaluation failed (division by zero, overflow, log2 of a non-positive value); None = none.
Vec = tuple[Any, Any]
ScalarFn = Callable[[ScalarEnv], Any]
VectorFn = Callable[[VectorEnv], Vec]


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
