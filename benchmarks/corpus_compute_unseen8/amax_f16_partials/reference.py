"""Inputs, golden partial maxima and verification for amax_f16_partials: per block of a
264-block grid-stride walk with 256 threads, max |x| over the elements it visits.

How the blocks split x is the launch's, so a config is right when the max of its 264
partials is the max |x| and no partial exceeds it, not when each partial matches the
kernel as written. Every |x| is an exact half value, so the max is exact."""

from __future__ import annotations

import numpy as np

BLOCKS, THREADS = 264, 256  # the kernel as written


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ N(0, 1) in half, with the maximum |x| a -37.5 (negative: a kernel that forgets
    the absolute value misses it) in the last element (past every whole vector when n is
    odd: a kernel that drops the tail misses it), and a +21.25 elsewhere."""
    n = shape["n"]
    x = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    x[n - 1] = -37.5
    x[n // 5] = 21.25
    return {"x": x}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written: element i goes to block (i // 256) % 264."""
    n = shape["n"]
    span = BLOCKS * THREADS  # one sweep of the grid
    a = np.zeros(-(-n // span) * span, dtype=np.float32)  # a block that sees nothing: 0
    a[:n] = np.abs(np.asarray(inputs["x"]).astype(np.float32).reshape(-1))
    return {"partial": a.reshape(-1, BLOCKS, THREADS).max(axis=(0, 2))}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The max of the partials is the golden max exactly; every partial is written and lies
    in [0, max] (NaN or a value outside is an unwritten or corrupt slot)."""
    got = np.asarray(outputs["partial"]).astype(np.float64).reshape(-1)
    want = np.asarray(golden["partial"]).astype(np.float64).reshape(-1)
    assert got.shape == want.shape, f"partial: {got.size} values, expected {want.size}"
    top = want.max()
    odd = ~((got >= 0.0) & (got <= top))
    assert not odd.any(), (f"partial: {int(odd.sum())} slots outside [0, {top}] (unwritten?), "
                           f"first at {int(np.argwhere(odd)[0][0])}: {got[odd][0]}")
    assert got.max() == top, f"partial: max {got.max()}, expected {top}"
