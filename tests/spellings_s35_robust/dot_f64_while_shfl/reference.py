"""Inputs, golden partials and verification for dot_f64_while_shfl: the partials of the
kernel as written (block b: elements b * 256 + t + k * stride) in float64, NaN in the slots
past its grid (unwritten). The grid deals the elements to blocks, so a config is right when
its written partials add up to the total (within a relative 1e-5: every term is positive)."""

from __future__ import annotations

import numpy as np

THREADS, MAX_BLOCKS, SLOTS = 256, 1024, 1024
RTOL = 1e-5


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    return {"x": rng.uniform(0.0, 1.0, n).astype(np.float32),
            "y": rng.uniform(0.0, 1.0, n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    t = np.asarray(inputs["x"], dtype=np.float64) * np.asarray(inputs["y"], dtype=np.float64)
    blocks = min(-(-n // THREADS), MAX_BLOCKS)
    owner = (np.arange(n) // THREADS) % blocks
    out = np.full(SLOTS, np.nan)
    out[:blocks] = np.bincount(owner, weights=t, minlength=blocks)
    return {"partial": out.astype(np.float32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written partials (NaN: an unwritten slot) are finite and add up to the golden
    total within RTOL."""
    got = np.asarray(outputs["partial"], dtype=np.float64).reshape(-1)
    want = np.asarray(golden["partial"], dtype=np.float64).reshape(-1)
    assert got.shape == want.shape, f"partial: {got.size} values, expected {want.size}"
    written = ~np.isnan(got)
    assert written.any(), "partial: no partial written"
    assert np.isfinite(got[written]).all(), "partial: an infinite partial sum"
    total, expected = float(got[written].sum()), float(np.nansum(want))
    assert abs(total - expected) <= RTOL * expected, (
        f"partial: the {int(written.sum())} partials add up to {total!r}; expected {expected!r}")
