"""numpy reference for nbody_accel: softened gravitational accelerations in float64."""

from __future__ import annotations

import numpy as np

EPS2 = 1e-3  # the kernel's softening (float32 1e-3f: the difference is below the tolerance)
CHUNK = 512  # bodies a step (a CHUNK x n block of float64 pair weights)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Positions ~ U(0, 1)^3, masses ~ U(0.5, 1.5) / n (a total near 1, so accelerations
    stay O(1) at every n)."""
    n = shape["n"]
    bodies = np.empty((n, 4), dtype=np.float32)
    bodies[:, :3] = rng.uniform(0.0, 1.0, size=(n, 3))
    bodies[:, 3] = rng.uniform(0.5, 1.5, size=n) / n
    return {"bodies": bodies}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """acc_i = sum_j w_ij (p_j - p_i), w_ij = m_j (r_ij^2 + EPS2)^(-3/2): a matrix product
    W P minus (row sums of W) p_i, CHUNK rows of W at a time."""
    n = shape["n"]
    b = np.asarray(inputs["bodies"]).astype(np.float64).reshape(n, 4)
    p, m = b[:, :3], b[:, 3]
    eps2 = float(np.float32(EPS2))
    sq = (p * p).sum(axis=1)
    acc = np.empty((n, 3))
    for at in range(0, n, CHUNK):
        pi = p[at:at + CHUNK]
        r2 = sq[at:at + CHUNK, None] + sq[None, :] + eps2
        r2 -= 2.0 * (pi @ p.T)
        inv = np.sqrt(r2, out=r2)
        np.reciprocal(inv, out=inv)
        w = inv * inv
        w *= inv
        w *= m[None, :]
        acc[at:at + CHUNK] = w @ p - w.sum(axis=1)[:, None] * pi
    return {"acc": acc.astype(np.float32)}
