"""numpy reference for gmm_loglik_k16: the mixture's float constants, the quadratic forms and
the log-sum-exp in float64, rounded to float32."""

from __future__ import annotations

import numpy as np

MX = [1.687, 0.635, 1.259, -2.465, 0.784, 2.885, -0.46, -2.326,
      2.75, 1.056, -1.817, 1.032, 2.956, -1.743, 2.123, 1.193]
MY = [-1.67, -1.891, 2.725, -0.957, -0.352, 0.937, -0.358, -2.998,
      -1.438, -0.167, 1.568, 0.638, -0.419, -1.854, 1.708, -1.877]
PA = [2.35819, 2.45292, 1.63382, 2.50399, 5.12128, 4.94858, 1.48385, 4.50959,
      10.384, 5.26617, 0.948458, 1.8701, 1.93812, 3.61471, 1.18084, 8.71559]
PB = [1.88061, 3.07013, 0.281986, -0.281235, -1.06101, -0.725657, 0.551785, 2.168,
      0.361281, 3.07848, -1.43343, -2.86142, -1.28103, 1.32511, -0.695692, 4.051]
PC = [2.82165, 14.1947, 1.33672, 0.755523, 1.35749, 7.44809, 1.64856, 3.96318,
      0.798878, 11.7951, 12.5261, 11.0696, 3.57543, 1.32106, 1.9409, 3.12816]
CHUNK = 1 << 18
LC = [-4.75511, -2.91464, -4.61557, -4.11921, -3.66271, -2.79584, -4.25296, -3.05612,
      -3.36235, -3.59778, -3.14676, -3.57041, -4.19654, -3.8283, -4.04434, -3.27233]


def _const(values: list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).astype(np.float64)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Points uniform over [-4.5, 4.5]^2 (over the components and beyond them)."""
    return {"xy": rng.uniform(-4.5, 4.5, (shape["n"], 2)).astype(np.float32)}


def _loglik(xy: np.ndarray) -> np.ndarray:
    tables = [_const(t) for t in (MX, MY, PA, PB, PC, LC)]
    terms = []
    for mx, my, pa, pb, pc, lc in zip(*tables, strict=True):
        dx, dy = xy[:, 0] - mx, xy[:, 1] - my
        terms.append(lc - 0.5 * (pa * dx * dx + 2.0 * pb * dx * dy + pc * dy * dy))
    stacked = np.stack(terms)
    top = stacked.max(axis=0)
    return top + np.log(np.exp(stacked - top).sum(axis=0))


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """In chunks of 256 K points (the 16 terms of a chunk stay small)."""
    xy = np.asarray(inputs["xy"], dtype=np.float64).reshape(shape["n"], 2)
    ll = np.empty(shape["n"], dtype=np.float32)
    for lo in range(0, shape["n"], CHUNK):
        ll[lo:lo + CHUNK] = _loglik(xy[lo:lo + CHUNK])
    return {"ll": ll}
