"""numpy reference for rope_rotate_f16: each interleaved pair rotated in float64 by its
token's table entries (the float32 tables, the half inputs), rounded to half."""

from __future__ import annotations

import numpy as np

PAIRS = 64


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Normal head values (half), positions anywhere in the table (repeats allowed) and the
    usual rotary tables: angle p * 10000^(-i / 64) for pair i at position p."""
    tokens, heads, max_pos = shape["tokens"], shape["heads"], shape["max_pos"]
    x = rng.normal(0.0, 1.5, (tokens, heads, 2 * PAIRS)).astype(np.float16)
    pos = rng.integers(0, max_pos, tokens, dtype=np.int32)
    theta = np.arange(max_pos)[:, None] * 10000.0 ** (-np.arange(PAIRS)[None, :] / PAIRS)
    return {"x": x, "pos": pos, "cos_tab": np.cos(theta).astype(np.float32),
            "sin_tab": np.sin(theta).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    tokens, heads, max_pos = shape["tokens"], shape["heads"], shape["max_pos"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(tokens, heads, PAIRS, 2)
    pos = np.asarray(inputs["pos"]).reshape(tokens)
    c = np.asarray(inputs["cos_tab"], dtype=np.float64).reshape(max_pos, PAIRS)[pos][:, None]
    s = np.asarray(inputs["sin_tab"], dtype=np.float64).reshape(max_pos, PAIRS)[pos][:, None]
    x0, x1 = x[..., 0], x[..., 1]
    out = np.stack([x0 * c - x1 * s, x0 * s + x1 * c], axis=-1)
    return {"out": out.reshape(tokens, heads, 2 * PAIRS).astype(np.float16)}
