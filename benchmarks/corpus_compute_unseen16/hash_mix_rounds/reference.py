"""numpy reference for hash_mix_rounds: the 48 rounds on every key at once in uint32
(numpy's unsigned arithmetic wraps as the kernel's does)."""

from __future__ import annotations

import numpy as np

ROUNDS, SEED = 48, 0x5BD1E995


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Keys uniform over all 32-bit values."""
    return {"keys": rng.integers(0, 1 << 32, size=shape["n"], dtype=np.uint32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h = np.asarray(inputs["keys"], dtype=np.uint32) ^ np.uint32(SEED)
    with np.errstate(over="ignore"):
        for r in range(ROUNDS):
            h = h ^ (h >> np.uint32(16))
            h = h * np.uint32(0x7FEB352D)
            h = h ^ (h >> np.uint32(15))
            h = h * np.uint32(0x846CA68B)
            h = h ^ (h >> np.uint32(16))
            h = h + np.uint32((r * 0x9E3779B9) & 0xFFFFFFFF)
    return {"out": h}
