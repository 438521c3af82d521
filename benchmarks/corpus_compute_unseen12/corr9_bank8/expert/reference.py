"""numpy reference for corr9_bank8: the 8 zero-padded 9 x 9 cross-correlations in float64."""

from __future__ import annotations

import numpy as np

NF, KS = 8, 9


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """img ~ U(0, 1); wts ~ U(-1, 1) / 9."""
    img = rng.uniform(0.0, 1.0, size=(shape["h"], shape["w"])).astype(np.float32)
    wts = (rng.uniform(-1.0, 1.0, size=NF * KS * KS) / 9.0).astype(np.float32)
    return {"img": img, "wts": wts}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    img = np.asarray(inputs["img"]).astype(np.float64).reshape(h, w)
    wts = np.asarray(inputs["wts"]).astype(np.float64).reshape(NF, KS, KS)
    padded = np.pad(img, KS // 2)
    out = np.zeros((h * w, NF))
    for dy in range(KS):
        # the 9 taps of row dy for every pixel, as a (pixels, 9) matrix
        taps = np.lib.stride_tricks.sliding_window_view(padded[dy:dy + h], KS, axis=1)
        out += taps.reshape(h * w, KS) @ wts[:, dy, :].T
    return {"out": out.T.reshape(NF, h, w).astype(np.float32)}
