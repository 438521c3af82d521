"""numpy reference for conv3d_c4to8: a zero-padded 3 x 3 x 3 convolution, 4 channels in,
8 out, in float64 (the 108 shifted copies of a slab of planes times the weights, a slab at a
time)."""

from __future__ import annotations

import numpy as np

C_IN, C_OUT = 4, 8
SLAB_VOXELS = 1 << 17  # output voxels a step (108 x that many float64 copies)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Input ~ U(-1, 1), weights ~ U(-0.2, 0.2) (outputs of order 1)."""
    d, h, w = shape["depth"], shape["height"], shape["width"]
    x = rng.uniform(-1.0, 1.0, size=(C_IN, d, h, w)).astype(np.float32)
    wts = rng.uniform(-0.2, 0.2, size=(C_OUT, C_IN, 3, 3, 3)).astype(np.float32)
    return {"in": x, "wts": wts}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    d, h, w = shape["depth"], shape["height"], shape["width"]
    x = np.asarray(inputs["in"]).astype(np.float64).reshape(C_IN, d, h, w)
    wts = np.asarray(inputs["wts"]).astype(np.float64).reshape(C_OUT, C_IN * 27)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (1, 1)))
    out = np.empty((C_OUT, d, h, w))
    planes = max(1, SLAB_VOXELS // (h * w))
    for z0 in range(0, d, planes):
        nz = min(planes, d - z0)
        # rows in the weights' order: channel, then dz, dy, dx
        cols = np.stack([padded[c, z0 + dz:z0 + dz + nz, dy:dy + h, dx:dx + w]
                         for c in range(C_IN) for dz in range(3) for dy in range(3)
                         for dx in range(3)]).reshape(C_IN * 27, -1)
        out[:, z0:z0 + nz] = (wts @ cols).reshape(C_OUT, nz, h, w)
    return {"out": out.astype(np.float32)}
