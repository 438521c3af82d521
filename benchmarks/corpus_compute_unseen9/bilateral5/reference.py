"""numpy reference for bilateral5: a 5 x 5 bilateral filter (sigma_s 1.5 pixels, sigma_r
0.1) with clamped borders, in float64."""

from __future__ import annotations

import numpy as np

RADIUS, SIGMA_S, SIGMA_R = 2, 1.5, 0.1  # the kernel as written
ROWS_PER_SLICE = 256


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A piecewise-flat image (8 x 8-pixel patches of random grey, so edges fall inside
    every window size) plus N(0, 0.03) noise, clipped to [0, 1]: the range weights span
    from ~1 (flat) to ~0 (across an edge)."""
    h, w = shape["H"], shape["W"]
    patches = rng.uniform(0.0, 1.0, size=(h // 8 + 1, w // 8 + 1))
    img = np.kron(patches, np.ones((8, 8)))[:h, :w] + rng.normal(0.0, 0.03, size=(h, w))
    return {"img": np.clip(img, 0.0, 1.0).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """In slices of ROWS_PER_SLICE output rows (the float64 temporaries of a whole large
    image would take gigabytes)."""
    h, w = shape["H"], shape["W"]
    img = np.asarray(inputs["img"]).reshape(h, w).astype(np.float64)
    cols = np.clip(np.arange(-RADIUS, w + RADIUS), 0, w - 1)
    out = np.empty((h, w), dtype=np.float32)
    for y0 in range(0, h, ROWS_PER_SLICE):
        y1 = min(y0 + ROWS_PER_SLICE, h)
        rows = np.clip(np.arange(y0 - RADIUS, y1 + RADIUS), 0, h - 1)
        padded = img[rows][:, cols]
        center = img[y0:y1]
        num = np.zeros_like(center)
        den = np.zeros_like(center)
        for dy in range(-RADIUS, RADIUS + 1):
            for dx in range(-RADIUS, RADIUS + 1):
                v = padded[RADIUS + dy:RADIUS + dy + y1 - y0, RADIUS + dx:RADIUS + dx + w]
                wt = np.exp(-(dx * dx + dy * dy) / (2 * SIGMA_S ** 2)
                            - (v - center) ** 2 / (2 * SIGMA_R ** 2))
                num += wt * v
                den += wt
        out[y0:y1] = num / den
    return {"out": out}
