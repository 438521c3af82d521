"""numpy reference for gemv_q4_rows: y = W x with W decoded from 4-bit codes (eight to a
32-bit word, low nibble first) times a scale per group of 32 columns, in float64."""

from __future__ import annotations

import numpy as np

GROUP = 32  # columns per scale, the kernel as written
ROWS_PER_SLICE = 1024


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every code of 0..15 equally likely (random words), scales ~ U(0.005, 0.02) as a
    quantiser's are, x ~ N(0, 1)."""
    rows, cols = shape["rows"], shape["cols"]
    words = rng.integers(0, 1 << 32, size=(rows, cols // 8), dtype=np.uint64)
    scales = rng.uniform(0.005, 0.02, size=(rows, cols // GROUP))
    x = rng.standard_normal(cols)
    return {"wq": words.astype(np.uint32), "scales": scales.astype(np.float32),
            "x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """In slices of ROWS_PER_SLICE rows (a whole large W decoded to float64 would take
    gigabytes)."""
    rows, cols = shape["rows"], shape["cols"]
    wq = np.asarray(inputs["wq"]).reshape(rows, cols // 8)
    scales = np.asarray(inputs["scales"]).astype(np.float64).reshape(rows, cols // GROUP)
    x = np.asarray(inputs["x"]).astype(np.float64).reshape(cols)
    shifts = (4 * np.arange(8)).astype(np.uint32)
    y = np.empty(rows, dtype=np.float32)
    for r0 in range(0, rows, ROWS_PER_SLICE):
        part = wq[r0:r0 + ROWS_PER_SLICE]
        codes = ((part[:, :, None] >> shifts) & np.uint32(15)).reshape(part.shape[0], cols)
        w = (codes.astype(np.float64) - 8.0) * np.repeat(scales[r0:r0 + ROWS_PER_SLICE],
                                                         GROUP, axis=1)
        y[r0:r0 + ROWS_PER_SLICE] = w @ x
    return {"y": y}
