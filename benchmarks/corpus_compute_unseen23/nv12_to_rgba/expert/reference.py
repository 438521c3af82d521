"""numpy reference for nv12_to_rgba: the BT.601 fixed-point conversion in int64 (arithmetic
shifts, as the kernel's int), each pixel with the chroma pair of its 2 x 2 block; exact."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every byte uniform in 0..255 (the pitch's padding too): luma below 16 and above 235
    and extreme chroma drive every channel past both clamps."""
    h, pitch = shape["h"], shape["pitch"]
    return {"luma": rng.integers(0, 256, (h, pitch), dtype=np.uint8),
            "chroma": rng.integers(0, 256, ((h + 1) // 2, pitch), dtype=np.uint8)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w, pitch = shape["h"], shape["w"], shape["pitch"]
    luma = np.asarray(inputs["luma"]).reshape(h, pitch)[:, :w].astype(np.int64)
    chroma = np.asarray(inputs["chroma"]).reshape((h + 1) // 2, pitch).astype(np.int64)
    cols = np.arange(w) & ~1
    rows = np.arange(h) >> 1
    u = chroma[rows][:, cols]
    v = chroma[rows][:, cols + 1]
    c, d, e = luma - 16, u - 128, v - 128
    base = 298 * c + 128
    out = np.empty((h, w, 4), dtype=np.int64)
    out[..., 0] = (base + 409 * e) >> 8
    out[..., 1] = (base - 100 * d - 208 * e) >> 8
    out[..., 2] = (base + 516 * d) >> 8
    out[..., 3] = 255
    return {"rgba": np.clip(out, 0, 255).astype(np.uint8)}
