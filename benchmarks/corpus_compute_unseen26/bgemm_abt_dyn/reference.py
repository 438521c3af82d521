"""numpy reference for bgemm_abt_dyn: C[b] = A[b] @ B[b]^T for every batch entry, in
float64 (A [batch][M][K], B [batch][N][K], C [batch][M][N])."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Entries in [-1, 1]: a transposed B, a dropped K step or a wrong batch offset moves
    most outputs by far more than the tolerance."""
    b, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
    return {"A": rng.uniform(-1.0, 1.0, (b, m, k)).astype(np.float32),
            "B": rng.uniform(-1.0, 1.0, (b, n, k)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    b, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"], dtype=np.float64).reshape(b, m, k)
    bt = np.asarray(inputs["B"], dtype=np.float64).reshape(b, n, k)
    return {"C": np.einsum("bmk,bnk->bmn", a, bt).astype(np.float32)}
