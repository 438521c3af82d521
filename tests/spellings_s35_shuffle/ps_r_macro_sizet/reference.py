"""numpy reference for ps_r_macro_sizet: the reshape and transpose of
torch.nn.PixelShuffle(2) (an exact copy)."""

from __future__ import annotations

import numpy as np

R = 2


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Distinct values everywhere (a misplaced element always shows)."""
    n, c, h, w = shape["n"], shape["c"], shape["h"], shape["w"]
    size = n * c * R * R * h * w
    values = rng.permutation(size).astype(np.float64) * 0.25 - 1000.0
    return {"x": values.reshape(n, c * R * R, h, w).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, c, h, w = shape["n"], shape["c"], shape["h"], shape["w"]
    x = np.asarray(inputs["x"], dtype=np.float32).reshape(n, c, R, R, h, w)
    return {"out": x.transpose(0, 1, 4, 2, 5, 3).reshape(n, c, h * R, w * R)}
