"""numpy reference for s8gemm_nt_dp4a: A B^T of the int8 inputs in int64, as int32 (exact:
every sum stays far inside int32 at the folder's shapes, at most 4096 * 128 * 128)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A and B uniform over every int8 value, -128 included (a kernel that reads the bytes
    unsigned, or drops the sign of a lane, is off at almost every output)."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"A": rng.integers(-128, 128, (m, k), dtype=np.int8),
            "B": rng.integers(-128, 128, (n, k), dtype=np.int8)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"]).astype(np.int64).reshape(m, k)
    b = np.asarray(inputs["B"]).astype(np.int64).reshape(n, k)
    return {"C": (a @ b.T).astype(np.int32)}
