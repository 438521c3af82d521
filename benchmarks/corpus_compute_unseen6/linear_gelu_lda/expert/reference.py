"""numpy reference for linear_gelu_lda: Y = gelu_tanh(X[:, :K] W + bias) in float64, X held
in a buffer with row stride ldx (its columns past K are never read)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """X ~ N(0, 1) with its padding columns set to 1e6 (a read past K shows), W ~ N(0, 1/K)
    so the pre-activations are ~ N(0, 1) and both sides of gelu are used, bias ~ N(0, 0.5^2)."""
    m, n, k, ldx = shape["M"], shape["N"], shape["K"], shape["ldx"]
    x = rng.standard_normal((m, ldx), dtype=np.float32)
    x[:, k:] = 1.0e6
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    return {"X": x, "W": w, "bias": (0.5 * rng.standard_normal(n)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, k, ldx = shape["M"], shape["N"], shape["K"], shape["ldx"]
    x = inputs["X"].astype(np.float64).reshape(m, ldx)[:, :k]
    w = inputs["W"].astype(np.float64).reshape(k, n)
    v = x @ w + inputs["bias"].astype(np.float64)
    y = 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))
    return {"Y": y.astype(np.float32)}
