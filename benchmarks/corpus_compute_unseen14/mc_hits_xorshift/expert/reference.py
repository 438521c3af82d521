"""numpy reference for mc_hits_xorshift: the same xorshift32 streams, vectorised over i."""

from __future__ import annotations

import numpy as np

SAMPLES = 512


def _step(s: np.ndarray) -> np.ndarray:
    s = s ^ (s << np.uint32(13))
    s = s ^ (s >> np.uint32(17))
    return s ^ (s << np.uint32(5))


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    i = np.arange(shape["n"], dtype=np.uint32)
    s = np.uint32(0x9E3779B9) ^ (i * np.uint32(0x85EBCA6B))
    s[s == 0] = 1
    count = np.zeros(shape["n"], dtype=np.int32)
    scale = np.float32(1.0 / 16777216.0)
    for _ in range(SAMPLES):
        s = _step(s)
        x = (s >> np.uint32(8)).astype(np.float32) * scale
        s = _step(s)
        y = (s >> np.uint32(8)).astype(np.float32) * scale
        count += (x * x + y * y < np.float32(1.0)).astype(np.int32)
    return {"hits": count}
