"""numpy reference for quintic_newton_f64: the same first guess and Newton steps in float64,
each value dropped from the iteration once its step falls under the tolerance, rounded to
float32."""

from __future__ import annotations

import numpy as np

MAXIT = 60
TOL = 1.0e-14


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """a of either sign with magnitudes log-uniform over [1e-3, 1e8] (both guess branches)."""
    n = shape["n"]
    a = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-3.0, 8.0, n)
    return {"a": a.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    t = np.asarray(inputs["a"], dtype=np.float64).reshape(shape["n"])
    x = np.where(np.abs(t) > 1.0, np.copysign(np.sqrt(np.sqrt(np.abs(t))), t), t)
    live = np.arange(t.size)
    for _ in range(MAXIT):
        if live.size == 0:
            break
        xs, ts = x[live], t[live]
        x4 = (xs * xs) * (xs * xs)
        dx = (x4 * xs + xs - ts) / (5.0 * x4 + 1.0)
        xs = xs - dx
        x[live] = xs
        live = live[np.abs(dx) > TOL * (1.0 + np.abs(xs))]
    return {"y": x.astype(np.float32)}
