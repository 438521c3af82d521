"""numpy reference for dil2_conv5_valid: the 5 x 5 cross-correlation at dilation 2 of each
float image with the kernel's ``__constant__`` taps ``taps`` [25] (an input, row-major
r * 5 + c), valid output, in float64."""

from __future__ import annotations

import numpy as np

KW, DIL = 5, 2


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Images in [-1, 1]; taps in [-1, 1], no two alike (a tap read at dilation 1 or a
    transposed filter moves most outputs by ~0.5)."""
    p, h, w = shape["images"], shape["H"], shape["W"]
    return {"in": rng.uniform(-1.0, 1.0, (p, h, w)).astype(np.float32),
            "taps": rng.uniform(-1.0, 1.0, KW * KW).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    p, h, w = shape["images"], shape["H"], shape["W"]
    oh, ow = h - (KW - 1) * DIL, w - (KW - 1) * DIL
    x = np.asarray(inputs["in"], dtype=np.float64).reshape(p, h, w)
    t = np.asarray(inputs["taps"], dtype=np.float64).reshape(KW, KW)
    out = np.zeros((p, oh, ow))
    for r in range(KW):
        for c in range(KW):
            out += t[r, c] * x[:, r * DIL:r * DIL + oh, c * DIL:c * DIL + ow]
    return {"out": out.astype(np.float32)}
