"""numpy reference for wht1024_rows: the ten butterfly stages over chunks of rows in
float64, scaled by 1 / 32."""

from __future__ import annotations

import numpy as np

ROW = 1024
CHUNK = 256  # rows transformed together (2 MB of float64: they stay in cache)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x ~ U(-1, 1)."""
    return {"x": rng.uniform(-1.0, 1.0, size=(shape["rows"], ROW)).astype(np.float32)}


def _transform(v: np.ndarray) -> None:
    """The ten stages over the rows of ``v`` [rows, ROW], in place."""
    h = 1
    while h < ROW:
        pairs = v.reshape(v.shape[0], ROW // (2 * h), 2, h)  # [.., 0, :] bit h clear
        a, b = pairs[:, :, 0, :], pairs[:, :, 1, :]
        total = a + b
        np.subtract(a, b, out=b)
        a[...] = total
        h *= 2


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows = shape["rows"]
    x = np.asarray(inputs["x"]).reshape(rows, ROW)
    y = np.empty((rows, ROW), dtype=np.float32)
    for lo in range(0, rows, CHUNK):
        v = x[lo:lo + CHUNK].astype(np.float64)
        _transform(v)
        y[lo:lo + CHUNK] = v / 32.0
    return {"y": y}
