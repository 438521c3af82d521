"""numpy reference for digamma_f64: psi(x) in float64 by the same identities with a higher
shift (the recurrence walks x up to 20 and the series keeps two more terms), so it does
not reproduce the kernel's rounding, only the function."""

from __future__ import annotations

import numpy as np

SHIFT_TO = 20.0
#: B_2k / (2k) for k = 1..7: the series' coefficients of x^-2k
SERIES = (1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A fifth of x in (-8, 0) at least 0.02 from every pole (the reflection), half in
    (0, 10) (the recurrence, 0 to 10 steps), the rest log-uniform in [10, 1e4] (the series
    alone), shuffled so every warp takes several paths; a few exact integers and 10."""
    n = shape["n"]
    neg = rng.uniform(-8.0, 0.0, size=n // 5)
    frac = neg - np.floor(neg)
    neg = np.where(frac < 0.02, neg + 0.02, np.where(frac > 0.98, neg - 0.02, neg))
    mid = rng.uniform(1e-3, 10.0, size=n // 2)
    high = np.exp(rng.uniform(np.log(10.0), np.log(1e4), size=n - n // 5 - n // 2))
    x = rng.permutation(np.concatenate([neg, mid, high]))
    x[::97] = 1.0
    x[40::97] = 10.0
    x[70::97] = 3.0
    return {"x": x.astype(np.float32)}


def _psi(x: np.ndarray) -> np.ndarray:
    """psi of float64 ``x`` (no pole in it)."""
    result = np.zeros_like(x)
    neg = x <= 0.0
    result[neg] = -np.pi / np.tan(np.pi * x[neg])
    x = np.where(neg, 1.0 - x, x)
    # the recurrence on the elements below the shift only, each for its own count of steps
    low = np.flatnonzero(x < SHIFT_TO)
    start = x[low]
    steps = np.ceil(SHIFT_TO - start).astype(np.int64)
    order = np.argsort(-steps, kind="stable")  # the longest walks first: a prefix stays live
    low, start, steps = low[order], start[order], steps[order]
    shifted = np.zeros_like(start)
    for k in range(int(steps[0]) if steps.size else 0):
        live = int(np.searchsorted(-steps, -k, side="left"))  # steps > k
        shifted[:live] += 1.0 / (start[:live] + k)
    result[low] -= shifted
    x[low] = start + steps
    r2 = 1.0 / (x * x)
    series = np.zeros_like(x)
    for c in reversed(SERIES):
        series = (series + c) * r2
    return result + np.log(x) - 0.5 / x - series


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """In slices of 2^20 elements (the float64 temporaries of a whole large shape would
    take gigabytes)."""
    x = np.asarray(inputs["x"]).reshape(-1)
    psi = np.empty(x.size, dtype=np.float32)
    for at in range(0, x.size, 1 << 20):
        psi[at:at + (1 << 20)] = _psi(x[at:at + (1 << 20)].astype(np.float64))
    return {"psi": psi}
