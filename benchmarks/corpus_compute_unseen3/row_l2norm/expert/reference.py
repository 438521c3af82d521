"""numpy reference for row_l2norm: each row's L2 norm and the row divided by it."""

from __future__ import annotations

import numpy as np

EPS = 1e-12


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Normal rows with a scale that varies from row to row (0.01 to 100), and row 3 all
    zeros (its norm 0, its output 0: the EPS floor)."""
    rows, cols = shape["rows"], shape["cols"]
    scale = 10.0 ** rng.uniform(-2.0, 2.0, size=(rows, 1))
    x = rng.standard_normal((rows, cols)) * scale
    if rows > 3:
        x[3] = 0.0
    return {"x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """float64."""
    x = inputs["x"].astype(np.float64).reshape(shape["rows"], shape["cols"])
    norms = np.sqrt((x * x).sum(axis=1))
    y = x / np.maximum(norms, EPS)[:, None]
    return {"y": y.astype(np.float32), "norms": norms.astype(np.float32)}
