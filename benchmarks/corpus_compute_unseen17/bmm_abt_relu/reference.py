"""numpy reference for bmm_abt_relu: a batched float64 a @ b^T, the bias added and negative
results clamped to zero."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Matrices ~ U(-1, 1); bias ~ U(-2, 2) (so about half the outputs are clamped)."""
    big_l, m, n, k = shape["L"], shape["M"], shape["N"], shape["K"]
    return {"a": rng.uniform(-1.0, 1.0, size=(big_l, m, k)).astype(np.float32),
            "b": rng.uniform(-1.0, 1.0, size=(big_l, n, k)).astype(np.float32),
            "bias": rng.uniform(-2.0, 2.0, size=n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    big_l, m, n, k = shape["L"], shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["a"], dtype=np.float64).reshape(big_l, m, k)
    b = np.asarray(inputs["b"], dtype=np.float64).reshape(big_l, n, k)
    bias = np.asarray(inputs["bias"], dtype=np.float64).reshape(n)
    c = np.matmul(a, b.transpose(0, 2, 1)) + bias
    return {"c": np.maximum(c, 0.0).astype(np.float32)}
