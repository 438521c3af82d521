"""numpy reference for gauss16_quad: the same 16-point Gauss-Legendre rule in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """a ~ U(0, 4) (the Gaussian's width), b ~ U(0, 20) (the cosine's frequency)."""
    n = shape["n"]
    return {"a": rng.uniform(0.0, 4.0, size=n).astype(np.float32),
            "b": rng.uniform(0.0, 20.0, size=n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    a = np.asarray(inputs["a"]).astype(np.float64).reshape(n, 1)
    b = np.asarray(inputs["b"]).astype(np.float64).reshape(n, 1)
    x, w = np.polynomial.legendre.leggauss(16)
    t, w = (x + 1.0) / 2.0, w / 2.0
    y = np.zeros(n)
    for q in range(16):  # one node at a time: a few arrays of n, not one of 16 n
        y += w[q] * np.exp(-a[:, 0] * t[q] * t[q]) * np.cos(b[:, 0] * t[q])
    return {"y": y.astype(np.float32)}
