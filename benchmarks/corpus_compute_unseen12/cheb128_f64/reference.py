"""numpy reference for cheb128_f64: the Chebyshev series in float64 at the clamped points."""

from __future__ import annotations

import numpy as np

NCOEF = 128
LO, HI = -2.0, 3.0


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ U(-2.5, 3.5) (a tenth of the points past either end of the interval); c[j] ~
    U(-1, 1) / (j + 1), a decaying series."""
    x = rng.uniform(-2.5, 3.5, size=shape["n"]).astype(np.float32)
    c = rng.uniform(-1.0, 1.0, size=NCOEF) / (np.arange(NCOEF) + 1.0)
    return {"x": x, "c": c.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(shape["n"])
    c = np.asarray(inputs["c"]).astype(np.float64).reshape(NCOEF)
    t = np.clip((2.0 * x - (LO + HI)) / (HI - LO), -1.0, 1.0)
    return {"y": np.polynomial.chebyshev.chebval(t, c).astype(np.float32)}
