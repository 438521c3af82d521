"""numpy reference for prandtl_smooth_f64: 64 / Re for laminar pipes (Re < 2300), else the
root of the Prandtl-von Karman smooth-pipe law by the kernel's Newton iteration in float64
from the float32 inputs, rounded to float32."""

from __future__ import annotations

import numpy as np

STEPS, TWO_OVER_LN10 = 40, 2.0 / np.log(10.0)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Reynolds numbers log-uniform in [300, 1e8] (about a fifth laminar, scattered)."""
    n = shape["count"]
    re = np.exp(rng.uniform(np.log(300.0), np.log(1e8), n))
    return {"reynolds": re.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    re = np.asarray(inputs["reynolds"], dtype=np.float64).reshape(-1)
    c = 2.0 * np.log10(re) - 0.8
    x = np.full(re.size, 8.0)
    live = np.ones(re.size, dtype=bool)
    for _ in range(STEPS):
        if not live.any():
            break
        idx = np.flatnonzero(live)
        step = (x[idx] + TWO_OVER_LN10 * np.log(x[idx]) - c[idx]) / (TWO_OVER_LN10 / x[idx] + 1.0)
        x[idx] -= step
        live[idx[~(np.abs(step) > 1e-12 * x[idx])]] = False
    f = np.where(re < 2300.0, 64.0 / re, 1.0 / (x * x))
    return {"fric": f.astype(np.float32)}
