"""numpy reference for gemvt_f16_batched: y[b] = A[b]ᵀ x[b] in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A ~ U(-1, 1) rounded to half (exactly what the kernel reads), x ~ U(-1, 1)."""
    batch, rows, cols = shape["batch"], shape["rows"], shape["cols"]
    a = rng.uniform(-1.0, 1.0, size=(batch, rows, cols)).astype(np.float16)
    x = rng.uniform(-1.0, 1.0, size=(batch, rows)).astype(np.float32)
    return {"A": a.astype(np.float32), "x": x}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    batch, rows, cols = shape["batch"], shape["rows"], shape["cols"]
    a = np.asarray(inputs["A"]).reshape(batch, rows, cols)
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(batch, rows)
    y = np.empty((batch, cols))
    for b in range(batch):  # a batch entry at a time: float64 copies of one matrix only
        y[b] = x[b] @ a[b].astype(np.float64)
    return {"y": y.astype(np.float32)}
