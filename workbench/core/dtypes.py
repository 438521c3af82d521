"""Element dtypes: their sizes, CUDA type names, and exact host-side rounding.

Host arrays are float32. Before upload (and before calling a kernel folder's reference) they
are rounded to the element dtype with :func:`quantize`, so the reference sees exactly the
values the kernel sees. bf16 rounding is done with integer bit arithmetic (round to nearest,
ties to even), so no extra library is needed; fp16 uses numpy's ``float16`` (also
round-to-nearest-even).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from workbench.core.errors import ParameterError

__all__ = [
    "ARG_DTYPES",
    "CUDA_TYPES",
    "DTYPES",
    "ELEM_BYTES",
    "INTEGER_DTYPES",
    "NUMPY_DEVICE_DTYPES",
    "UnknownDtypeError",
    "arg_storage",
    "check_dtype",
    "decode_arg",
    "encode_arg",
    "from_device_bits",
    "is_integer_dtype",
    "quantize",
    "round_to_arg",
    "to_device_bits",
]

DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32")
ELEM_BYTES: MappingProxyType[str, int] = MappingProxyType({"bf16": 2, "fp16": 2, "fp32": 4})
CUDA_TYPES: MappingProxyType[str, str] = MappingProxyType(
    {"bf16": "__nv_bfloat16", "fp16": "__half", "fp32": "float"})
# Host-side numpy dtype of the device buffer: the raw 16-bit patterns for bf16/fp16.
NUMPY_DEVICE_DTYPES: MappingProxyType[str, np.dtype[Any]] = MappingProxyType({
    "bf16": np.dtype(np.uint16), "fp16": np.dtype(np.uint16), "fp32": np.dtype(np.float32)})

_BF16_QUIET_BIT = np.uint32(0x00400000)
_HIGH_HALF = np.uint32(0xFFFF0000)


class UnknownDtypeError(ParameterError):
    """An element dtype name outside :data:`DTYPES`; ``choices`` lists the allowed ones."""

    def __init__(self, name: object) -> None:
        super().__init__(f"unknown element dtype {name!r}; choose one of: {', '.join(DTYPES)}",
                         name="dtype", key="dtype", value=name, expected=list(DTYPES))
        self.choices = DTYPES


def check_dtype(name: object) -> str:
    """Return ``name`` if it is a supported element dtype, else raise UnknownDtypeError."""
    if not isinstance(name, str) or name not in ELEM_BYTES:
        raise UnknownDtypeError(name)
    return name


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> the upper 16 bits of the nearest bf16 (ties to even), as uint32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    with np.errstate(over="ignore"):
        # Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even; a carry
        # into the exponent is correct (it rounds up to the next binade or to infinity).
        lsb = (bits >> np.uint32(16)) & np.uint32(1)
        rounded = (bits + np.uint32(0x7FFF) + lsb) & _HIGH_HALF
    # NaN: keep sign and a quiet NaN (plain truncation could turn a NaN into infinity).
    nan = np.isnan(x)
    return np.where(nan, (bits & _HIGH_HALF) | _BF16_QUIET_BIT, rounded) >> np.uint32(16)


def quantize(x: npt.ArrayLike, dtype: str) -> np.ndarray:
    """float32 copy of ``x`` holding the nearest values representable in ``dtype``
    (round to nearest, ties to even; NaN and infinities preserved; overflow -> inf)."""
    check_dtype(dtype)
    arr = np.asarray(x)
    if dtype == "fp32":
        return arr.astype(np.float32)
    if dtype == "fp16":
        with np.errstate(over="ignore"):  # overflow to +-inf is the correct rounding
            return arr.astype(np.float16).astype(np.float32)
    # bf16: from float32 (a float64 input is rounded to float32 first).
    bits = _bf16_bits(arr.astype(np.float32))
    return (bits << np.uint32(16)).astype(np.uint32).view(np.float32).reshape(arr.shape)


def to_device_bits(x: npt.ArrayLike, dtype: str) -> np.ndarray:
    """What goes into the device buffer: uint16 bit patterns for bf16/fp16, float32 for fp32.
    Values are rounded as by :func:`quantize`."""
    check_dtype(dtype)
    arr = np.asarray(x)
    if dtype == "fp32":
        return np.ascontiguousarray(arr, dtype=np.float32)
    if dtype == "fp16":
        with np.errstate(over="ignore"):
            return arr.astype(np.float16).view(np.uint16)
    return _bf16_bits(arr.astype(np.float32)).astype(np.uint16).reshape(arr.shape)


def from_device_bits(bits: npt.ArrayLike, dtype: str) -> np.ndarray:
    """Inverse of :func:`to_device_bits`: device buffer contents back to float32."""
    check_dtype(dtype)
    arr = np.asarray(bits)
    expected = NUMPY_DEVICE_DTYPES[dtype]
    if arr.dtype != expected:
        raise ParameterError(
            f"{dtype} device data must be {expected}, got {arr.dtype}",
            name="dtype", key="bits", value=str(arr.dtype), expected=str(expected))
    if dtype == "fp32":
        return arr.astype(np.float32)
    if dtype == "fp16":
        return arr.view(np.float16).astype(np.float32)
    return (arr.astype(np.uint32) << np.uint32(16)).view(np.float32)


# ---- argument dtypes ------------------------------------------------------------------------
# What a kernel.toml [[args]] entry may name: "T" (the element dtype, one of DTYPES), integer
# types, f32, and the 16/8-bit float types. Integers travel and are compared as integers,
# never through float32; the float types are rounded on the host exactly as the device
# conversion does (round to nearest even; fp8 saturates to the largest finite value, the
# behaviour of CUDA's __nv_fp8_e4m3 / __nv_fp8_e5m2 constructors).

INTEGER_DTYPES: MappingProxyType[str, np.dtype[Any]] = MappingProxyType({
    "i8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "i16": np.dtype(np.int16),
    "u16": np.dtype(np.uint16), "i32": np.dtype(np.int32), "u32": np.dtype(np.uint32),
    "i64": np.dtype(np.int64)})
_FLOAT_ARG_DTYPES = ("f32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")
ARG_DTYPES: tuple[str, ...] = ("T", *INTEGER_DTYPES, *_FLOAT_ARG_DTYPES)


def _fp8_values(exp_bits: int, man_bits: int, finite_only_max: bool) -> np.ndarray:
    """float32 value of each of the 256 codes (NaN for NaN codes, inf for e5m2's inf)."""
    codes = np.arange(256, dtype=np.uint32)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp = (codes >> man_bits) & ((1 << exp_bits) - 1)
    man = codes & ((1 << man_bits) - 1)
    bias = (1 << (exp_bits - 1)) - 1
    val = np.where(exp == 0, man / (1 << man_bits) * 2.0 ** (1 - bias),
                   (1 + man / (1 << man_bits)) * 2.0 ** (exp.astype(np.int64) - bias))
    val = sign * val
    top = exp == (1 << exp_bits) - 1
    if finite_only_max:  # e4m3 ("fn"): only S.1111.111 is NaN, no infinities
        val = np.where(top & (man == (1 << man_bits) - 1), np.nan, val)
    else:  # e5m2: IEEE-like
        val = np.where(top & (man == 0), sign * np.inf, np.where(top, np.nan, val))
    return val.astype(np.float32)


_FP8_TABLES = {"fp8_e4m3": _fp8_values(4, 3, True), "fp8_e5m2": _fp8_values(5, 2, False)}


def _fp8_encode(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 -> uint8 codes: nearest finite value, ties to the even code, saturating."""
    table = _FP8_TABLES[dtype]
    pos_codes = np.array([c for c in range(128) if np.isfinite(table[c])], dtype=np.uint8)
    pos_vals = table[pos_codes].astype(np.float64)  # ascending: codes are monotone in value
    a = np.abs(x.astype(np.float64))
    hi = np.clip(np.searchsorted(pos_vals, a), 1, len(pos_vals) - 1)
    lo = hi - 1
    d_lo, d_hi = a - pos_vals[lo], pos_vals[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (pos_codes[hi] % 2 == 0))
    code = np.where(pick_hi, pos_codes[hi], pos_codes[lo])
    code = np.where(a >= pos_vals[-1], pos_codes[-1], code)  # saturate (inf too)
    code = np.where(np.signbit(x), code | 0x80, code)
    return np.where(np.isnan(x), 0x7F, code).astype(np.uint8)


def arg_storage(dtype: str) -> np.dtype[Any]:
    """Host numpy dtype of a device buffer of argument dtype ``dtype`` (raw bits for the
    16/8-bit floats)."""
    if dtype in INTEGER_DTYPES:
        return INTEGER_DTYPES[dtype]
    if dtype in ("f32", "fp32"):
        return np.dtype(np.float32)
    if dtype in ("bf16", "fp16"):
        return np.dtype(np.uint16)
    if dtype in _FP8_TABLES:
        return np.dtype(np.uint8)
    raise ParameterError(f"unknown argument dtype {dtype!r}; choose one of: "
                         f"{', '.join(ARG_DTYPES[1:])}", name="dtype", key="dtype",
                         value=dtype, expected=list(ARG_DTYPES[1:]))


def is_integer_dtype(dtype: str) -> bool:
    return dtype in INTEGER_DTYPES


def encode_arg(x: npt.ArrayLike, dtype: str) -> np.ndarray:
    """Host values -> the device buffer's contents for argument dtype ``dtype``.

    Floats are rounded to the dtype (see :func:`quantize`); integers must already be
    integral and in range (a value that does not fit is an error, not a silent wrap)."""
    arr = np.asarray(x)
    storage = arg_storage(dtype)
    if dtype in INTEGER_DTYPES:
        info = np.iinfo(storage)
        if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))
                         or arr.min() < info.min or arr.max() > info.max):
            raise ParameterError(f"values for a {dtype} argument must be integers in "
                                 f"[{info.min}, {info.max}]", name="dtype", key=dtype,
                                 value=f"[{arr.min()}, {arr.max()}]",
                                 expected=f"integers in [{info.min}, {info.max}]")
        return np.ascontiguousarray(arr.astype(storage))
    if dtype in _FP8_TABLES:
        return _fp8_encode(arr.astype(np.float32), dtype)
    return np.ascontiguousarray(to_device_bits(arr, "fp32" if dtype == "f32" else dtype))


def decode_arg(bits: npt.ArrayLike, dtype: str) -> np.ndarray:
    """Device buffer contents -> values: int64 for integer dtypes, float64 for the floats."""
    arr = np.asarray(bits)
    if dtype in INTEGER_DTYPES:
        return arr.astype(np.int64)
    if dtype in _FP8_TABLES:
        return _FP8_TABLES[dtype][arr.astype(np.uint8)].astype(np.float64)
    return from_device_bits(arr, "fp32" if dtype == "f32" else dtype).astype(np.float64)


def round_to_arg(x: npt.ArrayLike, dtype: str) -> np.ndarray:
    """The values a kernel sees after upload: ``decode_arg(encode_arg(x, dtype), dtype)``."""
    return decode_arg(encode_arg(x, dtype), dtype)
