"""numpy reference for corr7x7_bank4: the image zero-padded by three and the 49 shifted
copies weighted by each filter's taps, in float64."""

from __future__ import annotations

import numpy as np

R = 3
NF = 4


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Image ~ U(-1, 1); filters ~ U(-0.1, 0.1)."""
    h, w = shape["H"], shape["W"]
    return {"img": rng.uniform(-1.0, 1.0, size=(h, w)).astype(np.float32),
            "filt": rng.uniform(-0.1, 0.1, size=(NF, 2 * R + 1, 2 * R + 1)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["H"], shape["W"]
    pad = np.pad(np.asarray(inputs["img"], dtype=np.float64).reshape(h, w), R)
    filt = np.asarray(inputs["filt"], dtype=np.float64).reshape(NF, 2 * R + 1, 2 * R + 1)
    acc = np.zeros((NF, h, w), dtype=np.float64)
    for dy in range(2 * R + 1):
        for dx in range(2 * R + 1):
            shifted = pad[dy:dy + h, dx:dx + w]
            for f in range(NF):
                acc[f] += filt[f, dy, dx] * shifted
    return {"out": acc.astype(np.float32)}
