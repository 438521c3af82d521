"""numpy reference for ssim7_tile: the 7 x 7 window sums of a, b, a^2, b^2 and ab over the
edge-replicated images (exact for whole-number pixels), the moments and the SSIM formula in
float64, rounded to float32."""

from __future__ import annotations

import numpy as np

R = 3
C1, C2 = 6.5025, 58.5225


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Whole-number pixels 0..255: a textured image (ramp, stripes, noise) and a distorted
    copy (scaled contrast, an offset, its own noise), some saturated patches in both."""
    h, w = shape["h"], shape["w"]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    base = 110.0 + 0.5 * xx - 0.4 * yy + 45.0 * np.sin(0.21 * xx + 0.13 * yy)
    a = np.clip(np.rint(base + rng.normal(0.0, 20.0, (h, w))), 0.0, 255.0)
    b = np.clip(np.rint(0.8 * a + 30.0 + rng.normal(0.0, 15.0, (h, w))), 0.0, 255.0)
    return {"a": a.astype(np.float32), "b": b.astype(np.float32)}


def _window_sums(p: np.ndarray, h: int, w: int) -> np.ndarray:
    out = np.zeros((h, w))
    for dy in range(2 * R + 1):
        for dx in range(2 * R + 1):
            out += p[dy:dy + h, dx:dx + w]
    return out


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    a = np.pad(np.asarray(inputs["a"], dtype=np.float64).reshape(h, w), R, mode="edge")
    b = np.pad(np.asarray(inputs["b"], dtype=np.float64).reshape(h, w), R, mode="edge")
    n = float((2 * R + 1) ** 2)
    ma, mb = _window_sums(a, h, w) / n, _window_sums(b, h, w) / n
    va = _window_sums(a * a, h, w) / n - ma * ma
    vb = _window_sums(b * b, h, w) / n - mb * mb
    cab = _window_sums(a * b, h, w) / n - ma * mb
    ssim = ((2.0 * ma * mb + C1) * (2.0 * cab + C2)) / ((ma * ma + mb * mb + C1) * (va + vb + C2))
    return {"ssim": ssim.astype(np.float32)}
