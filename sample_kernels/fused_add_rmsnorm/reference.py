"""numpy reference for fused_add_rmsnorm (both outputs; the kernel updates them in place)."""

from __future__ import annotations

import numpy as np

EPS = 1e-6  # the `eps` scalar argument in kernel.toml


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Hidden states and residual ~ N(0, 1); weight ~ U(0.5, 1.5) like a trained norm gain."""
    tokens, hidden = shape["tokens"], shape["hidden"]
    return {
        "input": rng.standard_normal((tokens, hidden), dtype=np.float32),
        "residual": rng.standard_normal((tokens, hidden), dtype=np.float32),
        "weight": rng.uniform(0.5, 1.5, size=hidden).astype(np.float32),
    }


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """Sum in high precision; residual rounded to dtype; normalise from the unrounded sum."""
    from workbench.core.dtypes import quantize  # imported lazily: core loads this file by path

    x = inputs["input"].astype(np.float64) + inputs["residual"].astype(np.float64)
    rms_rcp = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    normed = x * rms_rcp * inputs["weight"].astype(np.float64)
    return {
        "input": normed.astype(np.float32),
        "residual": quantize(x.astype(np.float32), dtype),
    }
