"""numpy reference for jacobi9_torus: the sweep with periodic neighbours (np.roll), field by
field in float64."""

from __future__ import annotations

import numpy as np

OMEGA = float(np.float32(0.8))
H2 = 0.0625  # kernel.toml's h2


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u and f ~ U(-1, 1)."""
    size = (shape["B"], shape["H"], shape["W"])
    return {"u": rng.uniform(-1.0, 1.0, size=size).astype(np.float32),
            "f": rng.uniform(-1.0, 1.0, size=size).astype(np.float32)}


def _sweep(u: np.ndarray, f: np.ndarray) -> np.ndarray:
    def at(dr: int, dc: int) -> np.ndarray:  # the neighbour dr rows down, dc columns right
        return np.roll(u, (-dr, -dc), axis=(0, 1))

    edges = at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1)
    corners = at(-1, -1) + at(-1, 1) + at(1, -1) + at(1, 1)
    return (1.0 - OMEGA) * u + OMEGA * (4.0 * edges + corners + 6.0 * H2 * f) / 20.0


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    size = (shape["B"], shape["H"], shape["W"])
    u = np.asarray(inputs["u"]).reshape(size)
    f = np.asarray(inputs["f"]).reshape(size)
    out = np.empty(size, dtype=np.float32)
    for b in range(size[0]):
        out[b] = _sweep(u[b].astype(np.float64), f[b].astype(np.float64))
    return {"u_new": out}
