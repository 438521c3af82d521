"""Inputs and numpy reference for rmsnorm_h16_rows_macro (float64, rounded to half)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    return {"x": rng.normal(0.0, 1.0, (rows, cols)).astype(np.float16),
            "w": rng.uniform(0.5, 1.5, cols).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(rows, cols)
    w = np.asarray(inputs["w"], dtype=np.float64)
    scale = 1.0 / np.sqrt((x * x).mean(axis=1) + 1e-5)
    return {"y": (x * scale[:, None] * w[None, :]).astype(np.float16)}
