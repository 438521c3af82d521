"""Inputs and numpy reference for varcoef7_zmarch: one explicit variable-coefficient
diffusion step, 7 points, face coefficients the mean of the two cells' k, in float64; the
box's faces copy u."""

from __future__ import annotations

import numpy as np

DT = 0.05  # the kernel.toml scalar


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u in [0, 1]; k in [0.5, 1.5] (dt * the six faces' k at most 0.45: a stable step)."""
    nx, ny, nz = shape["nx"], shape["ny"], shape["nz"]
    return {"u": rng.uniform(0.0, 1.0, (nz, ny, nx)).astype(np.float32),
            "k": rng.uniform(0.5, 1.5, (nz, ny, nx)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nx, ny, nz = shape["nx"], shape["ny"], shape["nz"]
    u = np.asarray(inputs["u"], dtype=np.float64).reshape(nz, ny, nx)
    k = np.asarray(inputs["k"], dtype=np.float64).reshape(nz, ny, nx)
    out = u.copy()
    c = (slice(1, -1),) * 3
    uc, kc = u[c], k[c]
    flux = np.zeros_like(uc)
    for axis in (2, 1, 0):
        for step in (-1, 1):
            nb = tuple(slice(1 + step, nz - 1 + step if a == 0 else (ny - 1 + step if a == 1
                                                                       else nx - 1 + step))
                       if a == axis else slice(1, -1) for a in range(3))
            flux += 0.5 * (kc + k[nb]) * (u[nb] - uc)
    out[c] = uc + np.float64(np.float32(DT)) * flux
    return {"out": out.astype(np.float32)}
