"""numpy reference for adamw_step: the moments and the step in float64 from the float32
inputs and the float32 hyper-parameters of kernel.toml's scalars, rounded to float32."""

from __future__ import annotations

import numpy as np

# kernel.toml's scalar arguments, as the kernel receives them (float32)
LR, BETA1, BETA2, EPS, WD = (np.float32(v) for v in ("0.001", "0.9", "0.999", "0.00000001",
                                                      "0.01"))
BC1, BC2 = np.float32("0.6513215"), np.float32("0.00995512")  # 1 - beta^10, step t = 10


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Weights of unit scale, gradients of 0.05, first moments of 0.02, second moments near
    the gradients' squares (at least 1e-4: the denominators stay far above eps)."""
    n = shape["n"]
    return {"p": rng.standard_normal(n).astype(np.float32),
            "g": (0.05 * rng.standard_normal(n)).astype(np.float32),
            "m": (0.02 * rng.standard_normal(n)).astype(np.float32),
            "v": ((0.05 * rng.standard_normal(n)) ** 2 + 1e-4).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    p, g, m, v = (np.asarray(inputs[k], dtype=np.float64).reshape(n) for k in "pgmv")
    b1, b2 = float(BETA1), float(BETA2)
    m2 = b1 * m + (1.0 - b1) * g
    v2 = b2 * v + (1.0 - b2) * g * g
    p2 = p - float(LR) * ((m2 / float(BC1)) / (np.sqrt(v2 / float(BC2)) + float(EPS))
                          + float(WD) * p)
    return {"p_out": p2.astype(np.float32), "m_out": m2.astype(np.float32),
            "v_out": v2.astype(np.float32)}
