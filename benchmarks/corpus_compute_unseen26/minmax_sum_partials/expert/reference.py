"""Inputs, golden partials and verification for minmax_sum_partials: per-block minimum,
maximum and sum of a float array's contiguous chunks, folded on the host.

How the blocks split the array is the launch's, so a config is right when its partials
fold to the array's minimum, maximum and total, not when each matches the kernel as
written. The inputs are integers held as floats: every value in [-1000, 1000] but one
-4096 (the only minimum) and one 5000 (the only maximum), planted at random places, so a
chunk dropped or cut short loses the planted extreme or changes the total; with a mean of
zero every partial sum a kernel forms stays far inside float32's exact integers (a random
walk: ~6e5 at a million elements against 2^24), so the totals are compared exactly."""

from __future__ import annotations

import numpy as np

THREADS, ELEMS_A_BLOCK, MAX_BLOCKS = 256, 2048, 1024  # the kernel as written
SLOTS = 1024  # each partial buffer: room for any config's grid
LOWEST, HIGHEST = -4096.0, 5000.0


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = shape["n"]
    x = rng.integers(-1000, 1001, size=n).astype(np.float32)
    at = rng.choice(n, size=2, replace=False)
    x[at[0]], x[at[1]] = LOWEST, HIGHEST
    return {"x": x}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """The partials of the kernel as written (block b: elements [b chunk, (b + 1) chunk)),
    in float64; NaN in the slots past its grid (unwritten)."""
    n = shape["n"]
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(-1)
    blocks = min(-(-n // ELEMS_A_BLOCK), MAX_BLOCKS)
    chunk = -(-n // blocks)
    out = {name: np.full(SLOTS, np.nan) for name in ("lo", "hi", "sum")}
    for b in range(blocks):
        part = x[b * chunk:min((b + 1) * chunk, n)]
        out["lo"][b], out["hi"][b], out["sum"][b] = part.min(), part.max(), part.sum()
    return {name: values.astype(np.float32) for name, values in out.items()}


def verify(outputs: dict[str, np.ndarray], golden: dict[str, np.ndarray],
           shape: dict[str, int]) -> None:
    """The written partials fold to the golden partials' minimum, maximum and total
    (exactly). NaN entries count as unwritten slots (the engine's poison is a NaN pattern;
    a config with fewer blocks leaves more slots unwritten); a block whose chunk is empty
    may write the identities (+inf, -inf, 0)."""
    got = {k: np.asarray(outputs[k], dtype=np.float64).reshape(-1) for k in ("lo", "hi", "sum")}
    want = {k: np.asarray(golden[k], dtype=np.float64).reshape(-1) for k in ("lo", "hi", "sum")}
    for k in got:
        assert got[k].shape == want[k].shape, f"{k}: {got[k].size} values, expected {want[k].size}"
    written = ~np.isnan(got["sum"])
    assert written.any(), "sum: no partial written"
    for k in ("lo", "hi"):
        assert (np.isnan(got[k]) == ~written).all(), f"{k}: written at other slots than sum"
    assert np.isfinite(got["sum"][written]).all(), "sum: an infinite partial sum"
    full = written & np.isfinite(got["lo"])  # a chunk with at least one element
    assert (got["lo"][full] <= got["hi"][full]).all(), "lo: a partial minimum above its maximum"
    low, high = float(got["lo"][written].min()), float(got["hi"][written].max())
    total = float(got["sum"][written].sum())
    wl = float(np.nanmin(want["lo"]))
    wh = float(np.nanmax(want["hi"]))
    wt = float(np.nansum(want["sum"]))
    assert low == wl, f"lo: the partial minima fold to {low}; expected {wl}"
    assert high == wh, f"hi: the partial maxima fold to {high}; expected {wh}"
    assert total == wt, (f"sum: the {int(written.sum())} partial sums add up to {total:.1f}; "
                         f"expected {wt:.1f} (difference {total - wt:+.1f})")
