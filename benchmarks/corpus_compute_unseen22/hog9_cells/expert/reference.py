"""numpy reference for hog9_cells: the centred-difference gradients of the edge-replicated
image (exact for whole-number pixels), magnitude, folded orientation and the two bilinear
votes in float64, summed per 8 x 8 cell (partial cells at the right and bottom edges),
rounded to float32."""

from __future__ import annotations

import numpy as np

CELL, NBINS = 8, 9


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Whole-number pixels 0..255: oriented stripes plus a ramp and noise (every orientation
    present), some saturated patches."""
    h, w = shape["h"], shape["w"]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    stripes = 60.0 * np.sin(0.31 * xx + 0.17 * yy) + 40.0 * np.cos(0.07 * xx - 0.23 * yy)
    img = np.clip(np.rint(128.0 + stripes + 0.4 * xx - 0.3 * yy
                          + rng.normal(0.0, 12.0, (h, w))), 0.0, 255.0)
    return {"img": img.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    h, w = shape["h"], shape["w"]
    p = np.pad(np.asarray(inputs["img"], dtype=np.float64).reshape(h, w), 1, mode="edge")
    gx = p[1:-1, 2:] - p[1:-1, :-2]
    gy = p[2:, 1:-1] - p[:-2, 1:-1]
    mag = np.sqrt(gx * gx + gy * gy)
    ang = np.degrees(np.arctan2(gy, gx))
    ang = np.where(ang < 0.0, ang + 180.0, ang)
    pos = ang / 20.0 - 0.5
    fb = np.floor(pos)
    frac = pos - fb
    b0 = fb.astype(np.int64) % NBINS
    b1 = (fb.astype(np.int64) + 1) % NBINS
    ch, cw = -(-h // CELL), -(-w // CELL)
    cell = (np.arange(h)[:, None] // CELL) * cw + np.arange(w)[None, :] // CELL
    hist = np.zeros(ch * cw * NBINS)
    np.add.at(hist, (cell * NBINS + b0).ravel(), (mag * (1.0 - frac)).ravel())
    np.add.at(hist, (cell * NBINS + b1).ravel(), (mag * frac).ravel())
    return {"hist": hist.reshape(ch, cw, NBINS).astype(np.float32)}
