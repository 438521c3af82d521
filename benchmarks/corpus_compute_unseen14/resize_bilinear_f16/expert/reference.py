"""numpy reference for resize_bilinear_f16: half-pixel-centre bilinear sampling of each
plane (source coordinates clamped to the image) in float64 from the half inputs."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Pixels ~ U(0, 1), stored as half."""
    return {"in": rng.uniform(0.0, 1.0, size=(shape["p"], shape["h"], shape["w"])).astype(np.float16)}


def _axis(size_in: int, size_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each output coordinate's two source indices and the weight of the second."""
    s = np.maximum((np.arange(size_out) + 0.5) * (size_in / size_out) - 0.5, 0.0)
    i0 = np.minimum(np.floor(s).astype(np.int64), size_in - 1)
    i1 = np.minimum(i0 + 1, size_in - 1)
    return i0, i1, s - i0


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    p, h, w, ho, wo = shape["p"], shape["h"], shape["w"], shape["ho"], shape["wo"]
    img = np.asarray(inputs["in"]).astype(np.float64).reshape(p, h, w)
    y0, y1, fy = _axis(h, ho)
    x0, x1, fx = _axis(w, wo)
    fx = fx[None, None, :]
    top = img[:, y0][:, :, x0] + fx * (img[:, y0][:, :, x1] - img[:, y0][:, :, x0])
    bottom = img[:, y1][:, :, x0] + fx * (img[:, y1][:, :, x1] - img[:, y1][:, :, x0])
    out = top + fy[None, :, None] * (bottom - top)
    return {"out": out.astype(np.float32)}
