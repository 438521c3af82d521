"""numpy reference for kepler_solve: the root E of E - e sin E = M, in float64 (Newton from
pi, which converges for every e < 1, run to a fixed point)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Mean anomalies uniform in [0, 2 pi) and eccentricities uniform in [0, 0.95), so both
    starting branches (e above and below 0.8) are taken."""
    n = shape["n"]
    return {"mean_anom": rng.uniform(0.0, 2.0 * np.pi, size=n).astype(np.float32),
            "ecc": rng.uniform(0.0, 0.95, size=n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    mean = inputs["mean_anom"].astype(np.float64)
    ecc = inputs["ecc"].astype(np.float64)
    anom = np.full_like(mean, np.pi)
    for _ in range(60):
        anom = anom - (anom - ecc * np.sin(anom) - mean) / (1.0 - ecc * np.cos(anom))
    return {"ecc_anom": anom.astype(np.float32)}
