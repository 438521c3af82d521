"""Inputs and numpy reference for l2norm_f64_rows_sizet (float64)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """N(0, 1) rows, every 7th all zeros (the eps branch)."""
    rows, cols = shape["rows"], shape["cols"]
    x = rng.normal(0.0, 1.0, (rows, cols))
    x[::7] = 0.0
    return {"in": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    x = np.asarray(inputs["in"], dtype=np.float64).reshape(rows, cols)
    norm = np.maximum(np.sqrt((x * x).sum(axis=1)), 1e-12)
    return {"out": (x / norm[:, None]).astype(np.float32)}
