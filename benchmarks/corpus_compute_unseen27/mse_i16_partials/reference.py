"""Inputs, golden partials and verification for mse_i16_partials: per-block partial sums
of ((test - ref) / 32768)^2 over two int16 signals, added on the host.

How the grid-stride loop deals elements to blocks is the launch's, so a config is right
when its written partials add up to the total, not when each matches the kernel as
written. The total is compared within a relative 1e-5: every term is positive (no
cancellation) and a float sum of a few thousand of them strays ~1e-7 to 1e-6 from the
exact one, while a dropped or doubled element moves the total by 8e-5 of itself or more
(one ordinary element of the 12345 at the check shape is ~8e-5 of it, a planted click
~1e-2)."""

from __future__ import annotations

import numpy as np

THREADS, MAX_BLOCKS = 256, 1024  # the kernel as written
SLOTS = 1024  # the partial buffer: room for any config's grid
RTOL = 1e-5


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """ref: a full-scale signal (uniform over int16); test: ref plus Gaussian noise of
    standard deviation 300 and, every 4099 samples, a click of +4000, clipped to int16 (a
    click weighs ~180 ordinary samples: the total stays ~1.1 at the check shape, one
    ordinary sample ~8e-5 of it)."""
    n = shape["n"]
    ref = rng.integers(-32768, 32768, size=n)
    test = np.clip(ref + np.rint(rng.normal(0.0, 300.0, n)), -32768, 32767)
    test[::4099] += 4000
    test = np.clip(test, -32768, 32767)
    return {"ref": ref.astype(np.int16), "test": test.astype(np.int16)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written (block b: elements b * 256 + t + k * stride),
    in float64; NaN in the slots past its grid (unwritten)."""
    n = shape["n"]
    d = (np.asarray(inputs["test"], dtype=np.float64).reshape(-1)
         - np.asarray(inputs["ref"], dtype=np.float64).reshape(-1)) / 32768.0
    blocks = min(-(-n // THREADS), MAX_BLOCKS)
    owner = (np.arange(n) // THREADS) % blocks
    out = np.full(SLOTS, np.nan)
    out[:blocks] = np.bincount(owner, weights=d * d, minlength=blocks)
    return {"partial": out.astype(np.float32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written partials (NaN: an unwritten slot; a config with fewer blocks leaves more)
    are finite, not negative, and add up to the golden total within RTOL."""
    got = np.asarray(outputs["partial"], dtype=np.float64).reshape(-1)
    want = np.asarray(golden["partial"], dtype=np.float64).reshape(-1)
    assert got.shape == want.shape, f"partial: {got.size} values, expected {want.size}"
    written = ~np.isnan(got)
    assert written.any(), "partial: no partial written"
    assert np.isfinite(got[written]).all(), "partial: an infinite partial sum"
    assert (got[written] >= 0).all(), "partial: a negative partial sum of squares"
    total, expected = float(got[written].sum()), float(np.nansum(want))
    assert abs(total - expected) <= RTOL * expected, (
        f"partial: the {int(written.sum())} partials add up to {total!r}; expected "
        f"{expected!r} (relative difference {(total - expected) / expected:+.2e})")
