"""numpy reference for d2s_nhwc_exit: depth-to-space by 2 of an NHWC tensor (DCR order, as
TensorFlow's depth_to_space; an exact copy)."""

from __future__ import annotations

import numpy as np

R = 2


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Distinct values everywhere (a misplaced element always shows)."""
    n, c, h, w = shape["n"], shape["c"], shape["h"], shape["w"]
    size = n * h * w * R * R * c
    values = rng.permutation(size).astype(np.float64) * 0.25 - 1000.0
    return {"x": values.reshape(n, h, w, R * R * c).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, c, h, w = shape["n"], shape["c"], shape["h"], shape["w"]
    x = np.asarray(inputs["x"], dtype=np.float32).reshape(n, h, w, R, R, c)
    return {"out": x.transpose(0, 1, 3, 2, 4, 5).reshape(n, h * R, w * R, c)}
