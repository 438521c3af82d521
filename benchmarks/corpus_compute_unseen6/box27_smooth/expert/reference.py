"""numpy reference for box27_smooth: one pass of the 27-point box stencil (centre 0.28,
faces 0.06, edges 0.02, corners 0.015) on interior cells, the boundary layer copied."""

from __future__ import annotations

import numpy as np

WEIGHTS = {0: 0.28, 1: 0.06, 2: 0.02, 3: 0.015}


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    dims = (shape["nz"], shape["ny"], shape["nx"])
    return {"in": rng.standard_normal(dims, dtype=np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nz, ny, nx = shape["nz"], shape["ny"], shape["nx"]
    u = inputs["in"].astype(np.float64).reshape(nz, ny, nx)
    out = u.copy()
    acc = np.zeros((nz - 2, ny - 2, nx - 2))
    for dz in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                weight = WEIGHTS[(dx != 0) + (dy != 0) + (dz != 0)]
                acc += weight * u[1 + dz:nz - 1 + dz, 1 + dy:ny - 1 + dy, 1 + dx:nx - 1 + dx]
    out[1:-1, 1:-1, 1:-1] = acc
    return {"out": out.astype(np.float32)}
