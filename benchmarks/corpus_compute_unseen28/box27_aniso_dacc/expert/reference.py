"""numpy reference for box27_aniso_dacc: one sweep of the anisotropic 27-point box smoother
(weights [a, 1 - 2a, a] along each axis, multiplied), boundary copied, in float64 from the float field, rounded to float."""

from __future__ import annotations

import numpy as np

AX, AY, AZ = 0.25, 0.125, 0.0625  # the kernel.toml scalars (exact in float)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A field in [0, 1] (neighbouring values unrelated: a misplaced tap shows)."""
    nx, ny, nz = shape["nx"], shape["ny"], shape["nz"]
    return {"in": rng.uniform(0.0, 1.0, (nz, ny, nx)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nx, ny, nz = shape["nx"], shape["ny"], shape["nz"]
    f = np.asarray(inputs["in"], dtype=np.float64).reshape(nz, ny, nx)
    w = [np.array([a, 1.0 - 2.0 * a, a]) for a in (AZ, AY, AX)]
    out = f.copy()
    acc = np.zeros((nz - 2, ny - 2, nx - 2))
    for k in range(3):
        for j in range(3):
            for i in range(3):
                acc += w[0][k] * w[1][j] * w[2][i] * f[k:k + nz - 2, j:j + ny - 2, i:i + nx - 2]
    out[1:-1, 1:-1, 1:-1] = acc
    return {"out": out.astype(np.float32)}
