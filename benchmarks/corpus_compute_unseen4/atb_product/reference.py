"""numpy reference for atb_product: C = A^T B, A [k, m] and B [k, n], in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = shape["m"], shape["n"], shape["k"]
    return {"a": rng.standard_normal((k, m), dtype=np.float32),
            "b": rng.standard_normal((k, n), dtype=np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    a = inputs["a"].astype(np.float64).reshape(shape["k"], shape["m"])
    b = inputs["b"].astype(np.float64).reshape(shape["k"], shape["n"])
    return {"c": (a.T @ b).astype(np.float32)}
