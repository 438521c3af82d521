"""numpy reference for cdist_l1_tiled: every pair's L1 distance in float64, a band of x's
rows at a time so the timed shapes stay within memory."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Features ~ U(-1, 1)."""
    return {"x": rng.uniform(-1.0, 1.0, size=(shape["m"], shape["d"])).astype(np.float32),
            "y": rng.uniform(-1.0, 1.0, size=(shape["n"], shape["d"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, d = shape["m"], shape["n"], shape["d"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(m, d)
    y = np.asarray(inputs["y"]).astype(np.float64).reshape(n, d)
    out = np.empty((m, n), dtype=np.float32)
    band = 16
    for i0 in range(0, m, band):
        out[i0:i0 + band] = np.abs(x[i0:i0 + band, None, :] - y[None, :, :]).sum(axis=2)
    return {"dist": out}
