"""numpy reference for dwconv5_nchw: each channel's zero-padded 5 x 5 correlation in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """in ~ U(-1, 1), wt ~ U(-1, 1) / 5."""
    nb, ch, h, w = shape["nb"], shape["ch"], shape["h"], shape["w"]
    return {"in": rng.uniform(-1.0, 1.0, size=(nb, ch, h, w)).astype(np.float32),
            "wt": (rng.uniform(-1.0, 1.0, size=(ch, 5, 5)) / 5.0).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nb, ch, h, w = shape["nb"], shape["ch"], shape["h"], shape["w"]
    x = np.asarray(inputs["in"]).astype(np.float64).reshape(nb, ch, h, w)
    wt = np.asarray(inputs["wt"]).astype(np.float64).reshape(1, ch, 5, 5, 1, 1)
    padded = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
    out = np.zeros((nb, ch, h, w))
    for ky in range(5):
        for kx in range(5):
            out += wt[:, :, ky, kx] * padded[:, :, ky:ky + h, kx:kx + w]
    return {"out": out.astype(np.float32)}
