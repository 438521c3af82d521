"""Inputs and numpy reference for collatz_len_u32 (the same steps, vectorised)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Seeds 0..2^20 (every 29th zero)."""
    seeds = rng.integers(1, 1 << 20, shape["n"]).astype(np.uint32)
    seeds[::29] = 0
    return {"seeds": seeds}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    v = np.asarray(inputs["seeds"]).astype(np.uint64)
    steps = np.zeros(v.shape, dtype=np.int32)
    live = v > 1
    for _ in range(1000):
        if not live.any():
            break
        odd = (v & 1) == 1
        v = np.where(live, np.where(odd, 3 * v + 1, v >> 1), v)
        steps += live
        live &= v != 1
    return {"steps": np.where(np.asarray(inputs["seeds"]) == 0, -1, steps).astype(np.int32)}
