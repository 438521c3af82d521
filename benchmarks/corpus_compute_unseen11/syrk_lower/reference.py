"""numpy reference for syrk_lower: the lower triangle of A Aᵀ in float64, zeros above."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A ~ U(-1, 1)."""
    return {"A": rng.uniform(-1.0, 1.0, size=(shape["n"], shape["k"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, k = shape["n"], shape["k"]
    a = np.asarray(inputs["A"]).astype(np.float64).reshape(n, k)
    return {"C": np.tril(a @ a.T).astype(np.float32)}
