"""numpy reference for sym3_jacobi: every matrix's eigenvalues in closed form (the
trigonometric solution of the characteristic cubic) in float64, ascending."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Upper-triangle entries ~ U(-1, 1)."""
    return {"m": rng.uniform(-1.0, 1.0, size=(shape["n"], 6)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    m = np.asarray(inputs["m"]).astype(np.float64).reshape(n, 6)
    a00, a01, a02, a11, a12, a22 = m.T
    q = (a00 + a11 + a22) / 3.0
    off = a01 * a01 + a02 * a02 + a12 * a12
    p = np.sqrt(((a00 - q) ** 2 + (a11 - q) ** 2 + (a22 - q) ** 2 + 2.0 * off) / 6.0)
    safe = np.where(p > 0.0, p, 1.0)  # p == 0: a multiple of the identity, all three are q
    b00, b11, b22 = (a00 - q) / safe, (a11 - q) / safe, (a22 - q) / safe
    b01, b02, b12 = a01 / safe, a02 / safe, a12 / safe
    det = (b00 * (b11 * b22 - b12 * b12) - b01 * (b01 * b22 - b12 * b02)
           + b02 * (b01 * b12 - b11 * b02))
    phi = np.arccos(np.clip(det / 2.0, -1.0, 1.0)) / 3.0
    top = q + 2.0 * p * np.cos(phi)
    bottom = q + 2.0 * p * np.cos(phi + 2.0 * np.pi / 3.0)
    middle = 3.0 * q - top - bottom
    return {"w": np.sort(np.stack((bottom, middle, top), axis=1), axis=1).astype(np.float32)}
