"""numpy reference for sph_density_tiles: every pair's distance and cubic-spline weight in
float64 from the float32 positions, masses and smoothing length, summed, rounded to float32."""

from __future__ import annotations

import numpy as np

H = np.float32("0.15")  # kernel.toml's scalar h, as the kernel receives it


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Particles uniform in the unit cube (about 34 neighbours within 2h at n = 301), masses
    in [0.5, 1.5]: one float4 (x, y, z, m) a particle."""
    n = shape["n"]
    pm = np.empty((n, 4))
    pm[:, :3] = rng.uniform(0.0, 1.0, (n, 3))
    pm[:, 3] = rng.uniform(0.5, 1.5, n)
    return {"pos_mass": pm.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    pm = np.asarray(inputs["pos_mass"], dtype=np.float64).reshape(n, 4)
    h = float(H)
    sigma = 1.0 / (np.pi * h ** 3)
    rho = np.zeros(n)
    for start in range(0, n, 1024):  # rows in chunks: n x n distances at once is large
        d = pm[start:start + 1024, None, :3] - pm[None, :, :3]
        q = np.sqrt((d * d).sum(axis=2)) / h
        w = np.where(q < 1.0, 1.0 - 1.5 * q ** 2 + 0.75 * q ** 3,
                     np.where(q < 2.0, 0.25 * np.clip(2.0 - q, 0.0, None) ** 3, 0.0))
        rho[start:start + 1024] = sigma * (w * pm[None, :, 3]).sum(axis=1)
    return {"rho": rho.astype(np.float32)}
