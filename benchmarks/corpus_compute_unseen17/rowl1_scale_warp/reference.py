"""numpy reference for rowl1_scale_warp: each ragged row's sum of |x| by np.add.reduceat in
float64 (empty rows sum to zero), each element scaled by 1 / (sum + 1e-6)."""

from __future__ import annotations

import numpy as np

EPS = 1e-6


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ U(-1, 1); row boundaries at sorted uniform cuts of rows * avg (first 0, last the
    total), so lengths vary from empty to a few times the average."""
    rows, total = shape["rows"], shape["rows"] * shape["avg"]
    cuts = np.sort(rng.integers(0, total + 1, size=rows - 1))
    offs = np.concatenate(([0], cuts, [total])).astype(np.int32)
    return {"x": rng.uniform(-1.0, 1.0, size=total).astype(np.float32), "offs": offs}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, total = shape["rows"], shape["rows"] * shape["avg"]
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(total)
    offs = np.asarray(inputs["offs"], dtype=np.int64).reshape(rows + 1)
    lengths = np.diff(offs)
    sums = np.zeros(rows, dtype=np.float64)
    nonempty = lengths > 0
    sums[nonempty] = np.add.reduceat(np.abs(x), offs[:-1][nonempty])
    scale = 1.0 / (sums.astype(np.float32).astype(np.float64) + EPS)
    return {"out": (x * np.repeat(scale, lengths)).astype(np.float32)}
