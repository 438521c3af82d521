"""numpy reference for sgemm_nn_dabc: D = alpha A B + beta C, in float64 from the float
inputs (A [M, K], B [K, N], C and D [M, N], row-major)."""

from __future__ import annotations

import numpy as np

ALPHA, BETA = 1.25, -0.5  # the kernel.toml scalars (both exact in float)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Entries of A, B and C in [-1, 1]: a dropped K step or a lost beta term moves an
    output by ~0.1 or more."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"A": rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32),
            "B": rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32),
            "C": rng.uniform(-1.0, 1.0, (m, n)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"], dtype=np.float64).reshape(m, k)
    b = np.asarray(inputs["B"], dtype=np.float64).reshape(k, n)
    c = np.asarray(inputs["C"], dtype=np.float64).reshape(m, n)
    return {"D": (ALPHA * (a @ b) + BETA * c).astype(np.float32)}
