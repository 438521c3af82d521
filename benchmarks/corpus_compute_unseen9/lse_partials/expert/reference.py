"""Inputs, golden partial pairs and verification for lse_partials: per block of a
512-block grid-stride walk with 256 threads, the max of its elements and the sum of
exp(x - max) over them, in float64.

How the blocks split x is the launch's, so a config is right when its merged pairs give
the log-sum-exp of x and the largest element exactly, and every slot holds a sane pair,
not when each pair matches the kernel as written."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

BLOCKS, THREADS = 512, 256  # the kernel as written
LOWEST = np.float32(-3.0e38)  # the kernel's start of a max (a slot no element reaches)
SWEEPS_PER_SLICE = 64  # grid sweeps (BLOCKS * THREADS elements each) per slice
#: float32 sums of up to ~20 000 terms a thread, then merged: ~1e-5 relative in the total
#: at worst, so 1e-4 on the log; a block's worth of elements dropped moves it by ~1e-3.
LSE_ATOL = 1e-4


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ N(0, 1), and the last element (past every whole vector when n is odd) the log of
    the others' expected sum of exponentials: the largest, and half the total, so a kernel
    that drops the tail misses the max and the log-sum-exp by log 2."""
    n = shape["n"]
    x = rng.standard_normal(n, dtype=np.float32)
    x[n - 1] = np.float32(np.log((n - 1) * np.exp(0.5)))
    return {"x": x}


def _slices(x: np.ndarray) -> Iterator[np.ndarray]:
    """x in float64 grid sweeps [sweeps, BLOCKS, THREADS], SWEEPS_PER_SLICE at a time,
    padded with -inf past its end."""
    span = BLOCKS * THREADS * SWEEPS_PER_SLICE
    for at in range(0, x.size, span):
        part = x[at:at + span].astype(np.float64)
        padded = np.full(-(-part.size // (BLOCKS * THREADS)) * BLOCKS * THREADS, -np.inf)
        padded[:part.size] = part
        yield padded.reshape(-1, BLOCKS, THREADS)


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The pairs of the kernel as written: element i goes to block (i // 256) % 512; a
    block that sees nothing keeps (LOWEST, 0)."""
    x = np.asarray(inputs["x"]).reshape(-1)
    top = np.full(BLOCKS, -np.inf)
    for part in _slices(x):
        top = np.maximum(top, part.max(axis=(0, 2)))
    seen = np.isfinite(top)
    shift = np.where(seen, top, 0.0)
    total = np.zeros(BLOCKS)
    for part in _slices(x):
        total += np.exp(part - shift[None, :, None]).sum(axis=(0, 2))
    return {"pmax": np.where(seen, top, LOWEST).astype(np.float32),
            "psum": np.where(seen, total, 0.0).astype(np.float32)}


def _merged(pmax: np.ndarray, psum: np.ndarray) -> tuple[float, float]:
    """The largest m and the log-sum-exp of the pairs, in float64."""
    top = float(pmax.max())
    return top, top + float(np.log((psum * np.exp(pmax - top)).sum()))


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """Every slot holds a pair with m at most the max and s finite and >= 0 (NaN or a value
    outside is an unwritten or corrupt slot); the largest m is the max of x exactly; the
    merged log-sum-exp is the golden one within LSE_ATOL."""
    got_m = np.asarray(outputs["pmax"]).astype(np.float64).reshape(-1)
    got_s = np.asarray(outputs["psum"]).astype(np.float64).reshape(-1)
    want_top, want_lse = _merged(np.asarray(golden["pmax"]).astype(np.float64).reshape(-1),
                                 np.asarray(golden["psum"]).astype(np.float64).reshape(-1))
    assert got_m.shape == got_s.shape == (BLOCKS,), \
        f"pmax, psum: {got_m.size}, {got_s.size} values, expected {BLOCKS}"
    odd = ~((got_m <= want_top) & np.isfinite(got_s) & (got_s >= 0.0))
    assert not odd.any(), (f"{int(odd.sum())} slots outside m <= {want_top}, s finite >= 0 "
                           f"(unwritten?), first at {int(np.argwhere(odd)[0][0])}: "
                           f"({got_m[odd][0]}, {got_s[odd][0]})")
    top, lse = _merged(got_m, got_s)
    assert top == want_top, f"pmax: max {top}, expected {want_top}"
    assert abs(lse - want_lse) <= LSE_ATOL, f"log-sum-exp {lse}, expected {want_lse}"
