"""numpy reference for lorenz_rk2_f64: the same 256 explicit-midpoint steps in float64 over
every trajectory at once, rounded to float32."""

from __future__ import annotations

import numpy as np

SIGMA, BETA, DT, STEPS = 10.0, 8.0 / 3.0, 0.002, 256


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Starting states in [-15, 15] x [-20, 20] x [5, 40] (around the attractor) and rho in
    [20, 35]."""
    n = shape["n"]
    state = np.stack([rng.uniform(-15.0, 15.0, n), rng.uniform(-20.0, 20.0, n),
                      rng.uniform(5.0, 40.0, n)], axis=1)
    return {"state": state.astype(np.float32),
            "rho": rng.uniform(20.0, 35.0, n).astype(np.float32)}


def _rhs(x: np.ndarray, y: np.ndarray, z: np.ndarray,
         rho: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return SIGMA * (y - x), x * (rho - z) - y, x * y - BETA * z


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    s = np.asarray(inputs["state"], dtype=np.float64).reshape(n, 3)
    x, y, z = s[:, 0].copy(), s[:, 1].copy(), s[:, 2].copy()
    rho = np.asarray(inputs["rho"], dtype=np.float64).reshape(n)
    for _ in range(STEPS):
        kx, ky, kz = _rhs(x, y, z, rho)
        kx, ky, kz = _rhs(x + 0.5 * DT * kx, y + 0.5 * DT * ky, z + 0.5 * DT * kz, rho)
        x += DT * kx
        y += DT * ky
        z += DT * kz
    return {"out": np.stack([x, y, z], axis=1).astype(np.float32)}
