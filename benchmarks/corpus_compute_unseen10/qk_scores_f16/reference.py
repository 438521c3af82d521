"""numpy reference for qk_scores_f16: S = 0.125 * Q Kᵀ per batch-head in float64."""

from __future__ import annotations

import numpy as np

SCALE = 0.125  # kernel.toml's scale


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Q and K ~ U(-1, 1) rounded to half (exactly what the kernel reads)."""
    bh, length, d = shape["BH"], shape["L"], shape["D"]
    q = rng.uniform(-1.0, 1.0, size=(bh, length, d)).astype(np.float16)
    k = rng.uniform(-1.0, 1.0, size=(bh, length, d)).astype(np.float16)
    return {"Q": q.astype(np.float32), "K": k.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    bh, length, d = shape["BH"], shape["L"], shape["D"]
    q = np.asarray(inputs["Q"]).astype(np.float64).reshape(bh, length, d)
    k = np.asarray(inputs["K"]).astype(np.float64).reshape(bh, length, d)
    return {"S": (SCALE * np.matmul(q, k.transpose(0, 2, 1))).astype(np.float32)}
