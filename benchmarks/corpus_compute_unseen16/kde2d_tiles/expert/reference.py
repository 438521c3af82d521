"""numpy reference for kde2d_tiles: the weighted Gaussian sum in float32 (each term within
a few ulps of float64's; the dot product with the weights sums in blocks), chunked over
queries, each chunk against every point at once."""

from __future__ import annotations

import numpy as np

INV_TWO_H2 = 8.0


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Queries and points ~ U(0, 4)^2; weights ~ U(0, 1)."""
    return {"query": rng.uniform(0.0, 4.0, size=(shape["nq"], 2)).astype(np.float32),
            "pts": rng.uniform(0.0, 4.0, size=(shape["npts"], 2)).astype(np.float32),
            "w": rng.uniform(0.0, 1.0, size=shape["npts"]).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    q = np.asarray(inputs["query"], dtype=np.float32).reshape(shape["nq"], 2)
    p = np.asarray(inputs["pts"], dtype=np.float32).reshape(shape["npts"], 2)
    w = np.asarray(inputs["w"], dtype=np.float32)
    out = np.empty(shape["nq"], dtype=np.float32)
    step = max(1, (1 << 20) // max(1, shape["npts"]))
    for lo in range(0, shape["nq"], step):
        dx = q[lo:lo + step, 0, None] - p[None, :, 0]
        dy = q[lo:lo + step, 1, None] - p[None, :, 1]
        d2 = dx * dx
        d2 += dy * dy
        d2 *= np.float32(-INV_TWO_H2)
        np.exp(d2, out=d2)
        out[lo:lo + step] = d2 @ w
    return {"density": out}
