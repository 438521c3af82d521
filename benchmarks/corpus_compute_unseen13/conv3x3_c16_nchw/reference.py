"""numpy reference for conv3x3_c16_nchw: the zero-padded 3 x 3 convolution in float64."""

from __future__ import annotations

import numpy as np

CH = 16


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """in ~ U(-1, 1), wt ~ U(-1, 1) / 12 (a sum of 144 products stays near 1), bias ~ U(-1, 1)."""
    nb, h, w = shape["nb"], shape["h"], shape["w"]
    return {"in": rng.uniform(-1.0, 1.0, size=(nb, CH, h, w)).astype(np.float32),
            "wt": (rng.uniform(-1.0, 1.0, size=(CH, CH, 3, 3)) / 12.0).astype(np.float32),
            "bias": rng.uniform(-1.0, 1.0, size=CH).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nb, h, w = shape["nb"], shape["h"], shape["w"]
    x = np.asarray(inputs["in"]).astype(np.float64).reshape(nb, CH, h, w)
    wt = np.asarray(inputs["wt"]).astype(np.float64).reshape(CH, CH, 3, 3)
    bias = np.asarray(inputs["bias"]).astype(np.float64).reshape(CH)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.broadcast_to(bias.reshape(1, CH, 1, 1), (nb, CH, h, w)).copy()
    for ky in range(3):
        for kx in range(3):
            window = padded[:, :, ky:ky + h, kx:kx + w]  # [nb, ci, h, w]
            out += np.einsum("oi,bihw->bohw", wt[:, :, ky, kx], window, optimize=True)
    return {"out": out.astype(np.float32)}
