"""numpy reference for diffuse7_var: one explicit variable-coefficient diffusion step,
interior cells only (the boundary layer is copied)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u ~ N(0, 1) and a stable coefficient field kappa in [0.01, 0.15] (below 1/6)."""
    dims = (shape["nz"], shape["ny"], shape["nx"])
    return {"u": rng.standard_normal(dims, dtype=np.float32),
            "kappa": rng.uniform(0.01, 0.15, size=dims).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    dims = (shape["nz"], shape["ny"], shape["nx"])
    u = inputs["u"].astype(np.float64).reshape(dims)
    kappa = inputs["kappa"].astype(np.float64).reshape(dims)
    out = u.copy()
    inner = (slice(1, -1),) * 3
    lap = (u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
           + u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] - 6.0 * u[inner])
    out[inner] = u[inner] + kappa[inner] * lap
    return {"u_next": out.astype(np.float32)}
