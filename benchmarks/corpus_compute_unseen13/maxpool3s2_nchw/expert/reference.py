"""numpy reference for maxpool3s2_nchw: 3 x 3 windows at stride 2, no padding."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """in ~ N(0, 1)."""
    return {"in": rng.standard_normal(size=(shape["p"], shape["h"], shape["w"])).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    p, h, w, ho, wo = shape["p"], shape["h"], shape["w"], shape["ho"], shape["wo"]
    assert (ho, wo) == ((h - 3) // 2 + 1, (w - 3) // 2 + 1), (h, w, ho, wo)
    x = np.asarray(inputs["in"]).reshape(p, h, w)
    out = np.full((p, ho, wo), -np.inf, dtype=np.float32)
    for ky in range(3):
        for kx in range(3):
            np.maximum(out, x[:, ky:ky + 2 * ho:2, kx:kx + 2 * wo:2], out=out)
    return {"out": out}
