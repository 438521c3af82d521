"""numpy reference for row_firsthits_warp: per row, the first 16 columns whose entry is
above 0.95 (the float32 constant), -1 padded, and the number of such entries."""

from __future__ import annotations

import numpy as np

MAX_HITS = 16
THRESHOLD = np.float32(0.95)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Entries uniform in [0, 1), about one in twenty above the threshold; every seventh row
    scaled by 0.9 so it has no hit at all."""
    x = rng.uniform(0.0, 1.0, (shape["rows"], shape["cols"])).astype(np.float32)
    x[::7] *= np.float32(0.9)
    return {"x": x}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    above = np.asarray(inputs["x"], dtype=np.float32).reshape(rows, cols) > THRESHOLD
    count = above.sum(axis=1).astype(np.int32)
    # each hit's rank within its row; hits of rank < MAX_HITS land in that slot
    rank = np.cumsum(above, axis=1) - 1
    keep = above & (rank < MAX_HITS)
    hits = np.full((rows, MAX_HITS), -1, dtype=np.int32)
    r, c = np.nonzero(keep)
    hits[r, rank[r, c]] = c
    return {"hits": hits, "count": count}
