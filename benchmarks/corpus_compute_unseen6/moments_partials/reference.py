"""Inputs, golden partials and verification for moments_partials: per chunk of 4096
elements of x, the sum and the sum of squares (the host adds the chunks' partials).

How many chunks a block takes is the launch's, so a config is right when its partials add up
to the totals, not when each matches the kernel as written. Values ~ N(1.5, 1): both totals
are far from zero, and a dropped or repeated element moves the sum by about 1.5 in 1.5 n
and the sum of squares by about 3 in 3.25 n, far above the float32 rounding of the partials
(each within 2^-24 of its double sum: a relative error of the totals near 1e-8)."""

from __future__ import annotations

import numpy as np

CHUNK = 4096  # the kernel as written


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": (1.5 + rng.standard_normal(shape["n"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written: element i goes to chunk i // CHUNK."""
    n = shape["n"]
    x = inputs["x"].astype(np.float64).reshape(-1)
    owner = np.arange(n) // CHUNK
    slots = -(-n // CHUNK)
    return {"sums": np.bincount(owner, weights=x, minlength=slots).astype(np.float32),
            "sumsq": np.bincount(owner, weights=x * x, minlength=slots).astype(np.float32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """Each output's partials add up to the golden total within 1e-6 of it (every config
    writes every slot: the slots of chunks a block took beside its first are written 0)."""
    for name in ("sums", "sumsq"):
        got = np.asarray(outputs[name]).astype(np.float64).reshape(-1)
        want = np.asarray(golden[name]).astype(np.float64).reshape(-1)
        assert got.size == want.size, f"{name}: {got.size} slots, expected {want.size}"
        assert np.isfinite(got).all(), f"{name}: {int((~np.isfinite(got)).sum())} slots unwritten or not finite"
        total, expected = float(got.sum()), float(want.sum())
        assert abs(total - expected) <= 1e-6 * abs(expected), (
            f"{name}: the {got.size} partials add up to {total!r}; expected {expected!r} "
            f"(relative difference {(total - expected) / expected:+.3g}, allowed 1e-6)")
