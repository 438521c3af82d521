"""numpy reference for corr1d_taps63: every row zero-padded by 31 on each side, the 63
shifted rows weighted by the taps (the kernel's ``__constant__`` array ``taps``, an input)
and summed in float64."""

from __future__ import annotations

import numpy as np

TAPS, HALO = 63, 31


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Signal ~ U(-1, 1); taps ~ U(-1, 1)."""
    return {"x": rng.uniform(-1.0, 1.0, size=(shape["rows"], shape["len"])).astype(np.float32),
            "taps": rng.uniform(-1.0, 1.0, size=TAPS).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, length = shape["rows"], shape["len"]
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(rows, length)
    taps = np.asarray(inputs["taps"]).astype(np.float64)
    padded = np.pad(x, ((0, 0), (HALO, HALO)))
    y = np.zeros((rows, length))
    for k in range(TAPS):
        y += taps[k] * padded[:, k:k + length]
    return {"y": y.astype(np.float32)}
