"""numpy reference for row_cumsum: the inclusive prefix sum of each row, in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ N(0.1, 1): the prefixes drift (a lost carry shows as a step), and cross zero (a
    sign error shows too)."""
    rows, cols = shape["rows"], shape["cols"]
    return {"x": (0.1 + rng.standard_normal((rows, cols))).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(rows, cols)
    return {"y": np.cumsum(x, axis=1).astype(np.float32)}
