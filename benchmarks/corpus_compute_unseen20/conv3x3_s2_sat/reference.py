"""numpy reference for conv3x3_s2_sat: the zero-padded image's nine stride-2 shifted views,
each times its weight, summed in float64, through 1.25 v - 0.1 clipped to [0, 1]."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Texels uniform in [0, 1]; nine distinct weights in [0.02, 0.2] (sums near 1, so the
    curve saturates at both ends for some texels)."""
    h, w = shape["H"], shape["W"]
    return {"src": rng.uniform(0.0, 1.0, (h, w)).astype(np.float32),
            "c_weights": rng.uniform(0.02, 0.2, 9).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["H"], shape["W"]
    ho, wo = h // 2, w // 2
    taps = np.asarray(inputs["c_weights"], dtype=np.float64).reshape(3, 3)
    padded = np.zeros((h + 2, w + 2), dtype=np.float32)  # each view widened as it is used
    padded[1:h + 1, 1:w + 1] = np.asarray(inputs["src"], dtype=np.float32).reshape(h, w)
    acc = np.zeros((ho, wo))
    for dy in range(3):
        for dx in range(3):
            acc += taps[dy, dx] * padded[dy:dy + 2 * ho:2, dx:dx + 2 * wo:2]
    return {"dst": np.clip(1.25 * acc - 0.1, 0.0, 1.0).astype(np.float32)}
