"""numpy reference for pearson_cm_tiled: the centred column products in float64, scaled by
the given per-column scales, rounded to float32 (R column-major: stored as its transpose,
which is R itself, symmetric up to rounding)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Columns of a shared factor plus noise (correlations spread over (-1, 1)); mu the
    columns' float means, sc their inverse centred norms."""
    n, p = shape["n"], shape["p"]
    factor = rng.standard_normal(n)
    loads = rng.uniform(-1.0, 1.0, p)
    x = (loads[:, None] * factor[None, :] + rng.standard_normal((p, n))
         + rng.uniform(-3.0, 3.0, (p, 1))).astype(np.float32)
    mu = x.astype(np.float64).mean(axis=1).astype(np.float32)
    centred = x.astype(np.float64) - mu[:, None].astype(np.float64)
    sc = (1.0 / np.sqrt((centred * centred).sum(axis=1))).astype(np.float32)
    return {"x": x, "mu": mu, "sc": sc}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, p = shape["n"], shape["p"]
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(p, n)
    mu = np.asarray(inputs["mu"], dtype=np.float64).reshape(p)
    sc = np.asarray(inputs["sc"], dtype=np.float64).reshape(p)
    centred = x - mu[:, None]
    r = (centred @ centred.T) * sc[:, None] * sc[None, :]
    return {"r": r.T.astype(np.float32)}
