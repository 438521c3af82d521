"""numpy reference for hgemm_tn_bstrided: C_b = alpha A_b^T B_b for each batch b, in float64
from the half inputs (A [batch, K, M], B [batch, N, K], C [batch, M, N])."""

from __future__ import annotations

import numpy as np

ALPHA = 0.75  # the kernel.toml scalar (exact in float)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Entries of A and B in [-1, 1] rounded to half, each batch's different: a dropped K
    step, a transposed operand or a lost batch offset moves an output by ~0.1 or more."""
    b, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
    return {"A": rng.uniform(-1.0, 1.0, (b, k, m)).astype(np.float16),
            "B": rng.uniform(-1.0, 1.0, (b, n, k)).astype(np.float16)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    b, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"], dtype=np.float64).reshape(b, k, m)
    bb = np.asarray(inputs["B"], dtype=np.float64).reshape(b, n, k)
    # C_b[m][n] = sum_k A_b[k][m] B_b[n][k]
    return {"C": (ALPHA * np.einsum("bkm,bnk->bmn", a, bb)).astype(np.float32)}
