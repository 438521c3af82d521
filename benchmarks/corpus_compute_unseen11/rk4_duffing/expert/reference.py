"""numpy reference for rk4_duffing: every oscillator stepped at once in float64 with the
kernel's constants and step (each rounded to float32 first, as the kernel holds them)."""

from __future__ import annotations

import numpy as np

DAMP, STIFF, OMEGA = (float(np.float32(c)) for c in (0.25, 0.5, 1.3))
DT = float(np.float32(0.02))  # kernel.toml's dt
CHUNK = 8192  # oscillators stepped together (their arrays stay in cache)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Starts x0, v0 ~ U(-2, 2), drives ~ U(0, 2)."""
    n = shape["n"]
    return {"x0": rng.uniform(-2.0, 2.0, size=n).astype(np.float32),
            "v0": rng.uniform(-2.0, 2.0, size=n).astype(np.float32),
            "drive": rng.uniform(0.0, 2.0, size=n).astype(np.float32)}


def _integrate(x: np.ndarray, v: np.ndarray, g: np.ndarray,
               steps: int) -> tuple[np.ndarray, np.ndarray]:
    def accel(x: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        return g * np.cos(OMEGA * t) - DAMP * v - x - STIFF * x * x * x

    half = 0.5 * DT
    for s in range(max(steps, 1)):  # the kernel's do-while runs at least once
        t = s * DT
        k1x, k1v = v, accel(x, v, t)
        k2x, k2v = v + half * k1v, accel(x + half * k1x, v + half * k1v, t + half)
        k3x, k3v = v + half * k2v, accel(x + half * k2x, v + half * k2v, t + half)
        k4x, k4v = v + DT * k3v, accel(x + DT * k3x, v + DT * k3v, t + DT)
        x = x + DT / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        v = v + DT / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    return x, v


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n, steps = shape["n"], shape["steps"]
    x = np.asarray(inputs["x0"]).astype(np.float64).reshape(n)
    v = np.asarray(inputs["v0"]).astype(np.float64).reshape(n)
    g = np.asarray(inputs["drive"]).astype(np.float64).reshape(n)
    x_end, v_end = np.empty(n), np.empty(n)
    for lo in range(0, n, CHUNK):
        part = slice(lo, lo + CHUNK)
        x_end[part], v_end[part] = _integrate(x[part], v[part], g[part], steps)
    return {"x_end": x_end.astype(np.float32), "v_end": v_end.astype(np.float32)}
