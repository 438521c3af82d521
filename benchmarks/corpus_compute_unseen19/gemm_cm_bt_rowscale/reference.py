"""numpy reference for gemm_cm_bt_rowscale: the column-major arrays held row-major as their
transposes (a as K x M, b as K x N, c as N x M), so C^T = (A B^T)^T s-scaled by column, in
float64, rounded to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A and B uniform in [-1, 1], the row scales s in [0.5, 2]."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"a": rng.uniform(-1.0, 1.0, (k, m)).astype(np.float32),
            "b": rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32),
            "s": rng.uniform(0.5, 2.0, m).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, k = shape["M"], shape["N"], shape["K"]
    at = np.asarray(inputs["a"], dtype=np.float64).reshape(k, m)
    bt = np.asarray(inputs["b"], dtype=np.float64).reshape(k, n)
    s = np.asarray(inputs["s"], dtype=np.float64).reshape(m)
    c = (at.T @ bt) * s[:, None]  # M x N
    return {"c": np.ascontiguousarray(c.T).astype(np.float32)}
