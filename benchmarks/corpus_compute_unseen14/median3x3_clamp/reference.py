"""numpy reference for median3x3_clamp: the median of each pixel's nine edge-clamped
neighbours (np.partition), a band of rows at a time so the timed shapes stay in memory."""

from __future__ import annotations

import numpy as np


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    padded = np.pad(np.asarray(inputs["in"]).astype(np.float32).reshape(h, w), 1, mode="edge")
    out = np.empty((h, w), dtype=np.float32)
    band = 256
    for y0 in range(0, h, band):
        y1 = min(h, y0 + band)
        taps = np.stack([padded[y0 + dy:y1 + dy, dx:dx + w] for dy in range(3) for dx in range(3)])
        out[y0:y1] = np.partition(taps, 4, axis=0)[4]
    return {"out": out}
