"""numpy reference for sgemv_t_tiled: A^T x in float64 from the float32 inputs, rounded to
float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Uniform A and x in [-1, 1]."""
    m, n = shape["M"], shape["N"]
    return {"A": rng.uniform(-1.0, 1.0, (m, n)).astype(np.float32),
            "x": rng.uniform(-1.0, 1.0, m).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n = shape["M"], shape["N"]
    a = np.asarray(inputs["A"], dtype=np.float64).reshape(m, n)
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(m)
    return {"y": (a.T @ x).astype(np.float32)}
