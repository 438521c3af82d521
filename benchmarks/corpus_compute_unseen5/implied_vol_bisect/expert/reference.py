"""Inputs and numpy reference for implied_vol_bisect: call prices made from known
volatilities in float64, and the volatility each price implies, found again in float64 by
bisection on [0.01, 2] run to the end (50 halvings).

Prices are those of the kernel's own model: Black-Scholes with the Abramowitz-Stegun normal
CDF (26.2.17, within 7.5e-8 of the exact CDF), so the kernel's root and this one differ by
float32 rounding only (an expert config that takes the library's exact CDF moves a price by
at most 100 * 7.5e-8 and its root by about 1e-6). All vectorised: the timed shapes' inputs
take seconds, not minutes.
"""

from __future__ import annotations

import numpy as np

RATE, VOL_LO, VOL_HI = 0.03, 0.01, 2.0
_POLY = (1.330274429, -1.821255978, 1.781477937, -0.356563782, 0.319381530)


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    """The kernel's normal CDF in float64: the polynomial tail, mirrored for x >= 0."""
    a = np.abs(x)
    k = 1.0 / (1.0 + 0.2316419 * a)
    poly = np.zeros_like(k)
    for c in _POLY:
        poly = poly * k + c
    tail = 0.3989422804 * np.exp(-0.5 * a * a) * k * poly
    return np.where(x >= 0.0, 1.0 - tail, tail)


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
    # the per-option terms of _call, once
    drift, root_t = np.log(spot / strike) + RATE * years, np.sqrt(years)
    disc_k = strike * np.exp(-RATE * years)
    lo, hi = np.full_like(price, VOL_LO), np.full_like(price, VOL_HI)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        d1 = (drift + 0.5 * mid * mid * years) / (mid * root_t)
        high = spot * _norm_cdf(d1) - disc_k * _norm_cdf(d1 - mid * root_t) > price
        hi = np.where(high, mid, hi)
        lo = np.where(high, lo, mid)
    return {"vol": (0.5 * (lo + hi)).astype(np.float32)}
