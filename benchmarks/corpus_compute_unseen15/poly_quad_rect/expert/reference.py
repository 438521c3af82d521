"""numpy reference for poly_quad_rect: the 64 midpoints of every interval at once, the
polynomial by Horner in float64 (the coefficients are the kernel's ``__constant__``
array ``coef``, an input), rectified, summed in the kernel's order. Chunked over intervals."""

from __future__ import annotations

import numpy as np

DEGREE, PANELS = 8, 64


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Left ends ~ U(-1.5, 0.5) (so the intervals lie in [-1.5, 1.5]); coefficients ~ U(-1, 1)."""
    return {"a": rng.uniform(-1.5, 0.5, size=shape["n"]).astype(np.float32),
            "coef": rng.uniform(-1.0, 1.0, size=DEGREE + 1).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    a = np.asarray(inputs["a"], dtype=np.float64)
    coef = np.asarray(inputs["coef"], dtype=np.float64)
    h = 1.0 / PANELS
    out = np.empty(a.shape[0], dtype=np.float64)
    step = 1 << 16
    for lo in range(0, a.shape[0], step):
        t = a[lo:lo + step, None] + (np.arange(PANELS) + 0.5) * h
        p = np.full_like(t, coef[DEGREE])
        for k in range(DEGREE - 1, -1, -1):
            p = p * t + coef[k]
        g = np.where(p > 0.0, p, -0.5 * p)
        out[lo:lo + step] = g.sum(axis=1) * h
    return {"q": out.astype(np.float32)}
