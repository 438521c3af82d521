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
    "CUDA_TYPES",
    "DTYPES",
    "ELEM_BYTES",
    "NUMPY_DEVICE_DTYPES",
    "UnknownDtypeError",
    "check_dtype",
    "from_device_bits",
    "quantize",
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
