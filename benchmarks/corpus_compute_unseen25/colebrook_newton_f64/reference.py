"""numpy reference for colebrook_newton_f64: 64 / Re for laminar pipes (Re < 2300), else the
root of the Colebrook-White equation by the kernel's Newton iteration (from x = 8 until a
step is below 1e-12 x), in float64 from the float32 inputs, rounded to float32. Converged
roots agree to a few double ulps whatever the starting point or the step's rounding."""

from __future__ import annotations

import numpy as np

LAMINAR_RE, MAX_STEPS, LN10 = 2300.0, 50, np.log(10.0)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Reynolds numbers log-uniform in [300, 1e8] (about a fifth laminar, scattered: the
    lanes of a warp take both branches); relative roughness 0 for a quarter of the pipes
    (smooth), else log-uniform in [1e-6, 5e-2]."""
    n = shape["n"]
    re = np.exp(rng.uniform(np.log(300.0), np.log(1e8), n))
    rel = np.exp(rng.uniform(np.log(1e-6), np.log(5e-2), n))
    rel[rng.random(n) < 0.25] = 0.0
    return {"Re": re.astype(np.float32), "rel": rel.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    re = np.asarray(inputs["Re"], dtype=np.float64).reshape(-1)
    rel = np.asarray(inputs["rel"], dtype=np.float64).reshape(-1)
    a, b = rel / 3.7, 2.51 / re
    x = np.full(re.size, 8.0)
    live = np.ones(re.size, dtype=bool)
    for _ in range(MAX_STEPS):
        if not live.any():
            break
        arg = a[live] + b[live] * x[live]
        g = x[live] + 2.0 * np.log10(arg)
        dg = 1.0 + 2.0 * b[live] / (arg * LN10)
        dx = g / dg
        x[live] -= dx
        idx = np.flatnonzero(live)
        live[idx[np.abs(dx) < 1e-12 * x[idx]]] = False
    f = np.where(re < LAMINAR_RE, 64.0 / re, 1.0 / (x * x))
    return {"f": f.astype(np.float32)}
