"""numpy reference for raysphere_f64: the same ray-sphere test in float64 over every ray and
sphere (in ray chunks), the nearest positive hit or -1, rounded to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Origins on the plane z = -20 (x, y in [-8, 8]) aimed at points of the box the spheres
    fill (x, y in [-7, 7], z in [-1, 11]), so about half the rays hit one; 64 spheres of radius
    0.3 to 1.2 centred in [-6, 6] x [-6, 6] x [0, 10], every origin outside them all."""
    n = shape["n"]
    origin = np.stack([rng.uniform(-8.0, 8.0, n), rng.uniform(-8.0, 8.0, n),
                       np.full(n, -20.0)], axis=1)
    target = np.stack([rng.uniform(-7.0, 7.0, n), rng.uniform(-7.0, 7.0, n),
                       rng.uniform(-1.0, 11.0, n)], axis=1)
    direction = target - origin
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    rays = np.concatenate([origin, direction], axis=1).astype(np.float32)
    spheres = np.stack([rng.uniform(-6.0, 6.0, 64), rng.uniform(-6.0, 6.0, 64),
                        rng.uniform(0.0, 10.0, 64), rng.uniform(0.3, 1.2, 64)], axis=1)
    return {"rays": rays, "spheres": spheres.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    rays = np.asarray(inputs["rays"], dtype=np.float64).reshape(n, 6)
    s = np.asarray(inputs["spheres"], dtype=np.float64).reshape(64, 4)
    cx, cy, cz, r2 = s[:, 0], s[:, 1], s[:, 2], s[:, 3] ** 2
    out = np.empty(n, dtype=np.float64)
    for lo in range(0, n, 16384):
        ox, oy, oz, dx, dy, dz = (rays[lo:lo + 16384, k:k + 1] for k in range(6))
        px, py, pz = ox - cx, oy - cy, oz - cz
        b = px * dx + py * dy + pz * dz
        disc = b * b - (px * px + py * py + pz * pz - r2)
        t = -b - np.sqrt(np.maximum(disc, 0.0))
        t[(disc < 0.0) | (t <= 0.0)] = np.inf
        best = t.min(axis=1)
        best[np.isinf(best)] = -1.0
        out[lo:lo + 16384] = best
    return {"out": out.astype(np.float32)}
