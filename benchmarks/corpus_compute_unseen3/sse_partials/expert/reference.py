"""Inputs, golden partials and verification for sse_partials: one partial weighted sum of
squared errors per chunk of 4096 elements, added on the host.

The partials' layout is the launch's (how many elements a block takes), so a config is right
when its partials add up to the total, not when each matches the kernel as written. The
inputs are small integers held as floats (predictions and targets in [-8, 8], weights in
{1, 2, 3}): every term is an integer of at most 768, every partial sum stays far below 2^24
for the chunk sizes the expert space allows (about 96 per element on average), so the sums
are exact in float32 and the check is exact; a dropped or repeated element changes the total
unless its term is 0 (prediction equal to target, 1 element in 17).
"""

from __future__ import annotations

import numpy as np

CHUNK = 4096  # elements per partial in the kernel as written


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    return {"pred": rng.integers(-8, 9, size=n).astype(np.float32),
            "target": rng.integers(-8, 9, size=n).astype(np.float32),
            "w": rng.integers(1, 4, size=n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written (one per chunk of CHUNK elements), in float64."""
    n = shape["n"]
    d = inputs["pred"].astype(np.float64) - inputs["target"].astype(np.float64)
    terms = inputs["w"].astype(np.float64) * d * d
    chunks = -(-n // CHUNK)
    padded = np.zeros(chunks * CHUNK)
    padded[:n] = terms
    return {"partials": padded.reshape(chunks, CHUNK).sum(axis=1).astype(np.float32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written partials add up to the golden partials' total (exactly: integer-valued
    floats). NaN entries count as unwritten slots (the engine's poison is a NaN pattern; a
    config with larger chunks launches fewer blocks than the buffer has slots)."""
    got = np.asarray(outputs["partials"], dtype=np.float64).reshape(-1)
    want = np.asarray(golden["partials"], dtype=np.float64).reshape(-1)
    assert not np.isinf(got).any(), "partials: an infinite partial sum"
    written = ~np.isnan(got)
    assert written.any(), "partials: no partial sum written"
    total, expected = float(got[written].sum()), float(want[~np.isnan(want)].sum())
    assert abs(total - expected) <= 0.5, (
        f"partials: the {int(written.sum())} partial sums add up to {total:.1f}; "
        f"expected {expected:.1f} (difference {total - expected:+.1f})")
