"""numpy reference for planck_band_frac: the kernel's band fraction F(lam_hi T) -
F(lam_lo T) in float64 (the same two regimes: the small-x expansion below x = 2, the
exponential series, summed to convergence, from 2 up), 0 where T <= 0."""

from __future__ import annotations

import numpy as np

LAM_LO, LAM_HI = 1.0, 10.0  # the kernel.toml scalars (um)
C2 = np.float64(np.float32(14387.769))
K15 = np.float64(np.float32(0.15398973382026503))


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Temperatures log-uniform over 150 to 8000 K (x from 0.18 to 96: both regimes, series
    of 1 to ~12 terms) and every 61st one at or below zero (the early-out)."""
    n = shape["n"]
    t = np.exp(rng.uniform(np.log(150.0), np.log(8000.0), n))
    t[::61] = -rng.uniform(0.0, 10.0, t[::61].shape)
    t[7::122] = 0.0
    return {"T": t.astype(np.float32)}


def _below(lt: np.ndarray) -> np.ndarray:
    x = C2 / lt
    x2 = x * x
    poly = 1 / 3 - x / 8 + x2 / 60 - x2 ** 2 / 5040 + x2 ** 3 / 272160 - x2 ** 4 / 13305600
    small = 1.0 - K15 * x * x2 * poly
    big = np.zeros_like(x)
    for k in range(1, 80):
        inv = 1.0 / k
        big += np.exp(-k * x) * inv * (x ** 3 + 3 * x2 * inv + 6 * x * inv ** 2 + 6 * inv ** 3)
    return np.where(x < 2.0, small, K15 * big)


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    t = np.asarray(inputs["T"], dtype=np.float64).reshape(-1)
    hot = t > 0
    safe = np.where(hot, t, 1.0)
    lo = np.float64(np.float32(LAM_LO)) * safe
    hi = np.float64(np.float32(LAM_HI)) * safe
    frac = np.where(hot, _below(hi) - _below(lo), 0.0)
    return {"frac": frac.astype(np.float32)}
