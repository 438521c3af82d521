"""numpy reference for nchw_to_nhwc_affine: out[b, p, c] = in[b, c, p] * scale[c] +
shift[c] in float64."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Activations ~ N(0, 1); scales ~ U(0.5, 2) and shifts ~ U(-1, 1), all different per
    channel (a channel taken in the wrong order shows)."""
    b, c, hw = shape["B"], shape["C"], shape["HW"]
    return {"in": rng.standard_normal((b, c, hw), dtype=np.float32),
            "scale": rng.uniform(0.5, 2.0, size=c).astype(np.float32),
            "shift": rng.uniform(-1.0, 1.0, size=c).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    b, c, hw = shape["B"], shape["C"], shape["HW"]
    x = inputs["in"].astype(np.float64).reshape(b, c, hw)
    y = x * inputs["scale"].astype(np.float64)[None, :, None] + \
        inputs["shift"].astype(np.float64)[None, :, None]
    return {"out": np.ascontiguousarray(y.transpose(0, 2, 1)).astype(np.float32)}
