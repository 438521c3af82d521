"""numpy reference for minplus_tiled: the min over k of a[i, k] + b[k, j], one k at a time
over the whole output (float32 sums, as the kernel's: each sum is one rounding and the min
is exact, so the result does not depend on the order of k)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Edge weights ~ U(0, 10)."""
    return {"a": rng.uniform(0.0, 10.0, size=(shape["m"], shape["k"])).astype(np.float32),
            "b": rng.uniform(0.0, 10.0, size=(shape["k"], shape["n"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    a = np.asarray(inputs["a"], dtype=np.float32).reshape(shape["m"], shape["k"])
    b = np.asarray(inputs["b"], dtype=np.float32).reshape(shape["k"], shape["n"])
    d = np.full((shape["m"], shape["n"]), np.inf, dtype=np.float32)
    for kk in range(shape["k"]):
        np.minimum(d, a[:, kk, None] + b[kk, None, :], out=d)
    return {"d": d}
