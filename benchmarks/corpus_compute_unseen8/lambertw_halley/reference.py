"""numpy reference for lambertw_halley: the principal branch W0(x), w exp(w) = x, in float64
(Halley steps from a float64 start until they stop moving)."""

from __future__ import annotations

import numpy as np

BRANCH = -np.exp(-1.0)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A quarter of x in [-1/e + 2e-5, 0) (the branch-point series), a quarter in [0, 3)
    (the log1p start), half log-uniform in [3, 1e6] (the asymptotic start), shuffled so
    every warp takes several branches; a few exact zeros and branch boundaries."""
    n = shape["n"]
    q = n // 4
    low = rng.uniform(BRANCH + 2e-5, 0.0, size=q)
    mid = rng.uniform(0.0, 3.0, size=q)
    high = np.exp(rng.uniform(np.log(3.0), np.log(1e6), size=n - 2 * q))
    x = rng.permutation(np.concatenate([low, mid, high]))
    x[::101] = 0.0
    x[50::101] = -0.32
    x[75::101] = 3.0
    return {"x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(-1)
    w = np.where(x < 1.0, np.log1p(np.maximum(x, BRANCH + 1e-12)) * 0.5,
                 np.log(np.maximum(x, 1.0)))
    near = x < -0.3
    p = np.sqrt(np.maximum(2.0 * (np.e * x[near] + 1.0), 0.0))
    w[near] = -1.0 + p - p * p / 3.0
    for _ in range(60):
        ew = np.exp(w)
        f = w * ew - x
        wp1 = np.maximum(w + 1.0, 1e-300)
        w = w - f / (ew * wp1 - (w + 2.0) * f / (2.0 * wp1))
    return {"w": w.astype(np.float32)}
