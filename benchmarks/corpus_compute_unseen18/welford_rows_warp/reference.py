"""numpy reference for welford_rows_warp: each row's mean and population variance in
float64, rounded to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Values uniform in [2, 4) (mean 3, variance 1/3), so a lost shift shows."""
    x = rng.random((shape["rows"], shape["cols"]), dtype=np.float32) * 2.0 + 2.0
    return {"x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(shape["rows"], shape["cols"])
    mean = x.mean(axis=1)
    var = np.empty_like(mean)
    for lo in range(0, shape["rows"], 4096):
        var[lo:lo + 4096] = np.mean((x[lo:lo + 4096] - mean[lo:lo + 4096, None]) ** 2, axis=1)
    return {"mean_out": mean.astype(np.float32), "var_out": var.astype(np.float32)}
