"""numpy reference for depthwise_conv1d_k9: each channel's 9-tap correlation with zero
padding in float64 from the float32 inputs, rounded to float32. The filters are the
kernel's __constant__ array ``taps`` (an input: 1024 channels' worth, the first C used)."""

from __future__ import annotations

import numpy as np

TAPS, MAX_CHANNELS = 9, 1024


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Normal signals and a different normal filter for every channel (no symmetric taps:
    a reversed filter is caught)."""
    c, t = shape["C"], shape["T"]
    return {"x": rng.normal(0.0, 1.0, (c, t)).astype(np.float32),
            "taps": rng.normal(0.0, 0.5, MAX_CHANNELS * TAPS).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    c, t = shape["C"], shape["T"]
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(c, t)
    w = np.asarray(inputs["taps"], dtype=np.float64).reshape(MAX_CHANNELS, TAPS)[:c]
    padded = np.pad(x, ((0, 0), (TAPS // 2, TAPS // 2)))
    y = np.zeros((c, t))
    for k in range(TAPS):
        y += w[:, k:k + 1] * padded[:, k:k + t]
    return {"y": y.astype(np.float32)}
