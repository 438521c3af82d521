"""numpy reference for dwconv3_nhwc: a depthwise 3 x 3 convolution of an [h, w, 32]
channels-last image with per-channel taps and biases (the kernel's ``__constant__`` arrays
``taps`` and ``bias``, inputs), zero padding, in float64."""

from __future__ import annotations

import numpy as np

CHANNELS = 32


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The image ~ N(0, 1); 288 taps and 32 biases that all differ (a transposed filter, a
    mirrored one or channels taken in another order give other outputs)."""
    h, w = shape["h"], shape["w"]
    return {"in": rng.standard_normal((h, w, CHANNELS), dtype=np.float32),
            "taps": rng.uniform(-0.5, 0.5, size=9 * CHANNELS).astype(np.float32),
            "bias": rng.uniform(-1.0, 1.0, size=CHANNELS).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    img = np.pad(inputs["in"].astype(np.float64).reshape(h, w, CHANNELS),
                 ((1, 1), (1, 1), (0, 0)))
    taps = inputs["taps"].astype(np.float64).reshape(3, 3, CHANNELS)
    out = np.broadcast_to(inputs["bias"].astype(np.float64), (h, w, CHANNELS)).copy()
    for dy in range(3):
        for dx in range(3):
            out += img[dy:dy + h, dx:dx + w, :] * taps[dy, dx]
    return {"out": out.astype(np.float32)}
