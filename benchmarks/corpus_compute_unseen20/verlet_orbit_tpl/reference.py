"""numpy reference for verlet_orbit_tpl: the same 400 velocity-Verlet steps in float64 over
every particle at once, rounded to float32."""

from __future__ import annotations

import numpy as np

STEPS, DT = 400, 0.01


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Radii in [0.8, 1.2] at random angles, tangential speeds 0.85 to 1.1 times circular
    and a small radial part: bound orbits that stay between radius 0.4 and 2.5."""
    n = shape["n"]
    radius, angle = rng.uniform(0.8, 1.2, n), rng.uniform(0.0, 2.0 * np.pi, n)
    speed = rng.uniform(0.85, 1.1, n) / np.sqrt(radius)
    radial = rng.uniform(-0.1, 0.1, n) / np.sqrt(radius)
    c, s = np.cos(angle), np.sin(angle)
    state = np.stack([radius * c, radius * s, radial * c - speed * s, radial * s + speed * c],
                     axis=1)
    return {"state": state.astype(np.float32)}


def _gravity(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / np.sqrt(x * x + y * y)
    inv3 = inv * inv * inv
    return -x * inv3, -y * inv3


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    s = np.asarray(inputs["state"], dtype=np.float64).reshape(n, 4)
    x, y, vx, vy = (s[:, j].copy() for j in range(4))
    ax, ay = _gravity(x, y)
    for _ in range(STEPS):
        vx += 0.5 * DT * ax
        vy += 0.5 * DT * ay
        x += DT * vx
        y += DT * vy
        ax, ay = _gravity(x, y)
        vx += 0.5 * DT * ax
        vy += 0.5 * DT * ay
    return {"out": np.stack([x, y, vx, vy], axis=1).astype(np.float32)}
