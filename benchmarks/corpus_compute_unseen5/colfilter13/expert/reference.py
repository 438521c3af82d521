"""numpy reference for colfilter13: each column correlated with the 13 taps (the kernel's
``__constant__`` array ``taps``, an input), rows past the edges mirrored without repeating
the edge row."""

from __future__ import annotations

import numpy as np

RAD = 6


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """An image ~ N(0, 1) and 13 taps that all differ (a flipped or shifted filter gives
    other outputs)."""
    h, w = shape["h"], shape["w"]
    taps = rng.uniform(0.05, 1.0, size=2 * RAD + 1)
    return {"src": rng.standard_normal((h, w), dtype=np.float32),
            "taps": (taps / taps.sum()).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    src = np.pad(inputs["src"].astype(np.float64).reshape(h, w), ((RAD, RAD), (0, 0)),
                 mode="reflect")
    taps = inputs["taps"].astype(np.float64)
    out = np.zeros((h, w))
    for t in range(2 * RAD + 1):
        out += taps[t] * src[t:t + h]
    return {"dst": out.astype(np.float32)}
