"""numpy reference for lambertw_halley: the principal branch W0(x), w exp(w) = x, in float64."""

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


def _w0(x: np.ndarray) -> np.ndarray:
    """W0 of float64 ``x``: the kernel's three starts, then eight Halley steps (each start
    is within ~1e-2 of the root, so the cubic steps reach float64 rounding in three or
    four)."""
    w = np.empty_like(x)
    near, far = x < -0.32, x >= 3.0
    mid = ~near & ~far
    p = np.sqrt(np.maximum(2.0 * (np.e * x[near] + 1.0), 0.0))
    w[near] = -1.0 + p * (1.0 + p * (-1.0 / 3.0 + p * (11.0 / 72.0)))
    lm = np.log1p(x[mid])
    w[mid] = lm * (1.0 - np.log1p(lm) / (2.0 + lm))
    l1 = np.log(x[far])
    l2 = np.log(l1)
    w[far] = l1 - l2 + l2 / l1
    for _ in range(8):
        ew = np.exp(w)
        f = w * ew - x
        wp1 = np.maximum(w + 1.0, 1e-300)
        w -= f / (ew * wp1 - (w + 2.0) * f / (2.0 * wp1))
    return w


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """In slices of 2^20 elements (the float64 temporaries of a whole large shape would
    take gigabytes)."""
    x = np.asarray(inputs["x"]).reshape(-1)
    w = np.empty(x.size, dtype=np.float32)
    for at in range(0, x.size, 1 << 20):
        w[at:at + (1 << 20)] = _w0(x[at:at + (1 << 20)].astype(np.float64))
    return {"w": w}
