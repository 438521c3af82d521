"""numpy reference for cummax_rows_cg: np.maximum.accumulate along each row (exact)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A random walk a row with a slight upward drift (new maxima all along each row)."""
    steps = rng.normal(0.02, 1.0, (shape["rows"], shape["cols"]))
    return {"in": np.cumsum(steps, axis=1).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(shape["rows"], shape["cols"])
    return {"out": np.maximum.accumulate(x, axis=1)}
