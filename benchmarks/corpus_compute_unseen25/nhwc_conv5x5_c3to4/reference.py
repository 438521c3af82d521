"""numpy reference for nhwc_conv5x5_c3to4: the zero-padded 5 x 5 cross-correlation of each
NHWC RGB image with the four output channels' weights (the kernel's ``__constant__`` arrays
``wts`` [4][5][5][3] and ``bias`` [4], inputs), in float64."""

from __future__ import annotations

import numpy as np

KS, CIN, COUT = 5, 3, 4


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Pixels in [0, 1]; weights in [-0.5, 0.5], no two alike (a transposed or mirrored
    filter, or swapped channels, moves most outputs); biases in [-1, 1]."""
    n, h, w = shape["n"], shape["H"], shape["W"]
    return {"in": rng.uniform(0.0, 1.0, (n, h, w, CIN)).astype(np.float32),
            "wts": rng.uniform(-0.5, 0.5, (COUT, KS, KS, CIN)).astype(np.float32),
            "bias": rng.uniform(-1.0, 1.0, COUT).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, h, w = shape["n"], shape["H"], shape["W"]
    img = np.asarray(inputs["in"], dtype=np.float64).reshape(n, h, w, CIN)
    wts = np.asarray(inputs["wts"], dtype=np.float64).reshape(COUT, KS, KS, CIN)
    bias = np.asarray(inputs["bias"], dtype=np.float64).reshape(COUT)
    r = KS // 2
    pad = np.zeros((n, h + 2 * r, w + 2 * r, CIN))
    pad[:, r:r + h, r:r + w] = img
    out = np.broadcast_to(bias, (n, h, w, COUT)).copy()
    for dy in range(KS):
        for dx in range(KS):
            out += pad[:, dy:dy + h, dx:dx + w, :] @ wts[:, dy, dx, :].T
    return {"out": out.astype(np.float32)}
