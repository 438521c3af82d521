"""numpy reference for take_rows_i64: the table's rows at the indices, zeros where an index
is outside the table (padding)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A normal table; indices uniform over its rows (repeats included) with about one in
    twenty -1 (padding) and one in fifty nsrc (past the end: also zeros)."""
    nsrc, nidx, d = shape["nsrc"], shape["nidx"], shape["D"]
    idx = rng.integers(0, nsrc, nidx).astype(np.int64)
    u = rng.random(nidx)
    idx[u < 0.05] = -1
    idx[(u >= 0.05) & (u < 0.07)] = nsrc
    return {"src": rng.normal(0.0, 1.0, (nsrc, d)).astype(np.float32), "idx": idx}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nsrc, nidx, d = shape["nsrc"], shape["nidx"], shape["D"]
    src = np.asarray(inputs["src"], dtype=np.float32).reshape(nsrc, d)
    idx = np.asarray(inputs["idx"]).astype(np.int64).reshape(nidx)
    valid = (idx >= 0) & (idx < nsrc)
    out = np.zeros((nidx, d), dtype=np.float32)
    out[valid] = src[idx[valid]]
    return {"out": out}
