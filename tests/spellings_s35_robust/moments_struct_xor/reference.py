"""Inputs, golden partials and verification for moments_struct_xor: the partials of the
kernel as written (block b: elements b * 256 + t + k * stride) in float64, NaN in the slots
past its grid (unwritten). The grid deals the elements to blocks, so a config is right when
each output's written partials add up to its total (within a relative 1e-5: every term is
positive)."""

from __future__ import annotations

import numpy as np

THREADS, MAX_BLOCKS, SLOTS = 256, 1024, 1024
RTOL = 1e-5


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.uniform(0.5, 2.0, shape["n"]).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    n = shape["n"]
    x = np.asarray(inputs["x"], dtype=np.float64)
    blocks = min(-(-n // THREADS), MAX_BLOCKS)
    owner = (np.arange(n) // THREADS) % blocks
    out = {}
    for name, w in (("sum", x), ("sumsq", x * x)):
        part = np.full(SLOTS, np.nan)
        part[:blocks] = np.bincount(owner, weights=w, minlength=blocks)
        out[name] = part.astype(np.float32)
    return out


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """Each output's written partials (NaN: an unwritten slot) are finite and add up to its
    golden total within RTOL."""
    for name in ("sum", "sumsq"):
        got = np.asarray(outputs[name], dtype=np.float64).reshape(-1)
        want = np.asarray(golden[name], dtype=np.float64).reshape(-1)
        written = ~np.isnan(got)
        assert written.any(), f"{name}: no partial written"
        assert np.isfinite(got[written]).all(), f"{name}: an infinite partial sum"
        total, expected = float(got[written].sum()), float(np.nansum(want))
        assert abs(total - expected) <= RTOL * expected, (
            f"{name}: the partials add up to {total!r}; expected {expected!r}")
