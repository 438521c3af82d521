"""numpy reference for lambertw_halley_f64: the principal Lambert W by the kernel's Halley
iteration in float64 from the float32 inputs, rounded to float32."""

from __future__ import annotations

import numpy as np

MAX_ITER, TOL = 40, 1e-14


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x log-uniform in [1e-12, 1e6] (a few below 1e-10: the early return), and some zeros."""
    n = shape["n"]
    x = np.exp(rng.uniform(np.log(1e-12), np.log(1e6), n))
    x[rng.random(n) < 0.05] = 0.0
    return {"x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(-1)
    v = np.log1p(x)
    live = x >= 1e-10
    for _ in range(MAX_ITER):
        if not live.any():
            break
        idx = np.flatnonzero(live)
        ev = np.exp(v[idx])
        f = v[idx] * ev - x[idx]
        fp = ev * (v[idx] + 1.0)
        fpp = ev * (v[idx] + 2.0)
        step = f / (fp - f * fpp / (2.0 * fp))
        v[idx] -= step
        live[idx[np.abs(step) <= TOL * (1.0 + v[idx])]] = False
    w = np.where(x < 1e-10, x, v)
    return {"w": w.astype(np.float32)}
