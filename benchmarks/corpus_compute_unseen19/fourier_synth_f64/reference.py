"""numpy reference for fourier_synth_f64: a cos(k t) + b sin(k t) = Re((a - i b) z^k) with
z = exp(i t), and z^k = z^(16 q) z^r for k = 16 q + r, so each sample needs 49 complex
exponentials rather than 1024 cosines and sines; in float64 (in sample chunks), rounded to
float32."""

from __future__ import annotations

import numpy as np

TERMS = 512


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Samples in [-pi, pi]; coefficients uniform in [-1, 1] decaying as 1 / k."""
    n = shape["n"]
    k = np.arange(1, TERMS + 1)
    return {"t": rng.uniform(-np.pi, np.pi, n).astype(np.float32),
            "a": (rng.uniform(-1.0, 1.0, TERMS) / k).astype(np.float32),
            "b": (rng.uniform(-1.0, 1.0, TERMS) / k).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    t = np.asarray(inputs["t"], dtype=np.float64).reshape(n)
    coef = np.zeros(16 * (TERMS // 16 + 1), dtype=np.complex128)  # coef[k] for k = 0..528
    coef[1:TERMS + 1] = (np.asarray(inputs["a"], dtype=np.float64).reshape(TERMS)
                         - 1j * np.asarray(inputs["b"], dtype=np.float64).reshape(TERMS))
    by_rq = coef.reshape(-1, 16).T  # [r, q] = coef[16 q + r]
    low, high = np.arange(16), 16 * np.arange(by_rq.shape[1])
    out = np.empty(n, dtype=np.float64)
    for lo in range(0, n, 16384):
        tc = t[lo:lo + 16384, None]
        partial = np.exp(1j * tc * low) @ by_rq  # [sample, q] = sum_r coef z^r
        out[lo:lo + 16384] = (partial * np.exp(1j * tc * high)).sum(axis=1).real
    return {"out": out.astype(np.float32)}
