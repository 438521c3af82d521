"""numpy reference for conv2d_const: a 7x7 correlation with zero padding; the filter is the
kernel's ``__constant__`` array ``filt`` (an input, per the kernel-folder contract)."""

from __future__ import annotations

import numpy as np

KS = 7


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """An image ~ N(0, 1) and a filter whose taps differ (a transposed or shifted filter
    gives other outputs), scaled so outputs stay near unit size."""
    h, w = shape["h"], shape["w"]
    taps = rng.uniform(-1.0, 1.0, size=KS * KS) / KS
    return {"in": rng.standard_normal((h, w), dtype=np.float32),
            "filt": taps.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    r = KS // 2
    image = np.zeros((h + 2 * r, w + 2 * r))
    image[r:r + h, r:r + w] = inputs["in"].astype(np.float64)
    filt = inputs["filt"].astype(np.float64).reshape(KS, KS)
    out = np.zeros((h, w))
    for i in range(KS):
        for j in range(KS):
            out += filt[i, j] * image[i:i + h, j:j + w]
    return {"out": out.astype(np.float32)}
