"""numpy reference for argmin_chunks: each 4096-float chunk's minimum and its first index
in the row."""

from __future__ import annotations

import numpy as np

CHUNK = 4096


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x on a grid of 2^-12 steps in [0, 1) (so 4096 values: a chunk's minimum often ties,
    checking the first-index rule)."""
    steps = rng.integers(0, 4096, size=(shape["batch"], shape["n"]))
    return {"x": (steps / 4096.0).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    batch, n, nchunks = shape["batch"], shape["n"], shape["nchunks"]
    assert nchunks == -(-n // CHUNK), (n, nchunks)
    x = np.asarray(inputs["x"]).reshape(batch, n)
    padded = np.full((batch, nchunks * CHUNK), np.inf, dtype=np.float32)
    padded[:, :n] = x
    chunks = padded.reshape(batch, nchunks, CHUNK)
    first = chunks.argmin(axis=2)  # numpy's argmin takes the first of ties
    return {"minval": np.take_along_axis(chunks, first[..., None], axis=2)[..., 0],
            "argmin": (first + np.arange(nchunks) * CHUNK).astype(np.int32)}
