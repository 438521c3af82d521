"""Inputs, golden partials and verification for normpair_partials: per-block partials of
the L1 norm (accumulated in double, written as float) and the max norm of a float vector,
combined on the host.

How the grid-stride loop deals elements to blocks is the launch's, so a config is right when
its written sums add up to the L1 norm and its written maxima reach the max norm, not when
each slot matches the kernel as written. The L1 total is compared within a relative 1e-6:
every term is positive (no cancellation), each block sums in double and rounds its partial
to float once (~6e-8 of it), while a dropped or doubled element moves the total by 4e-6 of
itself or more (the smallest |x| at the check shape is 0.05, the total ~1.2e4); the max is
a max of exact values and compares exactly (a planted peak of 1e3 sits once in the
vector, so losing its element shows)."""

from __future__ import annotations

import numpy as np

THREADS, MAX_BLOCKS, PER_BLOCK = 256, 1024, 1024  # the kernel as written
SLOTS = 1024  # each row of the partial buffer: room for any config's grid
RTOL = 1e-6


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Residual-like values: signed magnitudes uniform in [0.05, 1] and one peak of -1000
    at a position near 2 / 3 of the vector."""
    n = shape["n"]
    mag = rng.uniform(0.05, 1.0, n)
    x = np.where(rng.random(n) < 0.5, -mag, mag)
    x[(2 * n) // 3] = -1000.0
    return {"x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written (block b: elements b * 256 + t + k * stride);
    NaN in the slots past its grid (unwritten)."""
    n = shape["n"]
    a = np.abs(np.asarray(inputs["x"], dtype=np.float64).reshape(-1))
    blocks = min(-(-n // PER_BLOCK), MAX_BLOCKS)
    owner = (np.arange(n) // THREADS) % blocks
    out = np.full((2, SLOTS), np.nan)
    out[0, :blocks] = np.bincount(owner, weights=a, minlength=blocks)
    amax = np.zeros(blocks)
    np.maximum.at(amax, owner, a)
    out[1, :blocks] = amax
    return {"partials": out.astype(np.float32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written slots (NaN: unwritten; a config with fewer blocks leaves more) are the
    same in both rows, finite and not negative; the sums add up to the golden total within
    RTOL and the maxima's max is the golden one exactly."""
    got = np.asarray(outputs["partials"], dtype=np.float64).reshape(2, SLOTS)
    want = np.asarray(golden["partials"], dtype=np.float64).reshape(2, SLOTS)
    written = ~np.isnan(got[0])
    assert written.any(), "partials: no partial written"
    assert (written == ~np.isnan(got[1])).all(), "partials: sums and maxima written apart"
    assert np.isfinite(got[:, written]).all(), "partials: an infinite partial"
    assert (got[:, written] >= 0).all(), "partials: a negative partial norm"
    total, expected = float(got[0, written].sum()), float(np.nansum(want[0]))
    assert abs(total - expected) <= RTOL * expected, (
        f"partials: the {int(written.sum())} sums add up to {total!r}; expected {expected!r} "
        f"(relative difference {(total - expected) / expected:+.2e})")
    peak, expected_peak = float(got[1, written].max()), float(np.nanmax(want[1]))
    assert peak == expected_peak, f"partials: max norm {peak!r}; expected {expected_peak!r}"
