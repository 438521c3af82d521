"""numpy reference for dense_relu: Y = relu(X W^T + b) with W stored [N, K]."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """X ~ N(0, 1), W ~ N(0, 1 / K) (so every pre-activation is near unit size whatever K,
    and about half of the outputs are clipped by the ReLU), b ~ N(0, 0.25)."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"X": rng.standard_normal((m, k), dtype=np.float32),
            "W": (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32),
            "b": (0.5 * rng.standard_normal(n)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = inputs["X"].astype(np.float64)
    w = inputs["W"].astype(np.float64)
    b = inputs["b"].astype(np.float64)
    return {"Y": np.maximum(x @ w.T + b, 0.0).astype(np.float32)}
