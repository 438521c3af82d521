"""numpy reference for lnbwd_colpartials: the rows padded with zeros to whole blocks of 64,
then each block's column sums of dy * xhat and of dy, in float64."""

from __future__ import annotations

import numpy as np

ROWS_PER_BLOCK = 64


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """dy ~ N(0, 1); xhat ~ N(0, 1) (normalized activations)."""
    size = (shape["rows"], shape["cols"])
    return {"dy": rng.standard_normal(size=size).astype(np.float32),
            "xhat": rng.standard_normal(size=size).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    blocks = -(-rows // ROWS_PER_BLOCK)
    dy = np.zeros((blocks * ROWS_PER_BLOCK, cols), dtype=np.float64)
    xh = np.zeros_like(dy)
    dy[:rows] = np.asarray(inputs["dy"]).reshape(rows, cols)
    xh[:rows] = np.asarray(inputs["xhat"]).reshape(rows, cols)
    dy3 = dy.reshape(blocks, ROWS_PER_BLOCK, cols)
    xh3 = xh.reshape(blocks, ROWS_PER_BLOCK, cols)
    return {"dgamma_part": (dy3 * xh3).sum(axis=1).astype(np.float32),
            "dbeta_part": dy3.sum(axis=1).astype(np.float32)}
