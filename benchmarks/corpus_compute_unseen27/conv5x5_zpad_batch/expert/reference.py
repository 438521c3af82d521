"""numpy reference for conv5x5_zpad_batch: the 5 x 5 convolution (filter flipped) of each
float plane with the kernel's ``__constant__`` weights ``c_weights`` [5, 5] (an input),
zero padding, in float64."""

from __future__ import annotations

import numpy as np

KS = 5


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Planes in [-1, 1]; weights in [-1, 1], no two alike (an unflipped or transposed
    filter moves most outputs by ~0.5)."""
    p, h, w = shape["planes"], shape["height"], shape["width"]
    return {"in": rng.uniform(-1.0, 1.0, (p, h, w)).astype(np.float32),
            "c_weights": rng.uniform(-1.0, 1.0, (KS, KS)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    p, h, w = shape["planes"], shape["height"], shape["width"]
    x = np.asarray(inputs["in"], dtype=np.float64).reshape(p, h, w)
    wt = np.asarray(inputs["c_weights"], dtype=np.float64).reshape(KS, KS)
    r = KS // 2
    pad = np.pad(x, ((0, 0), (r, r), (r, r)))
    out = np.zeros((p, h, w))
    # out[y][x] += w[i][j] * in[y + r - i][x + r - j]: padded row y + 2r - i
    for i in range(KS):
        for j in range(KS):
            out += wt[i, j] * pad[:, 2 * r - i:2 * r - i + h, 2 * r - j:2 * r - j + w]
    return {"out": out.astype(np.float32)}
