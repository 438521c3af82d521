"""numpy reference for expm4_taylor: exp of each 4 x 4 matrix by its Taylor series in
float64, summed well past the kernel's stopping point (terms below 1e-14)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A ~ U(-1, 1)."""
    return {"A": rng.uniform(-1.0, 1.0, size=(shape["nb"], 16)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    nb = shape["nb"]
    a = np.asarray(inputs["A"]).astype(np.float64).reshape(nb, 4, 4)
    term = np.broadcast_to(np.eye(4), (nb, 4, 4)).copy()
    total = term.copy()
    k = 1
    while np.abs(term).max() > 1e-14 and k <= 60:
        term = term @ a / k
        total += term
        k += 1
    return {"E": total.reshape(nb, 16).astype(np.float32)}
