"""numpy reference for redblack_red_sweep: the red interior points from their four
neighbours in float64, every other point copied."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u ~ U(-1, 1); f ~ U(-1, 1)."""
    size = (shape["ny"], shape["nx"])
    return {"u": rng.uniform(-1.0, 1.0, size=size).astype(np.float32),
            "f": rng.uniform(-1.0, 1.0, size=size).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    ny, nx = shape["ny"], shape["nx"]
    u = np.asarray(inputs["u"]).astype(np.float64).reshape(ny, nx)
    f = np.asarray(inputs["f"]).astype(np.float64).reshape(ny, nx)
    out = u.copy()
    s = u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1]
    new = 0.25 * (s + f[1:-1, 1:-1])
    yy, xx = np.indices((ny - 2, nx - 2)) + 1
    red = (xx + yy) % 2 == 0
    out[1:-1, 1:-1] = np.where(red, new, u[1:-1, 1:-1])
    return {"out": out.astype(np.float32)}
