"""numpy reference for cbrt_newton_f64: numpy's cube root in float64 (the kernel's Newton
steps converge to it), rounded to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Magnitudes log-uniform in [1e-3, 1e3], a random sign, every 97th element zero."""
    n = shape["n"]
    x = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), size=n))
    x *= rng.choice(np.array([-1.0, 1.0]), size=n)
    x[::97] = 0.0
    return {"in": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["in"], dtype=np.float64).reshape(shape["n"])
    return {"out": np.cbrt(x).astype(np.float32)}
