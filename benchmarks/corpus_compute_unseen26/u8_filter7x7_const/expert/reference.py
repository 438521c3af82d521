"""numpy reference for u8_filter7x7_const: the 7 x 7 cross-correlation of an 8-bit image
with edge replication (the kernel's ``__constant__`` array ``taps`` [49], an input), times
``scale`` (1 / 255), in float64."""

from __future__ import annotations

import numpy as np

KS = 7
SCALE = 1.0 / 255.0  # the kernel.toml scalar


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Pixels over all of 0..255; taps in [-1, 1], no two alike (a transposed or mirrored
    filter moves most outputs)."""
    h, w = shape["height"], shape["width"]
    return {"img": rng.integers(0, 256, (h, w)).astype(np.uint8),
            "taps": rng.uniform(-1.0, 1.0, KS * KS).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["height"], shape["width"]
    img = np.asarray(inputs["img"], dtype=np.float64).reshape(h, w)
    taps = np.asarray(inputs["taps"], dtype=np.float64).reshape(KS, KS)
    r = KS // 2
    pad = np.pad(img, r, mode="edge")
    out = np.zeros((h, w))
    for dy in range(KS):
        for dx in range(KS):
            out += taps[dy, dx] * pad[dy:dy + h, dx:dx + w]
    scale = np.float64(np.float32(SCALE))
    return {"out": (out * scale).astype(np.float32)}
