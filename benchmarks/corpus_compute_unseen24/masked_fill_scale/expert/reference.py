"""numpy reference for masked_fill_scale: where the mask byte is nonzero the fill value,
elsewhere the float32 product of the input and the scale (one rounding, as the kernel's)."""

from __future__ import annotations

import numpy as np

VALUE, SCALE = np.float32(-10000.0), np.float32(0.125)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Normal inputs and a mask of about one in three set, its bytes any nonzero value (not
    only 1)."""
    n = shape["n"]
    mask = rng.integers(0, 256, n, dtype=np.uint8)
    mask[rng.random(n) < 0.67] = 0
    return {"in": rng.normal(0.0, 4.0, n).astype(np.float32), "mask": mask}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)
    mask = np.asarray(inputs["mask"]).reshape(-1)
    return {"out": np.where(mask != 0, VALUE, x * SCALE).astype(np.float32)}
