"""numpy reference for jacobi7_poisson_flat: one Jacobi sweep of -lap(u) = f on a box,
(sum of the six neighbours + h2 f) / 6 inside, u kept on the faces, in float64."""

from __future__ import annotations

import numpy as np

H2 = 0.01  # the kernel.toml scalar


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u in [0, 1] (faces included: a face read as a neighbour matters), f in [-50, 50]
    (h2 f of the neighbours' order: a dropped or doubled source shows)."""
    dims = (shape["nz"], shape["ny"], shape["nx"])
    return {"u": rng.uniform(0.0, 1.0, dims).astype(np.float32),
            "f": rng.uniform(-50.0, 50.0, dims).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nz, ny, nx = shape["nz"], shape["ny"], shape["nx"]
    u = np.asarray(inputs["u"], dtype=np.float64).reshape(nz, ny, nx)
    f = np.asarray(inputs["f"], dtype=np.float64).reshape(nz, ny, nx)
    h2 = np.float64(np.float32(H2))
    out = u.copy()
    c = (slice(1, -1),) * 3
    nb = (u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
          + u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1])
    out[c] = (nb + h2 * f[c]) / 6.0
    return {"u_new": out.astype(np.float32)}
