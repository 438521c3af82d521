"""numpy reference for ncc_patch8: every valid 8 x 8 window's sums and its correlation with
the mean-removed template in float64 from the float32 inputs, rounded to float32."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

P = 8


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Whole-number pixels 0..255 (a textured image with noise everywhere: no flat window)
    and a template cut from it with its own noise (some windows correlate near 1)."""
    h, w = shape["H"], shape["W"]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    base = 120.0 + 60.0 * np.sin(0.37 * xx) * np.cos(0.23 * yy) + 0.3 * xx - 0.2 * yy
    img = np.clip(np.rint(base + rng.normal(0.0, 18.0, (h, w))), 0.0, 255.0)
    cy, cx = h // 3, w // 2
    tpl = np.clip(np.rint(img[cy:cy + P, cx:cx + P] + rng.normal(0.0, 6.0, (P, P))), 0.0, 255.0)
    return {"img": img.astype(np.float32), "tpl": tpl.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["H"], shape["W"]
    img = np.asarray(inputs["img"], dtype=np.float64).reshape(h, w)
    tpl = np.asarray(inputs["tpl"], dtype=np.float64).reshape(P, P)
    tc = tpl - tpl.mean()
    win = sliding_window_view(img, (P, P))  # [H - 7, W - 7, 8, 8]
    s1 = win.sum(axis=(2, 3))
    s2 = (win * win).sum(axis=(2, 3))
    num = (win * tc).sum(axis=(2, 3))
    ncc = num / np.sqrt((s2 - s1 * s1 / (P * P)) * (tc * tc).sum())
    return {"out": ncc.astype(np.float32)}
