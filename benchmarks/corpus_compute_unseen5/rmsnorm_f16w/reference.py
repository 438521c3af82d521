"""numpy reference for rmsnorm_f16w: each row divided by its root mean square (plus EPS
under the root) and scaled by w, in float64 from the half inputs, rounded to half."""

from __future__ import annotations

import numpy as np

EPS = 1e-5


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Rows ~ N(0, s^2) with a scale s in [0.1, 4] per row, weights in [0.5, 1.5]; all
    rounded to half (exactly what the kernel reads)."""
    rows, cols = shape["rows"], shape["cols"]
    scale = rng.uniform(0.1, 4.0, size=(rows, 1))
    x = (scale * rng.standard_normal((rows, cols))).astype(np.float16).astype(np.float32)
    w = rng.uniform(0.5, 1.5, size=cols).astype(np.float16).astype(np.float32)
    return {"x": x, "w": w}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    x = inputs["x"].astype(np.float64).reshape(rows, cols)
    w = inputs["w"].astype(np.float64).reshape(cols)
    inv = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS)
    return {"y": (x * inv * w).astype(np.float16)}
