"""numpy reference for conv5_channels: four planes, each correlated with its own 5x5 filter
(the kernel's ``__constant__`` array ``weights``, an input), summed; zero padding."""

from __future__ import annotations

import numpy as np

CH, KSIZE = 4, 5


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Planes ~ N(0, 1) and 100 weights that all differ (a flipped or shifted filter, or
    planes taken in another order, give other outputs)."""
    h, w = shape["h"], shape["w"]
    weights = rng.uniform(-1.0, 1.0, size=CH * KSIZE * KSIZE) / 10.0
    return {"in": rng.standard_normal((CH, h, w), dtype=np.float32),
            "weights": weights.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    half = KSIZE // 2
    planes = np.pad(inputs["in"].astype(np.float64).reshape(CH, h, w),
                    ((0, 0), (half, half), (half, half)))
    weights = inputs["weights"].astype(np.float64).reshape(CH, KSIZE, KSIZE)
    out = np.zeros((h, w))
    for ch in range(CH):
        for dy in range(KSIZE):
            for dx in range(KSIZE):
                out += weights[ch, dy, dx] * planes[ch, dy:dy + h, dx:dx + w]
    return {"out": out.astype(np.float32)}
