"""numpy reference for conv5x5_rgb_luma: the zero-padded image's 75 shifted channel planes,
each times its tap, accumulated in float32 in the kernel's order (row offset, column offset,
channel)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Pixels uniform in [0, 1]; taps uniform in [-0.05, 0.05]."""
    h, w = shape["H"], shape["W"]
    return {"src": rng.uniform(0.0, 1.0, (h, w, 3)).astype(np.float32),
            "kernel": rng.uniform(-0.05, 0.05, (3, 5, 5)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["H"], shape["W"]
    src = np.asarray(inputs["src"], dtype=np.float32).reshape(h, w, 3)
    taps = np.asarray(inputs["kernel"], dtype=np.float32).reshape(3, 5, 5)
    padded = np.zeros((h + 4, w + 4, 3), dtype=np.float32)
    padded[2:h + 2, 2:w + 2] = src
    planes = [np.ascontiguousarray(padded[:, :, c]) for c in range(3)]
    out, term = np.zeros((h, w), dtype=np.float32), np.empty((h, w), dtype=np.float32)
    for dy in range(5):
        for dx in range(5):
            for c in range(3):
                np.multiply(planes[c][dy:dy + h, dx:dx + w], taps[c, dy, dx], out=term)
                out += term
    return {"dst": out}
