"""numpy reference for gram_ata_ridge: A^T A / K in float64 plus 0.01 on the diagonal,
rounded to float32."""

from __future__ import annotations

import numpy as np

RIDGE = 0.01


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Samples uniform in [-1, 1]."""
    return {"A": rng.uniform(-1.0, 1.0, (shape["K"], shape["N"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, k = shape["N"], shape["K"]
    a = np.asarray(inputs["A"], dtype=np.float64).reshape(k, n)
    c = (a.T @ a) / k + RIDGE * np.eye(n)
    return {"C": c.astype(np.float32)}
