"""numpy reference for logsoftmax_h16_warp: each row's log-softmax in float64 from the half
inputs, rounded to half."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Logits ~ N(0, 2) in half, one a row raised by 6 (a peaked row: its max matters) at a
    column that moves from row to row."""
    rows, cols = shape["rows"], shape["cols"]
    x = rng.normal(0.0, 2.0, (rows, cols))
    x[np.arange(rows), (np.arange(rows) * 37) % cols] += 6.0
    return {"x": x.astype(np.float16)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(rows, cols)
    m = x.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    return {"out": (x - lse).astype(np.float16)}
