"""numpy reference for collatz_steps: every orbit stepped at once in uint64, the finished
ones dropped from the working set each step."""

from __future__ import annotations

import numpy as np

MAX_STEPS = 1000


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Starts ~ U{1, ..., 2^22 - 1} (longest orbit 600 steps, highest value below 2^40)."""
    return {"start": rng.integers(1, 1 << 22, size=shape["n"], dtype=np.uint32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    v = np.asarray(inputs["start"], dtype=np.uint64)
    steps = np.zeros(v.shape[0], dtype=np.int32)
    live = np.flatnonzero(v > 1)
    vals = v[live]
    count = 0
    while live.size:
        if count == MAX_STEPS:
            steps[live] = count
            break
        odd = (vals & np.uint64(1)) != 0
        vals >>= np.uint64(1)
        vals[odd] = vals[odd] * np.uint64(6) + np.uint64(4)
        count += 1
        done = vals <= 1
        if done.any():
            steps[live[done]] = count
            live, vals = live[~done], vals[~done]
    return {"steps": steps}
