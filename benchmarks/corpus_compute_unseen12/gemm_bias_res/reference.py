"""numpy reference for gemm_bias_res: A B + bias (per column) + R in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A, B, bias and R ~ U(-1, 1)."""
    m, n, k = shape["m"], shape["n"], shape["k"]

    def draw(*dims: int) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, size=dims).astype(np.float32)

    return {"A": draw(m, k), "B": draw(k, n), "bias": draw(n), "R": draw(m, n)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = np.asarray(inputs["A"]).astype(np.float64).reshape(m, k)
    b = np.asarray(inputs["B"]).astype(np.float64).reshape(k, n)
    bias = np.asarray(inputs["bias"]).astype(np.float64).reshape(1, n)
    r = np.asarray(inputs["R"]).astype(np.float64).reshape(m, n)
    return {"D": (a @ b + bias + r).astype(np.float32)}
