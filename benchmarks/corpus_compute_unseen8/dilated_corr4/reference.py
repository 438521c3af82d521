"""numpy reference for dilated_corr4: a 3x3 cross-correlation at dilation 2 of four input
planes into two output planes, zero padding, in float64."""

from __future__ import annotations

import numpy as np

CIN, COUT, DIL = 4, 2, 2  # the kernel as written


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Planes ~ U(-1, 1); weights ~ N(0, 0.3^2), none zero, so a dropped or misplaced tap
    moves the output."""
    h, w = shape["H"], shape["W"]
    planes = rng.uniform(-1.0, 1.0, size=(CIN, h, w))
    wts = 0.3 * rng.standard_normal(COUT * CIN * 9)
    wts[np.abs(wts) < 0.01] = 0.05
    return {"in": planes.astype(np.float32), "wts": wts.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["H"], shape["W"]
    planes = np.asarray(inputs["in"]).astype(np.float64).reshape(CIN, h, w)
    wts = np.asarray(inputs["wts"]).astype(np.float64).reshape(COUT, CIN, 3, 3)
    padded = np.zeros((CIN, h + 2 * DIL, w + 2 * DIL))
    padded[:, DIL:DIL + h, DIL:DIL + w] = planes
    out = np.zeros((COUT, h, w))
    for ky in range(3):
        for kx in range(3):
            window = padded[:, ky * DIL:ky * DIL + h, kx * DIL:kx * DIL + w]
            out += np.einsum("oc,chw->ohw", wts[:, :, ky, kx], window)
    return {"out": out.astype(np.float32)}
