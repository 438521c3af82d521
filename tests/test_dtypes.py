"""Element dtypes: exact bf16/fp16 rounding and device bit patterns."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from workbench.core.dtypes import (
    CUDA_TYPES,
    DTYPES,
    ELEM_BYTES,
    NUMPY_DEVICE_DTYPES,
    UnknownDtypeError,
    check_dtype,
    from_device_bits,
    quantize,
    to_device_bits,
)
from workbench.core.errors import ParameterError


def _f32(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _bf16_reference(bits: int) -> int:
    """Nearest bf16 (ties to even) chosen by comparing exact float64 distances."""
    value = _f32(bits)
    if value != value:
        return -1  # NaN, checked separately
    low = bits & 0xFFFF0000  # truncation: toward zero in magnitude
    if low == bits:
        return bits >> 16
    high = low + 0x10000  # next bf16 away from zero (may be infinity)
    low_v, high_v = _f32(low), _f32(high)
    if high_v in (float("inf"), float("-inf")):
        # IEEE overflow: round as if the exponent were unbounded (the next step is 2**128).
        high_v = float(np.copysign(2.0**128, high_v))
    d_low, d_high = abs(value - low_v), abs(high_v - value)  # exact in float64
    if d_low < d_high:
        return low >> 16
    if d_high < d_low:
        return high >> 16
    return (low >> 16) if (low >> 16) % 2 == 0 else (high >> 16)


def test_tables() -> None:
    assert DTYPES == ("bf16", "fp16", "fp32")
    assert dict(ELEM_BYTES) == {"bf16": 2, "fp16": 2, "fp32": 4}
    assert dict(CUDA_TYPES) == {"bf16": "__nv_bfloat16", "fp16": "__half", "fp32": "float"}
    assert NUMPY_DEVICE_DTYPES["bf16"] == np.uint16 and NUMPY_DEVICE_DTYPES["fp32"] == np.float32


def test_check_dtype_lists_the_allowed_names() -> None:
    assert check_dtype("bf16") == "bf16"
    with pytest.raises(UnknownDtypeError) as info:
        check_dtype("int8")
    assert "bf16, fp16, fp32" in info.value.message
    assert info.value.details["value"] == "int8"
    assert isinstance(info.value, ParameterError)
    with pytest.raises(UnknownDtypeError):
        quantize(np.ones(2, np.float32), "float16")


def test_bf16_rounding_matches_an_exact_reference() -> None:
    rng = np.random.default_rng(1234)
    patterns = rng.integers(0, 2**32, size=4000, dtype=np.uint64).astype(np.uint32)
    # Exact ties, odd and even, near overflow, subnormals, zeros.
    edges = [0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x7F7FFFFF, 0x7F7F8000,
             0x7F7F7FFF, 0x00008000, 0x00018000, 0x00000001, 0x80000000, 0x00000000,
             0xFF7FFFFF, 0xBF808000]
    patterns = np.concatenate([patterns, np.array(edges, dtype=np.uint32)])
    x = patterns.view(np.float32)
    got = to_device_bits(x, "bf16")
    assert got.dtype == np.uint16
    for bits, out in zip(patterns.tolist(), got.tolist(), strict=True):
        expected = _bf16_reference(bits)
        if expected == -1:
            assert np.isnan(_f32(out << 16))
        else:
            assert out == expected, hex(bits)


def test_bf16_known_values() -> None:
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, 3.4028235e38], dtype=np.float32)
    q = quantize(x, "bf16")
    assert q.dtype == np.float32
    assert q.tolist() == [1.0, 1.0, 1 + 2**-6, -2.5, float("inf")]
    assert to_device_bits(np.float32(1.0), "bf16") == 0x3F80


def test_special_values_survive_every_dtype() -> None:
    payload_nan = np.array([0x7F800001, 0xFF800001], dtype=np.uint32).view(np.float32)
    x = np.concatenate([np.array([np.inf, -np.inf, np.nan, -0.0], np.float32), payload_nan])
    for dtype in DTYPES:
        q = quantize(x, dtype)
        assert q[0] == np.inf and q[1] == -np.inf
        assert np.isnan(q[2]) and np.isnan(q[4]) and np.isnan(q[5])
        assert q[3] == 0 and np.signbit(q[3])
        back = from_device_bits(to_device_bits(x, dtype), dtype)
        assert np.array_equal(back, q, equal_nan=True)


def test_fp16_rounding() -> None:
    x = np.array([65504.0, 65520.0, 2.0**-24, 2.0**-26, 1 + 2**-11, 1 + 3 * 2**-11], np.float32)
    assert quantize(x, "fp16").tolist() == [65504.0, float("inf"), 2.0**-24, 0.0, 1.0,
                                            1 + 2**-9]
    assert to_device_bits(np.float32(1.0), "fp16") == 0x3C00


@pytest.mark.parametrize("dtype", DTYPES)
def test_quantize_is_idempotent_and_bits_round_trip(dtype: str) -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((7, 33)) * 100).astype(np.float32)
    q = quantize(x, dtype)
    assert q.shape == x.shape and q.dtype == np.float32
    assert np.array_equal(quantize(q, dtype), q)
    bits = to_device_bits(x, dtype)
    assert bits.dtype == NUMPY_DEVICE_DTYPES[dtype] and bits.shape == x.shape
    assert np.array_equal(from_device_bits(bits, dtype), q)
    if dtype != "fp32":
        assert not np.array_equal(q, x)  # rounding really happened
        assert np.max(np.abs(q - x) / np.abs(x)) <= (2**-8 if dtype == "bf16" else 2**-11)
    strided = x[:, ::3]
    assert np.array_equal(to_device_bits(strided, dtype), to_device_bits(strided.copy(), dtype))


def test_from_device_bits_checks_the_buffer_dtype() -> None:
    with pytest.raises(ParameterError, match="uint16"):
        from_device_bits(np.zeros(3, np.float32), "bf16")


# ---- argument dtypes (integers, fp8) --------------------------------------------------------

def test_fp8_round_to_nearest_even_and_saturate() -> None:
    from workbench.core.dtypes import encode_arg, round_to_arg

    x = np.array([1.0625, 1.1875, 1e9, -1e9, 0.0029296875, -0.0, np.nan], dtype=np.float32)
    e4m3 = round_to_arg(x, "fp8_e4m3")
    # 1.0625 ties between 1.0 (code 0x38) and 1.125 (0x39): the even code; 1.1875 -> 1.25.
    assert e4m3[:5].tolist() == [1.0, 1.25, 448.0, -448.0, 0.00390625]
    assert np.signbit(e4m3[5]) and np.isnan(e4m3[6])
    assert round_to_arg(x[:4], "fp8_e5m2").tolist() == [1.0, 1.25, 57344.0, -57344.0]
    assert encode_arg(np.array([1.0, -2.0]), "fp8_e4m3").tolist() == [0x38, 0xC0]
    assert encode_arg(np.array([1.0, -2.0]), "fp8_e5m2").tolist() == [0x3C, 0xC0]


def test_every_fp8_code_round_trips() -> None:
    from workbench.core.dtypes import decode_arg, encode_arg

    for dtype in ("fp8_e4m3", "fp8_e5m2"):
        codes = np.arange(256, dtype=np.uint8)
        values = decode_arg(codes, dtype)
        finite = np.isfinite(values)
        assert (encode_arg(values[finite], dtype) == codes[finite]).all()


def test_integer_arguments_stay_integers_and_refuse_out_of_range() -> None:
    from workbench.core.dtypes import arg_storage, decode_arg, encode_arg

    bits = encode_arg(np.array([-128, 0, 127]), "i8")
    assert bits.dtype == np.int8 and decode_arg(bits, "i8").dtype == np.int64
    big = np.array([2**40 + 1])
    assert decode_arg(encode_arg(big, "i64"), "i64")[0] == 2**40 + 1  # not via float32
    assert arg_storage("u16") == np.uint16
    with pytest.raises(ParameterError, match=r"i8 argument must be integers in \[-128, 127\]"):
        encode_arg(np.array([128]), "i8")
    with pytest.raises(ParameterError, match="integers"):
        encode_arg(np.array([0.5]), "u8")
    with pytest.raises(ParameterError, match="unknown argument dtype 'f64'"):
        arg_storage("f64")
