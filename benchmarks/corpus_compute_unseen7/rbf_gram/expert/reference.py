"""numpy reference for rbf_gram: G = exp(-gamma |x_i - y_j|^2) between the rows of X and Y,
in float64 (gamma is the kernel.toml scalar, 0.5)."""

from __future__ import annotations

import numpy as np

GAMMA = 0.5  # kernel.toml's gamma


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Points ~ N(0, 1/D) per coordinate, so |x - y|^2 ~ 2 for every D and G spreads over
    (0, 1); every fifth Y point is an X point moved by ~0.05 (G near 1: a dropped or doubled
    term shows against a small distance too)."""
    m, n, d = shape["M"], shape["N"], shape["D"]
    x = rng.standard_normal((m, d)) / np.sqrt(d)
    y = rng.standard_normal((n, d)) / np.sqrt(d)
    near = np.arange(0, n, 5)
    y[near] = x[near % m] + 0.05 * rng.standard_normal((near.size, d)) / np.sqrt(d)
    return {"X": x.astype(np.float32), "Y": y.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    m, n, d = shape["M"], shape["N"], shape["D"]
    x = inputs["X"].astype(np.float64).reshape(m, d)
    y = inputs["Y"].astype(np.float64).reshape(n, d)
    # the expansion is exact enough in float64 and needs no [M, N, D] temporary
    dist = np.maximum((x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T, 0.0)
    return {"G": np.exp(-GAMMA * dist).astype(np.float32)}
