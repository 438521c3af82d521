"""numpy reference for crspline_rotmean: the orbit points in float32 with the kernel's own
additions and wraps (so every point and its segment are the kernel's), each segment's cubic
(the kernel's coefficients from its four knots) in float64, the mean over the 64 points rounded to float32."""

from __future__ import annotations

import numpy as np

KNOTS, SAMPLES = 64, 64
STEP = np.float32(0.61803398875)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """u uniform in [0, 1); knots of a smooth periodic curve plus noise, all distinct."""
    grid = np.arange(KNOTS) / KNOTS
    phase = rng.uniform(0.0, 2.0 * np.pi, 2)
    table = (0.5 + 0.3 * np.sin(2.0 * np.pi * grid + phase[0])
             + 0.1 * np.sin(6.0 * np.pi * grid + phase[1]) + rng.uniform(-0.05, 0.05, KNOTS))
    return {"u": rng.uniform(0.0, 1.0, shape["n"]).astype(np.float32),
            "table": table.astype(np.float32)}


def _wrap(t: np.ndarray) -> np.ndarray:
    return np.where(t >= np.float32(1.0), t - np.float32(1.0), t)


def _segments(knots: np.ndarray) -> np.ndarray:
    """Each segment's cubic coefficients (constant term first), 64 x 4, in float64."""
    p0, p1 = np.roll(knots, 1), knots
    p2, p3 = np.roll(knots, -1), np.roll(knots, -2)
    return np.stack([p1, 0.5 * (p2 - p0), p0 - 2.5 * p1 + 2.0 * p2 - 0.5 * p3,
                     0.5 * (p3 - p0) + 1.5 * (p1 - p2)], axis=1)


def _spline(segments: np.ndarray, t: np.ndarray) -> np.ndarray:
    s = t * np.float32(KNOTS)  # exact: a power of two
    i = np.minimum(s.astype(np.int32), KNOTS - 1)
    f = (s - i.astype(np.float32)).astype(np.float64)
    c0, c1, c2, c3 = (np.take(segments[:, j], i) for j in range(4))
    return ((c3 * f + c2) * f + c1) * f + c0


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    u = np.asarray(inputs["u"], dtype=np.float32).reshape(shape["n"])
    segments = _segments(np.asarray(inputs["table"], dtype=np.float64).reshape(KNOTS))
    total = np.zeros(u.shape)
    offset = np.float32(0.0)
    for _ in range(SAMPLES):
        total += _spline(segments, _wrap(u + offset))
        offset = np.float32(offset + STEP)
        offset = offset - np.float32(1.0) if offset >= np.float32(1.0) else offset
    return {"out": (total / SAMPLES).astype(np.float32)}
