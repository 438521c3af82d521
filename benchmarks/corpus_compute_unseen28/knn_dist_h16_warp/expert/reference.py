"""numpy reference for knn_dist_h16_warp: squared Euclidean distances from a float query to
the rows of a half table, in float64 from the half values."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Table entries in [-1, 1] rounded to half, the query in [-1, 1] (distances ~ dim / 1.5,
    one column ~1 / dim of a distance)."""
    rows, dim = shape["rows"], shape["dim"]
    return {"X": rng.uniform(-1.0, 1.0, (rows, dim)).astype(np.float16),
            "q": rng.uniform(-1.0, 1.0, dim).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, dim = shape["rows"], shape["dim"]
    x = np.asarray(inputs["X"], dtype=np.float64).reshape(rows, dim)
    q = np.asarray(inputs["q"], dtype=np.float64).reshape(dim)
    return {"dist": ((x - q[None, :]) ** 2).sum(axis=1).astype(np.float32)}
