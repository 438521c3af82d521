"""numpy reference for softmax_lenmask: the masked scaled softmax of each row in float64."""

from __future__ import annotations

import numpy as np

SCALE = 0.125


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """s ~ U(-8, 8); lens[b] ~ U{cols/2..cols} (padding short of half a row, as in a
    batch of similar lengths), batch 0 the full row and batch 1 (if any) empty."""
    batch, rows, cols = shape["batch"], shape["rows"], shape["cols"]
    s = rng.uniform(-8.0, 8.0, size=(batch, rows, cols)).astype(np.float32)
    lens = rng.integers(cols // 2, cols + 1, size=batch).astype(np.int32)
    lens[0] = cols
    if batch > 1:
        lens[1] = 0
    return {"s": s, "lens": lens}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    batch, rows, cols = shape["batch"], shape["rows"], shape["cols"]
    s = np.asarray(inputs["s"]).reshape(batch, rows, cols)
    lens = np.asarray(inputs["lens"]).reshape(batch)
    y = np.zeros((batch, rows, cols), dtype=np.float32)
    for b in range(batch):
        n = min(int(lens[b]), cols)
        if n == 0:
            continue
        z = s[b, :, :n].astype(np.float64) * SCALE
        e = np.exp(z - z.max(axis=1, keepdims=True))
        y[b, :, :n] = e / e.sum(axis=1, keepdims=True)
    return {"y": y}
