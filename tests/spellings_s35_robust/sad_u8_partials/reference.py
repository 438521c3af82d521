"""Inputs and numpy reference for sad_u8_partials: the partials of the kernel as written
(block b: elements b * 256 + t + k * stride), zero in the slots past its grid; compared by
their sum (the grid sets the layout), exactly (integers)."""

from __future__ import annotations

import numpy as np

THREADS, MAX_BLOCKS, SLOTS = 256, 1024, 1024


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    a = rng.integers(0, 256, n)
    b = np.clip(a + rng.integers(-20, 21, n), 0, 255)
    return {"a": a.astype(np.uint8), "b": b.astype(np.uint8)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    d = np.abs(np.asarray(inputs["a"], dtype=np.int64) - np.asarray(inputs["b"], dtype=np.int64))
    blocks = min(-(-n // THREADS), MAX_BLOCKS)
    owner = (np.arange(n) // THREADS) % blocks
    out = np.zeros(SLOTS, dtype=np.int64)
    out[:blocks] = np.bincount(owner, weights=d, minlength=blocks).astype(np.int64)
    return {"partial": out.astype(np.uint32)}
