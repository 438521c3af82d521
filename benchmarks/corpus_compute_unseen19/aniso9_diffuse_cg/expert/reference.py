"""numpy reference for aniso9_diffuse_cg: u padded by one clamped cell, the nine shifted
views, the update in float32 in the kernel's order."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u uniform in [0, 1]; kx, ky in [0.2, 1]; kxy in [-0.3, 0.3] (a stable step)."""
    ny, nx = shape["ny"], shape["nx"]
    return {"u": rng.uniform(0.0, 1.0, (ny, nx)).astype(np.float32),
            "kx": rng.uniform(0.2, 1.0, (ny, nx)).astype(np.float32),
            "ky": rng.uniform(0.2, 1.0, (ny, nx)).astype(np.float32),
            "kxy": rng.uniform(-0.3, 0.3, (ny, nx)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    ny, nx = shape["ny"], shape["nx"]
    kx, ky, kxy = (np.asarray(inputs[k], dtype=np.float32).reshape(ny, nx)
                   for k in ("kx", "ky", "kxy"))
    p = np.pad(np.asarray(inputs["u"], dtype=np.float32).reshape(ny, nx), 1, mode="edge")

    def at(dy: int, dx: int) -> np.ndarray:
        return p[1 + dy:1 + dy + ny, 1 + dx:1 + dx + nx]

    c, two = at(0, 0), np.float32(2.0)
    dxx = at(0, -1) + at(0, 1) - two * c
    dyy = at(-1, 0) + at(1, 0) - two * c
    dxy = at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)
    lap = kx * dxx + ky * dyy + np.float32(0.25) * kxy * dxy
    return {"out": c + np.float32(0.1) * lap}
