"""numpy reference for bezier_patch_eval: the sample coordinates as the kernel rounds them
(float32 col / (res - 1)), the Bernstein bases, positions, partials, cross products and
normalization in float64 from the float32 control points (the ``__constant__`` array
``ctrl``, an input), rounded to float32."""

from __future__ import annotations

import numpy as np

PATCHES = 8


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Height-field patches: point (i, j) of a patch near (i / 3, j / 3) (jittered by 0.05)
    with a height in [-0.3, 0.3], so the partials stay near (1, 0, .) and (0, 1, .) and no
    normal degenerates."""
    ii, jj = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    pts = np.empty((PATCHES, 4, 4, 3))
    pts[..., 0] = ii / 3.0 + rng.uniform(-0.05, 0.05, (PATCHES, 4, 4))
    pts[..., 1] = jj / 3.0 + rng.uniform(-0.05, 0.05, (PATCHES, 4, 4))
    pts[..., 2] = rng.uniform(-0.3, 0.3, (PATCHES, 4, 4))
    return {"ctrl": pts.reshape(-1).astype(np.float32)}


def _bases(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = 1.0 - t
    b = np.stack([s ** 3, 3 * t * s * s, 3 * t * t * s, t ** 3])
    db = np.stack([-3 * s * s, 3 * s * s - 6 * t * s, 6 * t * s - 3 * t * t, 3 * t * t])
    return b, db


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    res = shape["res"]
    P = np.asarray(inputs["ctrl"], dtype=np.float64).reshape(PATCHES, 4, 4, 3)
    t = (np.arange(res, dtype=np.float32) / np.float32(res - 1)).astype(np.float64)
    b, db = _bases(t)  # [4, res]
    # [patch, row (v), col (u), 3]
    S = np.einsum("iu,jv,pijc->pvuc", b, b, P)
    Su = np.einsum("iu,jv,pijc->pvuc", db, b, P)
    Sv = np.einsum("iu,jv,pijc->pvuc", b, db, P)
    c = np.cross(Su, Sv)
    N = c / np.linalg.norm(c, axis=-1, keepdims=True)
    return {"pos": S.astype(np.float32), "nrm": N.astype(np.float32)}
