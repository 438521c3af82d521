"""numpy reference for cgemm_f2: the complex product C = A B in complex128."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Real and imaginary parts ~ U(-1, 1), interleaved (re, im) as the kernel reads them."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = rng.uniform(-1.0, 1.0, size=(m, k, 2))
    b = rng.uniform(-1.0, 1.0, size=(k, n, 2))
    return {"A": a.astype(np.float32), "B": b.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """Through complex128 matmul (BLAS), interleaved back to (re, im) pairs."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"]).astype(np.float64).reshape(m, k, 2)
    b = np.asarray(inputs["B"]).astype(np.float64).reshape(k, n, 2)
    c = (a[..., 0] + 1j * a[..., 1]) @ (b[..., 0] + 1j * b[..., 1])
    return {"C": np.stack([c.real, c.imag], axis=-1).astype(np.float32)}
