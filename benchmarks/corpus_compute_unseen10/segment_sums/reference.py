"""numpy reference for segment_sums: each segment's sum in float64 (differences of a float64
running total)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Segment boundaries at sorted uniform cut points of 0 .. n (lengths about exponential
    around n / segments, a few empty, the longest ~13 times the mean), values ~ U(-1, 1)."""
    segments, n = shape["segments"], shape["n"]
    cuts = np.sort(rng.integers(0, n + 1, size=segments - 1))
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int32)
    values = rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
    return {"values": values, "offsets": offsets}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    values = np.asarray(inputs["values"]).astype(np.float64).reshape(-1)
    offsets = np.asarray(inputs["offsets"]).astype(np.int64).reshape(-1)
    total = np.zeros(values.size + 1)
    np.cumsum(values, out=total[1:])
    return {"sums": (total[offsets[1:]] - total[offsets[:-1]]).astype(np.float32)}
