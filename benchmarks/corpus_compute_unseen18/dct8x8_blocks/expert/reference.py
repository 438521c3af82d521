"""numpy reference for dct8x8_blocks: C X C^T in float64 for every 8 x 8 block X, with the
orthonormal DCT-II matrix C, rounded to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Level-shifted 8-bit pixels: integers in [-128, 128) as floats."""
    pixels = rng.integers(-128, 128, size=(shape["H"], shape["W"]))
    return {"in": pixels.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["H"], shape["W"]
    u, x = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    c = np.where(u == 0, np.sqrt(1.0 / 8.0), 0.5) * np.cos((2 * x + 1) * u * np.pi / 16.0)
    blocks = np.asarray(inputs["in"], dtype=np.float64).reshape(h // 8, 8, w // 8, 8)
    rows = (blocks.reshape(-1, 8) @ c.T).reshape(h // 8, 8, w // 8, 8)  # over x: (.., y, .., v)
    cols = rows.transpose(0, 2, 3, 1).reshape(-1, 8) @ c.T  # over y: (.., .., v, u)
    coeffs = cols.reshape(h // 8, w // 8, 8, 8).transpose(0, 3, 1, 2)  # (.., u, .., v)
    return {"out": coeffs.reshape(h, w).astype(np.float32)}
