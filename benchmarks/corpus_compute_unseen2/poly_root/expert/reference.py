"""Inputs and numpy reference for poly_root: per element the root in [0, 1] of
p_sel(x) = y. The polynomial table is the kernel's ``__constant__`` array ``coef`` (an
input, per the kernel-folder contract)."""

from __future__ import annotations

import numpy as np

NPOLY, DEG = 8, 7


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Eight increasing polynomials on [0, 1]: p(0) = 0, a slope at 0 in [0.05, 1] (some
    nearly flat near 0, so Newton overshoots and the bisection branch runs) and higher
    coefficients in [0, 1]; per element a polynomial chosen at random (so the lanes of a
    warp read different table rows and take different branches and step counts) and a
    target y = u * p(1), u uniform in [0.001, 0.999]."""
    n = shape["n"]
    table = np.zeros((NPOLY, DEG + 1))
    table[:, 1] = rng.uniform(0.05, 1.0, NPOLY)
    table[:, 2:] = rng.uniform(0.0, 1.0, (NPOLY, DEG - 1))
    table = table.astype(np.float32)
    sel = rng.integers(0, NPOLY, size=n).astype(np.int32)
    top = table.astype(np.float64).sum(axis=1)[sel]
    y = (rng.uniform(0.001, 0.999, n) * top).astype(np.float32)
    return {"y": y, "sel": sel, "coef": table.reshape(-1)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """float64 bisection to 2^-50 (each polynomial is increasing, so the root is unique and
    well conditioned: the slope is at least 0.05)."""
    table = inputs["coef"].astype(np.float64).reshape(NPOLY, DEG + 1)
    c = table[inputs["sel"].astype(np.int64)]
    target = inputs["y"].astype(np.float64)
    lo, hi = np.zeros_like(target), np.ones_like(target)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        p = np.zeros_like(mid)
        for k in range(DEG, -1, -1):
            p = p * mid + c[:, k]
        below = p < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return {"root": (0.5 * (lo + hi)).astype(np.float32)}
