"""numpy reference for haversine_nearest: the haversine distance in float64 from each point
of a to every point of b (in row chunks), its minimum, rounded to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Points uniform on the sphere: latitude arcsin(uniform(-1, 1)), longitude in [-pi, pi)."""
    def points(n: int) -> np.ndarray:
        lat = np.arcsin(rng.uniform(-1.0, 1.0, size=n))
        lon = rng.uniform(-np.pi, np.pi, size=n)
        return np.stack([lat, lon], axis=1).astype(np.float32)
    return {"a": points(shape["na"]), "b": points(shape["nb"])}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    a = np.asarray(inputs["a"], dtype=np.float64).reshape(shape["na"], 2)
    b = np.asarray(inputs["b"], dtype=np.float64).reshape(shape["nb"], 2)
    cb = np.cos(b[:, 0])[None, :]
    out = np.empty(shape["na"], dtype=np.float64)
    for lo in range(0, shape["na"], 512):
        rows = a[lo:lo + 512]
        s1 = np.sin(0.5 * (b[None, :, 0] - rows[:, 0:1]))
        s2 = np.sin(0.5 * (b[None, :, 1] - rows[:, 1:2]))
        h = s1 * s1 + np.cos(rows[:, 0:1]) * cb * s2 * s2
        out[lo:lo + 512] = np.min(h, axis=1)
    return {"out": (2.0 * np.arcsin(np.sqrt(np.minimum(out, 1.0)))).astype(np.float32)}
