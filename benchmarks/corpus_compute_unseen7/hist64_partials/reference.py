"""Inputs, golden partial histograms and verification for hist64_partials: per chunk of
8192 elements of x, the counts in 64 bins of width 1/8 over [-4, 4), ends clamped.

How many chunks a block takes is the launch's, so a config is right when its rows add up
to the per-bin totals, not when each row matches the kernel as written. The bin is computed
in float32 exactly as the kernel does (floor((x + 4) * 8)), so the totals are exact."""

from __future__ import annotations

import numpy as np

CHUNK, BINS = 8192, 64  # the kernel as written


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ N(0.3, 1.3^2) (most counts in a few central bins, as real data crowds them, and a
    few percent past either end); every 97th value sits exactly on a bin edge."""
    n = shape["n"]
    x = 0.3 + 1.3 * rng.standard_normal(n)
    x[::97] = np.round(x[::97] * 8.0) / 8.0
    return {"x": x.astype(np.float32)}


def _bins(x: np.ndarray) -> np.ndarray:
    scaled = (x.astype(np.float32) - np.float32(-4.0)) * np.float32(8.0)
    return np.clip(np.floor(scaled), 0, BINS - 1).astype(np.int64)


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The rows of the kernel as written: element i goes to row i // CHUNK."""
    n = shape["n"]
    x = np.asarray(inputs["x"]).reshape(-1)
    rows = -(-n // CHUNK)
    flat = (np.arange(n) // CHUNK) * BINS + _bins(x)
    counts = np.bincount(flat, minlength=rows * BINS).reshape(rows, BINS)
    return {"counts": counts.astype(np.int32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The rows add up to the golden per-bin totals exactly; every row is written (a count
    outside [0, n] is an unwritten or corrupt slot)."""
    n = shape["n"]
    got = np.asarray(outputs["counts"]).astype(np.int64).reshape(-1, BINS)
    want = np.asarray(golden["counts"]).astype(np.int64).reshape(-1, BINS)
    assert got.shape == want.shape, f"counts: {got.shape[0]} rows, expected {want.shape[0]}"
    odd = (got < 0) | (got > n)
    assert not odd.any(), (f"counts: {int(odd.sum())} slots outside [0, {n}] (unwritten?), "
                           f"first at row, bin {np.argwhere(odd)[0].tolist()}")
    total, expected = got.sum(axis=0), want.sum(axis=0)
    wrong = np.nonzero(total != expected)[0]
    assert wrong.size == 0, (f"counts: {wrong.size} of {BINS} bins differ, first bin "
                             f"{int(wrong[0])}: {int(total[wrong[0]])}, expected "
                             f"{int(expected[wrong[0]])}")
