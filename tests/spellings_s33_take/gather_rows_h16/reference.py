"""numpy reference for gather_rows_h16: the table's rows at the int32 ids (half rows), zeros where an id
is outside the table."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A normal table; ids uniform over its rows with about one in twenty -1 and one in
    fifty nsrc (both give zeros)."""
    nsrc, nidx, d = shape["nsrc"], shape["nidx"], shape["D"]
    rows = rng.integers(0, nsrc, nidx).astype(np.int32)
    u = rng.random(nidx)
    rows[u < 0.05] = -1
    rows[(u >= 0.05) & (u < 0.07)] = nsrc
    return {"table": rng.normal(0.0, 1.0, (nsrc, d)).astype(np.float16), "rows": rows}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nsrc, nidx, d = shape["nsrc"], shape["nidx"], shape["D"]
    table = np.asarray(inputs["table"], dtype=np.float16).reshape(nsrc, d)
    rows = np.asarray(inputs["rows"]).astype(np.int64).reshape(nidx)
    valid = (rows >= 0) & (rows < nsrc)
    dst = np.zeros((nidx, d), dtype=np.float16)
    dst[valid] = table[rows[valid]]
    return {"dst": dst}
