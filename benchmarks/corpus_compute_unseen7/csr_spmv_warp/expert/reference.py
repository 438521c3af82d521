"""Inputs and numpy reference for csr_spmv_warp: y = A x for a CSR matrix in float64.

make_inputs builds a valid CSR matrix with exactly nnz nonzeros: row lengths drawn with
skewed (log-normal) weights, about one row in twelve empty, columns uniform over cols."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols, nnz = shape["rows"], shape["cols"], shape["nnz"]
    weights = rng.lognormal(0.0, 1.0, size=rows)
    weights[rng.random(rows) < 1.0 / 12.0] = 0.0
    weights[rows // 2] = max(weights.max(), 1e-9) * 4.0  # one long row (> 64 in small)
    lengths = rng.multinomial(nnz, weights / weights.sum())
    row_ptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=row_ptr[1:])
    return {"row_ptr": row_ptr.astype(np.int32),
            "col_idx": rng.integers(0, cols, size=nnz, dtype=np.int32),
            "vals": rng.uniform(-1.0, 1.0, size=nnz).astype(np.float32),
            "x": rng.standard_normal(cols, dtype=np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows = shape["rows"]
    row_ptr = inputs["row_ptr"].astype(np.int64).reshape(-1)
    products = inputs["vals"].astype(np.float64) * inputs["x"].astype(np.float64)[
        inputs["col_idx"].astype(np.int64)]
    owner = np.repeat(np.arange(rows), np.diff(row_ptr))
    return {"y": np.bincount(owner, weights=products, minlength=rows).astype(np.float32)}
