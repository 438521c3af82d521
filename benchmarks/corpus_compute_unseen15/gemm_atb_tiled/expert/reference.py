"""numpy reference for gemm_atb_tiled: A^T B in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A and B ~ U(-1, 1)."""
    return {"a": rng.uniform(-1.0, 1.0, size=(shape["k"], shape["m"])).astype(np.float32),
            "b": rng.uniform(-1.0, 1.0, size=(shape["k"], shape["n"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    a = np.asarray(inputs["a"]).astype(np.float64).reshape(shape["k"], shape["m"])
    b = np.asarray(inputs["b"]).astype(np.float64).reshape(shape["k"], shape["n"])
    return {"c": (a.T @ b).astype(np.float32)}
