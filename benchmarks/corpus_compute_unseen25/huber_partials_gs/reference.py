"""Inputs, golden partials and verification for huber_partials_gs: one partial Huber loss
(delta 1) a block of a grid-stride walk, added on the host.

How the blocks split the elements is the launch's, so a config is right when its partials
add up to the total, not when each matches the kernel as written. The inputs are small
integers held as floats (pred and target in [-6, 6]): every term is 0, 0.5 or a half
integer below 12, every partial and the total (below 2^22 at the check shape, 12 an
element at most) are exact in float32, so the check is exact; a dropped or repeated
element changes the total unless its term is 0 (pred equal to target, 1 element in 13)."""

from __future__ import annotations

import numpy as np

THREADS, MAX_BLOCKS = 256, 1024  # the kernel as written
SLOTS = 1024  # the partial buffer: room for any config's grid


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    return {"pred": rng.integers(-6, 7, size=n).astype(np.float32),
            "target": rng.integers(-6, 7, size=n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written (element i to block (i // 256) % blocks), in
    float64; NaN in the slots past its grid (unwritten)."""
    n = shape["n"]
    d = np.asarray(inputs["pred"], dtype=np.float64) - np.asarray(inputs["target"],
                                                                  dtype=np.float64)
    a = np.abs(d.reshape(-1))
    terms = np.where(a <= 1.0, 0.5 * a * a, a - 0.5)
    blocks = min(-(-n // THREADS), MAX_BLOCKS)
    owner = (np.arange(n) // THREADS) % blocks
    partial = np.full(SLOTS, np.nan)
    partial[:blocks] = np.bincount(owner, weights=terms, minlength=blocks)
    return {"partial": partial.astype(np.float32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written partials add up to the golden partials' total (exactly: half-integer
    floats). NaN entries count as unwritten slots (the engine's poison is a NaN pattern; a
    config with fewer blocks leaves more slots unwritten)."""
    got = np.asarray(outputs["partial"], dtype=np.float64).reshape(-1)
    want = np.asarray(golden["partial"], dtype=np.float64).reshape(-1)
    assert got.shape == want.shape, f"partial: {got.size} values, expected {want.size}"
    assert not np.isinf(got).any(), "partial: an infinite partial sum"
    written = ~np.isnan(got)
    assert written.any(), "partial: no partial sum written"
    assert (got[written] >= 0.0).all(), "partial: a negative partial sum (corrupt slot)"
    total, expected = float(got[written].sum()), float(want[~np.isnan(want)].sum())
    assert total == expected, (
        f"partial: the {int(written.sum())} partial sums add up to {total:.1f}; "
        f"expected {expected:.1f} (difference {total - expected:+.1f})")
