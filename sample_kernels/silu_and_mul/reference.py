"""numpy reference for silu_and_mul: out = T(silu(gate)) * up, gate = x[:, :d], up = x[:, d:]."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Activations ~ N(0, 1), the scale of an MLP's gate/up projections."""
    tokens, d = shape["tokens"], shape["d"]
    return {"input": rng.standard_normal((tokens, 2 * d), dtype=np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """SiLU in float64, rounded to the element dtype before the multiply (SGLang's order)."""
    from workbench.core.dtypes import quantize  # imported lazily: core loads this file by path

    d = shape["d"]
    gate = inputs["input"][:, :d].astype(np.float64)
    up = inputs["input"][:, d:].astype(np.float64)
    act = quantize((gate / (1.0 + np.exp(-gate))).astype(np.float32), dtype)
    return {"out": (act.astype(np.float64) * up).astype(np.float32)}
