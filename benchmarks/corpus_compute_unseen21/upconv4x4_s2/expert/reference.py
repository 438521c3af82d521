"""numpy reference for upconv4x4_s2: each of the 16 taps scatters its channel mix of the
input (a matrix product in float64) onto the strided output grid, padding cropped, rounded
to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs uniform in [-1, 1], weights in [-0.25, 0.25]."""
    c, k, h, w = shape["C"], shape["K"], shape["H"], shape["W"]
    return {"in": rng.uniform(-1.0, 1.0, (c, h, w)).astype(np.float32),
            "w": rng.uniform(-0.25, 0.25, (c, k, 4, 4)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    c, k, h, w = shape["C"], shape["K"], shape["H"], shape["W"]
    x = np.asarray(inputs["in"], dtype=np.float64).reshape(c, h * w)
    wt = np.asarray(inputs["w"], dtype=np.float64).reshape(c, k, 4, 4)
    # padded output: row oy + 1 = 2 iy + ky, column ox + 1 = 2 ix + kx
    padded = np.zeros((k, 2 * h + 2, 2 * w + 2))
    for ky in range(4):
        for kx in range(4):
            mixed = (wt[:, :, ky, kx].T @ x).reshape(k, h, w)
            padded[:, ky:ky + 2 * h:2, kx:kx + 2 * w:2] += mixed
    return {"out": padded[:, 1:1 + 2 * h, 1:1 + 2 * w].astype(np.float32)}
