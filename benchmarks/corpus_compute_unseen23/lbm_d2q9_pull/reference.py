"""numpy reference for lbm_d2q9_pull: the pull (np.roll of each plane by its velocity), the
moments and the BGK collision in float64 from the float32 populations and omega, rounded to
float32."""

from __future__ import annotations

import numpy as np

OMEGA = np.float32("1.7")  # kernel.toml's scalar omega, as the kernel receives it
CX = np.array([0, 1, 0, -1, 0, 1, -1, -1, 1])
CY = np.array([0, 0, 1, 0, -1, 1, 1, -1, -1])
WQ = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Near-equilibrium populations: density 1 +- 0.05 and velocities of about 0.05 a site,
    each population perturbed by 1% (no two planes alike, every site's moments its own)."""
    nx, ny = shape["nx"], shape["ny"]
    rho = 1.0 + rng.uniform(-0.05, 0.05, (ny, nx))
    ux, uy = rng.uniform(-0.06, 0.06, (2, ny, nx))
    cu = CX[:, None, None] * ux + CY[:, None, None] * uy
    feq = WQ[:, None, None] * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * (ux * ux + uy * uy))
    f = feq * (1.0 + rng.uniform(-0.01, 0.01, feq.shape))
    return {"f_in": f.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nx, ny = shape["nx"], shape["ny"]
    f_in = np.asarray(inputs["f_in"], dtype=np.float64).reshape(9, ny, nx)
    f = np.stack([np.roll(f_in[q], (CY[q], CX[q]), axis=(0, 1)) for q in range(9)])
    rho = f.sum(axis=0)
    ux = (CX[:, None, None] * f).sum(axis=0) / rho
    uy = (CY[:, None, None] * f).sum(axis=0) / rho
    cu = CX[:, None, None] * ux + CY[:, None, None] * uy
    feq = WQ[:, None, None] * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * (ux * ux + uy * uy))
    out = f - float(OMEGA) * (f - feq)
    return {"f_out": out.astype(np.float32)}
