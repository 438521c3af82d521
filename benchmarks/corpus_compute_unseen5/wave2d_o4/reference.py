"""numpy reference for wave2d_o4: one leapfrog step of the 2-D wave equation with the
fourth-order 9-point star, points within 2 of an edge kept."""

from __future__ import annotations

import numpy as np

C2 = 0.2  # kernel.toml's c2


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    dims = (shape["ny"], shape["nx"])
    return {"u": rng.standard_normal(dims, dtype=np.float32),
            "u_prev": rng.standard_normal(dims, dtype=np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    ny, nx = shape["ny"], shape["nx"]
    u = inputs["u"].astype(np.float64).reshape(ny, nx)
    prev = inputs["u_prev"].astype(np.float64).reshape(ny, nx)
    out = u.copy()
    c = u[2:-2, 2:-2]
    lap_x = (-u[2:-2, :-4] + 16 * u[2:-2, 1:-3] - 30 * c + 16 * u[2:-2, 3:-1] - u[2:-2, 4:]) / 12
    lap_y = (-u[:-4, 2:-2] + 16 * u[1:-3, 2:-2] - 30 * c + 16 * u[3:-1, 2:-2] - u[4:, 2:-2]) / 12
    out[2:-2, 2:-2] = 2 * c - prev[2:-2, 2:-2] + C2 * (lap_x + lap_y)
    return {"u_next": out.astype(np.float32)}
