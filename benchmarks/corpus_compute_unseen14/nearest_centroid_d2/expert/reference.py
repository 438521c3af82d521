"""numpy reference for nearest_centroid_d2: every point's squared distance to each of the 64
centroids (the kernel's ``__constant__`` array ``centroids``, an input) in float64, the
smallest kept. Chunked over points so the timed shapes stay within memory."""

from __future__ import annotations

import numpy as np

K, DIM = 64, 4


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Points ~ U(-1, 1)^4; centroids ~ U(-1, 1)^4."""
    return {"x": rng.uniform(-1.0, 1.0, size=(shape["n"], DIM)).astype(np.float32),
            "centroids": rng.uniform(-1.0, 1.0, size=K * DIM).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(n, DIM)
    c = np.asarray(inputs["centroids"]).astype(np.float64).reshape(K, DIM)
    out = np.empty(n, dtype=np.float32)
    step = 1 << 18
    for lo in range(0, n, step):
        diff = x[lo:lo + step, None, :] - c[None, :, :]
        out[lo:lo + step] = np.einsum("pkd,pkd->pk", diff, diff).min(axis=1)
    return {"d2": out}
