"""Inputs and numpy reference for rowmax_i32_tpl (float32 as the kernel rounds)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Counts 0..999, every 9th row all zeros."""
    rows, cols = shape["rows"], shape["cols"]
    count = rng.integers(0, 1000, (rows, cols))
    count[::9] = 0
    return {"count": count.astype(np.int32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    count = np.asarray(inputs["count"]).astype(np.int64).reshape(rows, cols)
    total = count.sum(axis=1)
    inv = np.where(total > 0, np.float32(1.0) / np.maximum(total, 1).astype(np.float32),
                   np.float32(0.0)).astype(np.float32)
    return {"p": (count.astype(np.float32) * inv[:, None]).astype(np.float32)}
