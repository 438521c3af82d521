"""Inputs and numpy reference for implied_vol_bisect: call prices made from known
volatilities in float64, and the volatility each price implies, found again in float64
(bisection on [0.01, 2] run to the end, the exact normal CDF)."""

from __future__ import annotations

import math

import numpy as np

RATE, VOL_LO, VOL_HI = 0.03, 0.01, 2.0


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    return 0.5 * erfc(-x / math.sqrt(2.0))


def _call(spot: np.ndarray, strike: np.ndarray, years: np.ndarray, vol: np.ndarray) -> np.ndarray:
    root_t = np.sqrt(years)
    d1 = (np.log(spot / strike) + (RATE + 0.5 * vol * vol) * years) / (vol * root_t)
    d2 = d1 - vol * root_t
    return spot * _norm_cdf(d1) - strike * np.exp(-RATE * years) * _norm_cdf(d2)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Strike 100, spot in [90, 110], 0.25 to 2 years and volatilities in [0.15, 0.8]: every
    price lies inside the bracket and has a vega of at least about 5."""
    n = shape["n"]
    spot = rng.uniform(90.0, 110.0, size=n).astype(np.float32)
    strike = np.full(n, 100.0, dtype=np.float32)
    years = rng.uniform(0.25, 2.0, size=n).astype(np.float32)
    vol = rng.uniform(0.15, 0.8, size=n)
    price = _call(spot.astype(np.float64), strike.astype(np.float64), years.astype(np.float64),
                  vol)
    return {"price": price.astype(np.float32), "spot": spot, "strike": strike, "years": years}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    price, spot, strike, years = (inputs[k].astype(np.float64).reshape(-1)
                                  for k in ("price", "spot", "strike", "years"))
    lo, hi = np.full_like(price, VOL_LO), np.full_like(price, VOL_HI)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        high = _call(spot, strike, years, mid) > price
        hi = np.where(high, mid, hi)
        lo = np.where(high, lo, mid)
    return {"vol": (0.5 * (lo + hi)).astype(np.float32)}
