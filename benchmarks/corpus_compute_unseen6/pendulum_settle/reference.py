"""numpy reference for pendulum_settle: the same classical Runge-Kutta steps in float64,
each pendulum stopped once its energy is below the threshold or after 1000 steps."""

from __future__ import annotations

import numpy as np

DT, MAX_STEPS, SETTLED = 0.02, 1000, 1.0e-4


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Angles in [-2, 2] and velocities in [-0.8, 0.8] (energy at most 1.74: never over the
    top, where float32 and float64 could part ways), damping in [0.05, 1.2] (the heavily
    damped settle after a few hundred steps, the light ones run all 1000)."""
    n = shape["n"]
    return {"theta0": rng.uniform(-2.0, 2.0, size=n).astype(np.float32),
            "omega0": rng.uniform(-0.8, 0.8, size=n).astype(np.float32),
            "damping": rng.uniform(0.05, 1.2, size=n).astype(np.float32)}


def _accel(th: np.ndarray, om: np.ndarray, g: np.ndarray) -> np.ndarray:
    return -np.sin(th) - g * om


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    th = inputs["theta0"].astype(np.float64).copy()
    om = inputs["omega0"].astype(np.float64).copy()
    g = inputs["damping"].astype(np.float64)
    for _ in range(MAX_STEPS):
        live = 0.5 * om * om + 2.0 * np.sin(0.5 * th) ** 2 >= SETTLED
        if not live.any():
            break
        t, w, gl = th[live], om[live], g[live]
        a1 = _accel(t, w, gl)
        v2 = w + 0.5 * DT * a1
        a2 = _accel(t + 0.5 * DT * w, v2, gl)
        v3 = w + 0.5 * DT * a2
        a3 = _accel(t + 0.5 * DT * v2, v3, gl)
        v4 = w + DT * a3
        a4 = _accel(t + DT * v3, v4, gl)
        th[live] = t + DT / 6.0 * (w + 2.0 * v2 + 2.0 * v3 + v4)
        om[live] = w + DT / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
    return {"theta_out": th.astype(np.float32), "omega_out": om.astype(np.float32)}
