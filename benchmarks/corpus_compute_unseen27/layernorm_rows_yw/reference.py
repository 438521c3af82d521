"""numpy reference for layernorm_rows_yw: each row of x normalised by its mean and its
(biased) variance plus eps, then scaled by gamma and shifted by beta, in float64."""

from __future__ import annotations

import numpy as np

EPS = 1e-5  # the kernel.toml scalar


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Rows with their own offset in [-2, 2] and spread in [0.5, 2] (a row's mean and
    variance matter); gamma in [0.5, 1.5], beta in [-0.5, 0.5]."""
    r, c = shape["rows"], shape["cols"]
    offset = rng.uniform(-2.0, 2.0, (r, 1))
    spread = rng.uniform(0.5, 2.0, (r, 1))
    return {"x": (offset + spread * rng.standard_normal((r, c))).astype(np.float32),
            "gamma": rng.uniform(0.5, 1.5, c).astype(np.float32),
            "beta": rng.uniform(-0.5, 0.5, c).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    r, c = shape["rows"], shape["cols"]
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(r, c)
    g = np.asarray(inputs["gamma"], dtype=np.float64).reshape(1, c)
    b = np.asarray(inputs["beta"], dtype=np.float64).reshape(1, c)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    eps = np.float64(np.float32(EPS))
    return {"y": ((x - mean) / np.sqrt(var + eps) * g + b).astype(np.float32)}
