"""numpy reference for row_top1: each row's largest value and its first column."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Scores ~ N(0, 1) rounded to multiples of 1/8 (ties are common, so the smallest-column
    rule is exercised), with each row's maximum repeated at a second, later column in half
    of the rows."""
    rows, cols = shape["rows"], shape["cols"]
    x = np.round(8.0 * rng.standard_normal((rows, cols))) / 8.0
    top = x.argmax(axis=1)
    later = rng.integers(0, cols, size=rows)
    twin = (later > top) & (rng.random(rows) < 0.5)
    x[np.nonzero(twin)[0], later[twin]] = x[np.nonzero(twin)[0], top[twin]]
    return {"scores": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = inputs["scores"].astype(np.float32).reshape(shape["rows"], shape["cols"])
    idx = x.argmax(axis=1)  # the first maximum
    return {"best_idx": idx.astype(np.int32), "best_val": x[np.arange(x.shape[0]), idx]}
