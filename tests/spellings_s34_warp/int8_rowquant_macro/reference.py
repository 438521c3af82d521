"""Inputs and numpy reference for int8_rowquant_macro: symmetric int8 quantisation of each half
row, in float32 exactly as the kernel rounds (amax and 127 / amax in float32, the product
in float32, round half to even, clamped to [-127, 127]; scale amax / 127, 1 for a zero
row): the outputs compare exactly."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Activations ~ N(0, 1) in half with one outlier a row (x 8, at a column that moves
    from row to row: its magnitude sets the scale) and every 11th row all zeros."""
    rows, cols = shape["rows"], shape["cols"]
    x = rng.normal(0.0, 1.0, (rows, cols))
    x[np.arange(rows), (np.arange(rows) * 37) % cols] *= 8.0
    x[::11] = 0.0
    return {"act": x.astype(np.float16)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    x = np.asarray(inputs["act"]).astype(np.float32).reshape(rows, cols)
    amax = np.abs(x).max(axis=1)
    live = amax > 0.0
    safe = np.where(live, amax, np.float32(1.0)).astype(np.float32)
    inv = np.where(live, np.float32(127.0) / safe, np.float32(0.0)).astype(np.float32)
    q = np.clip(np.rint(x * inv[:, None]), -127, 127).astype(np.int8)
    scale = np.where(live, safe / np.float32(127.0), np.float32(1.0)).astype(np.float32)
    return {"codes": q, "scales": scale}
