"""Inputs, golden counts and verification for band_count: how many elements of x lie in
[-0.5, 1.25), one count per chunk of 4096 consecutive elements.

The chunk a block owns is the launch's, so a config is right when its counts add up to
the number of elements in the band, not when each matches the kernel as written. Inputs
~ N(0, 1) with some elements set exactly to the band's ends (-0.5 counts, 1.25 does not)
and the last four inside the band (a dropped ragged tail always shows): about 46 % of the
elements count, so a dropped or repeated element changes the total about every other time,
a dropped or repeated chunk always.
"""

from __future__ import annotations

import numpy as np

CHUNK, LO, HI = 4096, np.float32(-0.5), np.float32(1.25)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    x = rng.standard_normal(n, dtype=np.float32)
    ends = rng.integers(0, n, size=max(1, n // 64))
    x[ends] = np.where(rng.integers(0, 2, size=ends.size) == 1, LO, HI)
    x[-4:] = np.array([0.25, LO, 1.0, -0.25], dtype=np.float32)
    return {"x": x}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The counts of the kernel as written: element i goes to chunk i // 4096."""
    n = shape["n"]
    x = inputs["x"].astype(np.float32).reshape(-1)
    inside = (x >= LO) & (x < HI)
    counts = np.bincount(np.arange(n) // CHUNK, weights=inside, minlength=-(-n // CHUNK))
    return {"counts": np.rint(counts).astype(np.int32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written counts add up to the golden total, exactly (every config writes every
    slot: slots past its grid are written as 0)."""
    got = np.asarray(outputs["counts"]).astype(np.int64).reshape(-1)
    want = np.asarray(golden["counts"]).astype(np.int64).reshape(-1)
    assert got.size == want.size, f"counts: {got.size} slots, expected {want.size}"
    total, expected = int(got.sum()), int(want.sum())
    assert total == expected, (f"counts: the {got.size} counts add up to {total}; "
                               f"expected {expected} (difference {total - expected:+d})")
