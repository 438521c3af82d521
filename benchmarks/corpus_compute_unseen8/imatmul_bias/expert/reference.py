"""numpy reference for imatmul_bias: C = A @ B + bias in exact integer arithmetic."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A and B hold int8 codes in [-128, 127] (a product of two codes is at most 2^14, so
    K = 1024 sums stay far inside int32); the bias is a wider int32 as a quantised layer's
    is."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = rng.integers(-128, 128, size=(m, k))
    b = rng.integers(-128, 128, size=(k, n))
    bias = rng.integers(-(1 << 20), 1 << 20, size=n)
    return {"A": a.astype(np.int32), "B": b.astype(np.int32), "bias": bias.astype(np.int32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """Through float64 matmul (BLAS; numpy's integer matmul is a slow loop): every product
    and partial sum is an integer below 2^25, so float64 holds each exactly."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"]).astype(np.float64).reshape(m, k)
    b = np.asarray(inputs["B"]).astype(np.float64).reshape(k, n)
    bias = np.asarray(inputs["bias"]).astype(np.int64).reshape(n)
    return {"C": (np.rint(a @ b).astype(np.int64) + bias[None, :]).astype(np.int32)}
