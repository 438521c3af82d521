"""numpy reference for bessel_i0_series: numpy's float64 I0 at the points."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ U(-30, 30): I0 from 1 up to ~7.8e11, from a few terms up to ~45."""
    return {"x": rng.uniform(-30.0, 30.0, size=shape["n"]).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(shape["n"])
    return {"y": np.i0(x).astype(np.float32)}
