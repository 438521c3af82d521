"""numpy reference for conv1d_mix7: a 7-tap, 16-in 16-out channel 1-D convolution of
[B, 16, T] signals with "same" zero padding plus a per-channel bias (the kernel's
``__constant__`` arrays ``weights`` [16, 16, 7] and ``biases`` [16], inputs), in float64."""

from __future__ import annotations

import numpy as np

CH, TAPS = 16, 7


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Signals ~ N(0, 1); weights ~ U(-0.2, 0.2), all different (a tap read reversed, a
    channel pair swapped or a shifted window gives other outputs); biases ~ U(-1, 1)."""
    b, t = shape["B"], shape["T"]
    return {"in": rng.standard_normal((b, CH, t), dtype=np.float32),
            "weights": rng.uniform(-0.2, 0.2, size=CH * CH * TAPS).astype(np.float32),
            "biases": rng.uniform(-1.0, 1.0, size=CH).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    b, t = shape["B"], shape["T"]
    half = TAPS // 2
    x = np.pad(inputs["in"].astype(np.float64).reshape(b, CH, t), ((0, 0), (0, 0), (half, half)))
    w = inputs["weights"].astype(np.float64).reshape(CH, CH, TAPS)
    out = np.broadcast_to(inputs["biases"].astype(np.float64)[None, :, None], (b, CH, t)).copy()
    for k in range(TAPS):
        out += np.einsum("oc,bct->bot", w[:, :, k], x[:, :, k:k + t])
    return {"out": out.astype(np.float32)}
