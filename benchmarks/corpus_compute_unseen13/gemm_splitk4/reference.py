"""numpy reference for gemm_splitk4: each k slice's product A[:, K_s] B[K_s, :] in float64."""

from __future__ import annotations

import numpy as np

SPLITS = 4


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A, B ~ U(-1, 1)."""
    m, n, k = shape["m"], shape["n"], shape["k"]
    return {"A": rng.uniform(-1.0, 1.0, size=(m, k)).astype(np.float32),
            "B": rng.uniform(-1.0, 1.0, size=(k, n)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = np.asarray(inputs["A"]).astype(np.float64).reshape(m, k)
    b = np.asarray(inputs["B"]).astype(np.float64).reshape(k, n)
    ks = (k + SPLITS - 1) // SPLITS
    p = np.zeros((SPLITS, m, n), dtype=np.float32)
    for s in range(SPLITS):
        lo, hi = s * ks, min(k, (s + 1) * ks)
        if lo < hi:
            p[s] = (a[:, lo:hi] @ b[lo:hi, :]).astype(np.float32)
    return {"P": p}
