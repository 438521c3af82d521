"""numpy reference for corr5x5_perimg: each image zero-padded by two and the 25 shifted
copies weighted by its own filter, in float64, one image at a time."""

from __future__ import annotations

import numpy as np

R = 2


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Images ~ U(-1, 1); filters ~ U(-0.2, 0.2)."""
    b, h, w = shape["B"], shape["H"], shape["W"]
    return {"in": rng.uniform(-1.0, 1.0, size=(b, h, w)).astype(np.float32),
            "filt": rng.uniform(-0.2, 0.2, size=(b, 2 * R + 1, 2 * R + 1)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    b, h, w = shape["B"], shape["H"], shape["W"]
    img = np.asarray(inputs["in"]).reshape(b, h, w)
    filt = np.asarray(inputs["filt"], dtype=np.float64).reshape(b, 2 * R + 1, 2 * R + 1)
    out = np.empty((b, h, w), dtype=np.float32)
    for i in range(b):
        pad = np.pad(img[i].astype(np.float64), R)
        acc = np.zeros((h, w), dtype=np.float64)
        for dy in range(2 * R + 1):
            for dx in range(2 * R + 1):
                acc += filt[i, dy, dx] * pad[dy:dy + h, dx:dx + w]
        out[i] = acc
    return {"out": out}
