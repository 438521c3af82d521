"""Inputs and verification for colsum_partials: per row chunk, one row of column sums.

How many partial rows there are, and which matrix rows each adds, is the launch's (the
grid's y extent), so a config is right when its partial rows add up, column by column,
to the column sums, not when each partial matches the baseline's. The inputs are small
non-zero integers held as floats: every partial and every column total is exact in
float32 (|sum| <= 8 * nrows, far below 2^24 for these sizes), so the check is exact and
a dropped or repeated element always changes its column's total.
"""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    size = (shape["nrows"], shape["ncols"])
    mag = rng.integers(1, 9, size=size)
    sign = rng.choice(np.array([-1, 1]), size=size)
    return {"mat": (mag * sign).astype(np.float32)}


def _column_totals(partial: np.ndarray, ncols: int, label: str) -> np.ndarray:
    """Sum over the written partial rows (rows of NaN poison are slots never written; a row
    written in part is wrong)."""
    rows = np.asarray(partial, dtype=np.float64).reshape(-1, ncols)
    unwritten = np.isnan(rows)
    whole = unwritten.all(axis=1)
    torn = unwritten.any(axis=1) & ~whole
    assert not torn.any(), (
        f"partial: {label} row {int(np.argmax(torn))} is written in part "
        f"({int(unwritten[np.argmax(torn)].sum())} of {ncols} columns unwritten)")
    kept = rows[~whole]
    assert kept.shape[0] > 0, f"partial: {label} has no partial row written"
    assert np.isfinite(kept).all(), f"partial: {label} holds an infinite partial sum"
    return kept.sum(axis=0)


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written partial rows add up, in every column, to the golden partials' totals
    (exactly: integer-valued floats)."""
    ncols = shape["ncols"]
    got = _column_totals(outputs["partial"], ncols, "the output")
    want = _column_totals(golden["partial"], ncols, "the golden output")
    wrong = np.flatnonzero(np.abs(got - want) > 0.5)
    assert wrong.size == 0, (
        f"partial: {wrong.size} of {ncols} column totals differ; column {int(wrong[0])} adds "
        f"up to {got[wrong[0]]:.1f}, expected {want[wrong[0]]:.1f}")
