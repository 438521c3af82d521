"""numpy reference for sobel_magdir_tile: the Sobel gradients of the edge-replicated image
in float64 (exact for whole-number pixels), the magnitude and arctan2 rounded to float32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Whole-number pixels 0..255: a smooth ramp plus noise, some flat (saturated) patches."""
    h, w = shape["h"], shape["w"]
    ramp = np.add.outer(np.linspace(0.0, 180.0, h), np.linspace(0.0, 120.0, w))
    img = np.clip(np.rint(ramp + rng.normal(0.0, 40.0, (h, w))), 0.0, 255.0)
    return {"img": img.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    p = np.pad(np.asarray(inputs["img"], dtype=np.float64).reshape(h, w), 1, mode="edge")

    def at(dy: int, dx: int) -> np.ndarray:
        return p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]

    gx = (at(-1, 1) + 2.0 * at(0, 1) + at(1, 1)) - (at(-1, -1) + 2.0 * at(0, -1) + at(1, -1))
    gy = (at(1, -1) + 2.0 * at(1, 0) + at(1, 1)) - (at(-1, -1) + 2.0 * at(-1, 0) + at(-1, 1))
    return {"mag": np.sqrt(gx * gx + gy * gy).astype(np.float32),
            "dir": np.arctan2(gy, gx).astype(np.float32)}
