"""numpy reference for fir128_const: each channel's valid correlation with the 128 taps, in
float64. The taps are the kernel's ``__constant__`` array ``taps`` (an input)."""

from __future__ import annotations

import numpy as np

TAPS = 128


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x and the taps ~ U(-1, 1)."""
    ch, n = shape["ch"], shape["n"]
    return {"x": rng.uniform(-1.0, 1.0, size=(ch, n + TAPS - 1)).astype(np.float32),
            "taps": rng.uniform(-1.0, 1.0, size=TAPS).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    ch, n = shape["ch"], shape["n"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(ch, n + TAPS - 1)
    taps = np.asarray(inputs["taps"]).astype(np.float64).reshape(TAPS)
    y = np.stack([np.correlate(x[c], taps, mode="valid") for c in range(ch)])
    return {"y": y.astype(np.float32)}
