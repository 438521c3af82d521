"""Inputs and numpy reference for bond_yield_tpl_f64: the same Newton steps in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Prices 70..130 with coupons 1..8 over 1..60 periods; every 23rd price zero."""
    n = shape["n"]
    price = rng.uniform(70.0, 130.0, n)
    price[::23] = 0.0
    return {"price": price.astype(np.float32),
            "coupon": rng.uniform(1.0, 8.0, n).astype(np.float32),
            "periods": rng.integers(1, 61, n).astype(np.int32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    p = np.asarray(inputs["price"], dtype=np.float64)
    c = np.asarray(inputs["coupon"], dtype=np.float64)
    m = np.asarray(inputs["periods"]).astype(np.float64)
    bad = (p <= 0.0) | (m <= 0)
    p1 = np.where(bad, 100.0, p)
    m1 = np.where(bad, 1.0, m)
    y = (c + (100.0 - p1) / m1) / ((100.0 + p1) * 0.5)
    done = np.zeros(p.shape, dtype=bool)
    for _ in range(40):
        v = 1.0 / (1.0 + y)
        vm = v**m1
        f = c * (1.0 - vm) / y + 100.0 * vm - p1
        df = -c * (1.0 - vm) / (y * y) + (c / y - 100.0) * m1 * vm * v
        step = np.where(done, 0.0, f / df)
        y = y - step
        done |= np.abs(step) < 1e-12
    return {"ytm": np.where(bad, -1.0, y).astype(np.float32)}
