"""numpy reference for hgemm_scaled: C = alpha * A B with half-precision A and B, in float64."""

from __future__ import annotations

import numpy as np

ALPHA = 0.75  # kernel.toml's alpha


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Values uniform in [-2, 2], rounded to half (exactly what the kernel reads)."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = rng.uniform(-2.0, 2.0, size=(m, k)).astype(np.float16).astype(np.float32)
    b = rng.uniform(-2.0, 2.0, size=(k, n)).astype(np.float16).astype(np.float32)
    return {"A": a, "B": b}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    a = inputs["A"].astype(np.float64).reshape(shape["M"], shape["K"])
    b = inputs["B"].astype(np.float64).reshape(shape["K"], shape["N"])
    return {"C": (ALPHA * (a @ b)).astype(np.float32)}
