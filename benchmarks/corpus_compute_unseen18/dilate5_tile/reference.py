"""numpy reference for dilate5_tile: the maximum of the 25 shifts of the image padded by two
cells of -inf each side."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"in": rng.random((shape["H"], shape["W"]), dtype=np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["H"], shape["W"]
    img = np.asarray(inputs["in"], dtype=np.float32).reshape(h, w)
    padded = np.pad(img, 2, constant_values=-np.inf)
    rows = padded[:, 0:w].copy()
    for dx in range(1, 5):
        np.maximum(rows, padded[:, dx:dx + w], out=rows)
    out = rows[0:h].copy()
    for dy in range(1, 5):
        np.maximum(out, rows[dy:dy + h], out=out)
    return {"out": out}
