"""numpy reference for filter2d_clamp: a 9x9 correlation with clamp-to-edge borders; the
taps are the kernel's ``__constant__`` array ``taps`` (an input, per the kernel-folder
contract)."""

from __future__ import annotations

import numpy as np

DIAM = 9


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """An image ~ N(0, 1) and taps that all differ (a transposed, flipped or shifted filter
    gives other outputs), scaled so outputs stay near unit size."""
    h, w = shape["h"], shape["w"]
    taps = rng.uniform(-1.0, 1.0, size=(DIAM, DIAM)) / DIAM
    return {"in": rng.standard_normal((h, w), dtype=np.float32),
            "taps": taps.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    r = DIAM // 2
    image = np.pad(inputs["in"].astype(np.float64), r, mode="edge")
    taps = inputs["taps"].astype(np.float64).reshape(DIAM, DIAM)
    out = np.zeros((h, w))
    for i in range(DIAM):
        for j in range(DIAM):
            out += taps[i, j] * image[i:i + h, j:j + w]
    return {"out": out.astype(np.float32)}
