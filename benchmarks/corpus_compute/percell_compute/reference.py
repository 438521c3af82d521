"""numpy reference for percell_compute: the plane field of each point. The table is the
kernel's ``__constant__`` array ``planes`` (an input, per the kernel-folder contract)."""

from __future__ import annotations

import numpy as np

NPLANES = 16


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Points uniform in [-1, 1]^3 (about half in front of each plane, so both branches
    diverge inside every warp); per plane a unit normal, an offset in [-0.5, 0.5], a
    weight in [-1, 1] and a sharpness in [0.5, 4]."""
    n = shape["n"]
    normals = rng.standard_normal((NPLANES, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    table = np.concatenate([normals,
                            rng.uniform(-0.5, 0.5, (NPLANES, 1)),
                            rng.uniform(-1.0, 1.0, (NPLANES, 1)),
                            rng.uniform(0.5, 4.0, (NPLANES, 1))], axis=1)
    pts = rng.uniform(-1.0, 1.0, (3, n)).astype(np.float32)
    return {"px": pts[0], "py": pts[1], "pz": pts[2],
            "planes": table.reshape(-1).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """float64 (the field is continuous at s = 0, so a point within rounding of a plane
    may take either side)."""
    table = inputs["planes"].astype(np.float64).reshape(NPLANES, 6)
    x, y, z = (inputs[k].astype(np.float64) for k in ("px", "py", "pz"))
    acc = np.zeros_like(x)
    for nx, ny, nz, d, wt, k in table:
        s = nx * x + ny * y + nz * z - d
        acc += np.where(s > 0, wt * np.exp(-k * s * s), wt * (1.0 + np.sin(s) * np.cos(k * s)))
    return {"out": acc.astype(np.float32)}
