"""numpy reference for star13_o2: u zero-padded by two on every side and the twelve shifted
copies summed by ring, in float64."""

from __future__ import annotations

import numpy as np

C0, C1, C2 = 0.5, 0.125, -0.0625


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u ~ U(-1, 1)."""
    return {"u": rng.uniform(-1.0, 1.0,
                             size=(shape["nz"], shape["ny"], shape["nx"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nz, ny, nx = shape["nz"], shape["ny"], shape["nx"]
    p = np.pad(np.asarray(inputs["u"], dtype=np.float64).reshape(nz, ny, nx), 2)
    acc = C0 * p[2:-2, 2:-2, 2:-2]
    for d, c in ((1, C1), (2, C2)):
        ring = (p[2:-2, 2:-2, 2 - d:2 - d + nx] + p[2:-2, 2:-2, 2 + d:2 + d + nx]
                + p[2:-2, 2 - d:2 - d + ny, 2:-2] + p[2:-2, 2 + d:2 + d + ny, 2:-2]
                + p[2 - d:2 - d + nz, 2:-2, 2:-2] + p[2 + d:2 + d + nz, 2:-2, 2:-2])
        acc = acc + c * ring
    return {"out": acc.astype(np.float32)}
