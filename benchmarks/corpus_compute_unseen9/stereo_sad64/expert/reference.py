"""numpy reference for stereo_sad64: per pixel, the disparity in [0, 64) with the smallest
5 x 5 sum of absolute differences (the smallest on a tie), coordinates clamped to the
image, in exact integers."""

from __future__ import annotations

import numpy as np

MAX_DISP, RADIUS = 64, 2  # the kernel as written


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A textured right image (smoothed noise plus fine noise) and a left image that sees it
    shifted by a disparity that steps across the frame (bands of 4 to 60 pixels), plus
    sensor noise, so most pixels have a clear minimum and the band edges do not."""
    h, w = shape["H"], shape["W"]
    coarse = rng.uniform(0.0, 255.0, size=(h // 4 + 2, w // 4 + 2))
    texture = np.kron(coarse, np.ones((4, 4)))[:h, :w] + rng.normal(0.0, 20.0, size=(h, w))
    right = np.clip(texture, 0, 255)
    band = (np.arange(w) * 8 // max(w, 1)).astype(np.int64)
    shift = 4 + 8 * band  # 4, 12, ..., 60
    cols = np.clip(np.arange(w)[None, :] - shift[None, :], 0, w - 1)
    left = right[:, cols[0]] + rng.normal(0.0, 3.0, size=(h, w))
    return {"left": np.clip(np.rint(left), 0, 255).astype(np.uint8),
            "right": np.clip(np.rint(right), 0, 255).astype(np.uint8)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """Per disparity, the absolute differences over the clamped, border-extended rows and
    columns, then 5-tap sums along x and along y (int16 holds 25 * 255)."""
    h, w = shape["H"], shape["W"]
    left = np.asarray(inputs["left"]).reshape(h, w).astype(np.int16)
    right = np.asarray(inputs["right"]).reshape(h, w).astype(np.int16)
    rows = np.clip(np.arange(-RADIUS, h + RADIUS), 0, h - 1)
    k = 2 * RADIUS + 1
    lwin = left[rows][:, np.clip(np.arange(-RADIUS, w + RADIUS), 0, w - 1)]
    # column c of rpad is right's column c - RADIUS - MAX_DISP + 1 (clamped): the window
    # column x + dx - d is rpad's x + dx + RADIUS + MAX_DISP - 1 - d
    rpad = right[rows][:, np.clip(np.arange(-RADIUS - MAX_DISP + 1, w + RADIUS), 0, w - 1)]
    best_cost = np.full((h, w), np.iinfo(np.int16).max, dtype=np.int16)
    best_d = np.zeros((h, w), dtype=np.int32)
    for d in range(MAX_DISP):
        start = MAX_DISP - 1 - d
        diff = np.abs(lwin - rpad[:, start:start + w + 2 * RADIUS])
        across = sum(diff[:, i:i + w] for i in range(k))
        cost = sum(across[i:i + h] for i in range(k))
        better = cost < best_cost
        np.copyto(best_cost, cost, where=better)
        best_d[better] = d
    return {"disp": best_d}
