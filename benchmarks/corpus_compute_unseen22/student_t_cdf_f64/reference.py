"""numpy reference for student_t_cdf_f64: the same incomplete beta continued fraction
(modified Lentz, the same branch and stopping rule) on every value at once in float64,
each value dropped from the iteration once converged, lgamma from Python's math module;
the result rounded to float32."""

from __future__ import annotations

import math

import numpy as np

MAXIT, EPS, FPMIN = 400, 1.0e-15, 1.0e-300


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """nu log-uniform over [0.5, 500] (fractions of a degree of freedom too), t of either
    sign, mostly within a few units, some far in the tails."""
    n = shape["n"]
    nu = 10.0 ** rng.uniform(np.log10(0.5), np.log10(500.0), n)
    t = rng.standard_normal(n) * rng.choice([0.5, 2.0, 8.0], n)
    return {"t": t.astype(np.float32), "nu": nu.astype(np.float32)}


def _clamp(v: np.ndarray) -> np.ndarray:
    return np.where(np.abs(v) < FPMIN, FPMIN, v)


def _betacf(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 / _clamp(1.0 - qab * x / qap)
    h = d.copy()
    live = np.arange(x.size)
    for m in range(1, MAXIT + 1):
        if live.size == 0:
            break
        al, bl, xl, ql, pl, ml = a[live], b[live], x[live], qab[live], qap[live], qam[live]
        cl, dl, hl = c[live], d[live], h[live]
        m2 = 2 * m
        aa = m * (bl - m) * xl / ((ml + m2) * (al + m2))
        dl = 1.0 / _clamp(1.0 + aa * dl)
        cl = _clamp(1.0 + aa / cl)
        hl = hl * (dl * cl)
        aa = -(al + m) * (ql + m) * xl / ((al + m2) * (pl + m2))
        dl = 1.0 / _clamp(1.0 + aa * dl)
        cl = _clamp(1.0 + aa / cl)
        delta = dl * cl
        hl = hl * delta
        c[live], d[live], h[live] = cl, dl, hl
        live = live[np.abs(delta - 1.0) >= EPS]
    return h


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    t = np.asarray(inputs["t"], dtype=np.float64).reshape(n)
    v = np.asarray(inputs["nu"], dtype=np.float64).reshape(n)
    den = v + t * t
    x, xc = v / den, t * t / den
    a, b = 0.5 * v, np.full(n, 0.5)
    lg = np.vectorize(math.lgamma, otypes=[np.float64])
    with np.errstate(divide="ignore"):
        bt = np.exp(lg(a + b) - lg(a) - lg(b) + a * np.log(x) + b * np.log(xc))
    low = x < (a + 1.0) / (a + b + 2.0)
    ib = np.empty(n)
    ib[low] = bt[low] * _betacf(a[low], b[low], x[low]) / a[low]
    high = ~low
    ib[high] = 1.0 - bt[high] * _betacf(b[high], a[high], xc[high]) / b[high]
    ib = np.where(x <= 0.0, 0.0, np.where(xc <= 0.0, 1.0, ib))
    return {"p": np.where(t > 0.0, 1.0 - 0.5 * ib, 0.5 * ib).astype(np.float32)}
