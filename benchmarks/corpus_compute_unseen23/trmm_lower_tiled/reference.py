"""numpy reference for trmm_lower_tiled: B = tril(L) A in float64 from the float32 inputs,
rounded to float32 (the strict upper triangle of L is ignored)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """L and A ~ U(-1, 1); L's strict upper triangle holds 1e3 + U(0, 1): a kernel that
    reads it is off by thousands."""
    n, m = shape["n"], shape["m"]
    low = rng.uniform(-1.0, 1.0, (n, n))
    upper = 1e3 + rng.uniform(0.0, 1.0, (n, n))
    L = np.where(np.tri(n, dtype=bool), low, upper)
    return {"L": L.astype(np.float32), "A": rng.uniform(-1.0, 1.0, (n, m)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, m = shape["n"], shape["m"]
    L = np.tril(np.asarray(inputs["L"], dtype=np.float64).reshape(n, n))
    A = np.asarray(inputs["A"], dtype=np.float64).reshape(n, m)
    return {"B": (L @ A).astype(np.float32)}
