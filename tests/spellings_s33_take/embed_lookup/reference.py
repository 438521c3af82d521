"""numpy reference for embed_lookup: the table's rows at the ids."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A normal table; ids uniform over its rows (repeats included)."""
    vocab, tokens, d = shape["vocab"], shape["tokens"], shape["dim"]
    return {"table": rng.normal(0.0, 1.0, (vocab, d)).astype(np.float32),
            "ids": rng.integers(0, vocab, tokens).astype(np.int64)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    vocab, tokens, d = shape["vocab"], shape["tokens"], shape["dim"]
    table = np.asarray(inputs["table"], dtype=np.float32).reshape(vocab, d)
    ids = np.asarray(inputs["ids"]).astype(np.int64).reshape(tokens)
    return {"out": table[ids]}
