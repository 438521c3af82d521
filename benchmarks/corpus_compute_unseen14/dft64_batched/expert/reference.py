"""numpy reference for dft64_batched: numpy's FFT of each 64-point signal in float64 (the
same sums as the direct DFT, up to rounding)."""

from __future__ import annotations

import numpy as np

N = 64


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Real and imaginary parts ~ U(-1, 1)."""
    return {"in": rng.uniform(-1.0, 1.0, size=(shape["batch"], N, 2)).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    b = shape["batch"]
    x = np.asarray(inputs["in"]).astype(np.float64).reshape(b, N, 2)
    spectrum = np.fft.fft(x[..., 0] + 1j * x[..., 1], axis=1)
    out = np.stack([spectrum.real, spectrum.imag], axis=-1)
    return {"out": out.astype(np.float32)}
