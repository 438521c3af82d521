"""numpy reference for coulomb_pot_tiles: the softened potential of every charge at every
probe in float64 (in probe chunks, squared distances as |p|^2 + |c|^2 - 2 p.c by a matrix
product), rounded to float32."""

from __future__ import annotations

import numpy as np

SOFTENING2 = np.float32(0.01)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Probes and charges uniform in the cube [-4, 4]^3, charges' q in [0.1, 1]."""
    n, m = shape["n"], shape["m"]
    charges = np.concatenate([rng.uniform(-4.0, 4.0, (m, 3)), rng.uniform(0.1, 1.0, (m, 1))],
                             axis=1)
    return {"probes": rng.uniform(-4.0, 4.0, (n, 3)).astype(np.float32),
            "charges": charges.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, m = shape["n"], shape["m"]
    p = np.asarray(inputs["probes"], dtype=np.float64).reshape(n, 3)
    c = np.asarray(inputs["charges"], dtype=np.float64).reshape(m, 4)
    pos, q = c[:, :3], c[:, 3]
    pp, cc = (p * p).sum(axis=1), (pos * pos).sum(axis=1) + float(SOFTENING2)
    out = np.empty(n, dtype=np.float64)
    for lo in range(0, n, 1024):
        d2 = p[lo:lo + 1024] @ pos.T
        d2 *= -2.0
        d2 += pp[lo:lo + 1024, None]
        d2 += cc
        np.sqrt(d2, out=d2)
        np.reciprocal(d2, out=d2)
        out[lo:lo + 1024] = d2 @ q
    return {"out": out.astype(np.float32)}
