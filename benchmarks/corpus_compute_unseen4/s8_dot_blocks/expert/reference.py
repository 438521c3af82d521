"""Inputs, golden partials and verification for s8_dot_blocks: the dot product of two int8
vectors split over a fixed grid of 264 blocks (grid-stride), one partial per block.

Which elements a block takes is the launch's (its block count and size), so a config is
right when its 264 partials add up to the dot product, not when each matches the kernel as
written. Inputs in [-8, 8]: a term is at most 64 in size and a partial stays far inside
int32 for every grid the expert space allows (512 MB over 66 blocks: at most 2^28 per
partial); the sum is exact. A dropped or repeated element changes the total unless its
term is 0 (x or y zero: about 1 element in 9).
"""

from __future__ import annotations

import numpy as np

NUM_BLOCKS, BLOCK = 264, 256  # the kernel as written


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    return {"x": rng.integers(-8, 9, size=n).astype(np.int8),
            "y": rng.integers(-8, 9, size=n).astype(np.int8)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written: element i goes to block (i // BLOCK) % NUM_BLOCKS."""
    n = shape["n"]
    terms = inputs["x"].astype(np.int64) * inputs["y"].astype(np.int64)
    owner = (np.arange(n) // BLOCK) % NUM_BLOCKS
    partial = np.bincount(owner, weights=terms, minlength=NUM_BLOCKS)
    return {"partial": np.rint(partial).astype(np.int32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The 264 written partials add up to the golden total, exactly (every config writes
    every slot: blocks beyond its grid are written as 0)."""
    got = np.asarray(outputs["partial"]).astype(np.int64).reshape(-1)
    want = np.asarray(golden["partial"]).astype(np.int64).reshape(-1)
    assert got.size == want.size, f"partial: {got.size} slots, expected {want.size}"
    total, expected = int(got.sum()), int(want.sum())
    assert total == expected, (f"partial: the {got.size} partials add up to {total}; "
                               f"expected {expected} (difference {total - expected:+d})")
