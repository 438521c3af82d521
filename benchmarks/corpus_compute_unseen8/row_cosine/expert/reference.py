"""numpy reference for row_cosine: the cosine of the angle between row r of a and row r of
b, in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """a ~ N(0, 1); b = c * a + noise with c and the noise level varying per row, so the
    cosines spread over [-1, 1] (some near +-1, some near 0)."""
    rows, cols = shape["rows"], shape["cols"]
    a = rng.standard_normal((rows, cols))
    c = rng.uniform(-1.0, 1.0, size=(rows, 1))
    noise = rng.uniform(0.05, 2.0, size=(rows, 1)) * rng.standard_normal((rows, cols))
    return {"a": a.astype(np.float32), "b": (c * a + noise).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    a = np.asarray(inputs["a"]).astype(np.float64).reshape(rows, cols)
    b = np.asarray(inputs["b"]).astype(np.float64).reshape(rows, cols)
    norms = np.sqrt((a * a).sum(1)) * np.sqrt((b * b).sum(1))
    return {"cosv": ((a * b).sum(1) / np.maximum(norms, 1e-20)).astype(np.float32)}
