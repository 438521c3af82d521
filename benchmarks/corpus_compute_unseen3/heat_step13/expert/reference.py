"""numpy reference for heat_step13: out = u + r * L4(u) inside, u on the 2-point boundary,
with L4 the fourth-order 13-point Laplacian (-1, 16, -30, 16, -1) / 12 along each axis."""

from __future__ import annotations

import numpy as np

R = 0.1  # kernel.toml's r


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A smooth field plus noise: a value with its neighbours nearly cancelling (smooth)
    checks the stencil's arithmetic, the noise checks that every neighbour is the right
    one."""
    nx, ny, nz = shape["nx"], shape["ny"], shape["nz"]
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    smooth = np.sin(0.3 * x) * np.cos(0.2 * y) + 0.5 * np.sin(0.25 * z + 0.1 * x)
    return {"u": (smooth + 0.1 * rng.standard_normal((nz, ny, nx))).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    u = inputs["u"].astype(np.float64)
    out = u.copy()
    c = u[2:-2, 2:-2, 2:-2]
    lap = -90.0 / 12.0 * c
    for axis in range(3):
        for offset, coef in ((-2, -1.0), (-1, 16.0), (1, 16.0), (2, -1.0)):
            lap = lap + coef / 12.0 * np.roll(u, -offset, axis=axis)[2:-2, 2:-2, 2:-2]
    out[2:-2, 2:-2, 2:-2] = c + R * lap
    return {"out": out.astype(np.float32)}
