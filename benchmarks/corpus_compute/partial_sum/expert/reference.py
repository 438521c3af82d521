"""Inputs and verification for partial_sum: one partial sum per block, added on the host.

The partials' layout is the launch's (how many blocks, which elements each adds), so a
config is right when the partials add up to the total, not when each partial matches the
baseline's. The inputs are small non-zero integers held as floats: every partial and the
total are exact in float32 (|sum| stays far below 2^24 for these sizes), so the check is
exact and a dropped or repeated element always changes the total.
"""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    mag = rng.integers(1, 9, size=n)
    sign = rng.choice(np.array([-1, 1]), size=n)
    return {"x": (mag * sign).astype(np.float32)}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The partials add up to the golden partials' total (exactly: integer-valued floats).

    NaN entries count as unwritten slots (the engine's poison is a NaN pattern; a block
    count below the buffer's length leaves slots the host must not add); a total that
    misses a written partial still differs, since no input is zero."""
    got = np.asarray(outputs["partials"], dtype=np.float64).reshape(-1)
    want = np.asarray(golden["partials"], dtype=np.float64).reshape(-1)
    assert not np.isinf(got).any(), "partials: an infinite partial sum"
    written = ~np.isnan(got)
    assert written.any(), "partials: no partial sum written"
    total, expected = float(got[written].sum()), float(want[~np.isnan(want)].sum())
    assert abs(total - expected) <= 0.5, (
        f"partials: the {int(written.sum())} partial sums add up to {total:.1f}; "
        f"expected {expected:.1f} (difference {total - expected:+.1f})")
