"""numpy reference for lj_energy_tiles: every pair's Lennard-Jones term within the cutoff in
float64, the self pair left out, summed per particle. Chunked over particles."""

from __future__ import annotations

import numpy as np

CUTOFF2 = 6.25
SPACING = 1.1


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Particles on a cubic lattice of spacing 1.1 filled row by row, each moved by up to
    +-0.1 on every axis (so no two are closer than 0.9 and r^-12 stays moderate)."""
    n = shape["n"]
    side = int(np.ceil(n ** (1.0 / 3.0)))
    idx = np.arange(n)
    grid = np.stack([idx % side, (idx // side) % side, idx // (side * side)], axis=1)
    xyz = grid * SPACING + rng.uniform(-0.1, 0.1, size=(n, 3))
    pos = np.concatenate([xyz, np.zeros((n, 1))], axis=1)
    return {"pos": pos.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    xyz = np.asarray(inputs["pos"]).astype(np.float64).reshape(n, 4)[:, :3]
    sq = (xyz * xyz).sum(axis=1)
    out = np.empty(n, dtype=np.float32)
    step = 1024
    for lo in range(0, n, step):
        # |p - q|^2 by a matrix product (coordinates below ~30: cancellation ~1e-12 in float64)
        r2 = sq[lo:lo + step, None] + sq[None, :] - 2.0 * (xyz[lo:lo + step] @ xyz.T)
        rows = np.arange(lo, min(lo + step, n))
        r2[rows - lo, rows] = np.inf
        inside = r2 < CUTOFF2
        s6 = np.where(inside, 1.0 / np.where(inside, r2, 1.0) ** 3, 0.0)
        out[lo:lo + step] = (4.0 * (s6 * s6 - s6)).sum(axis=1)
    return {"energy": out}
