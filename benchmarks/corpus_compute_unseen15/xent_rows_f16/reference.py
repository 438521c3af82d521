"""numpy reference for xent_rows_f16: each row's log-sum-exp (shifted by its maximum) less
its label's logit, in float64 from the half logits. Chunked over rows."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Logits ~ N(0, 3) stored as half; labels ~ U{0, cols - 1}."""
    rows, cols = shape["rows"], shape["cols"]
    return {"logits": rng.normal(0.0, 3.0, size=(rows, cols)).astype(np.float16),
            "label": rng.integers(0, cols, size=rows).astype(np.int32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    rows, cols = shape["rows"], shape["cols"]
    z_all = np.asarray(inputs["logits"]).reshape(rows, cols)
    label = np.asarray(inputs["label"]).astype(np.int64).reshape(rows)
    out = np.empty(rows, dtype=np.float32)
    step = 4096
    for lo in range(0, rows, step):
        z = z_all[lo:lo + step].astype(np.float64)
        m = z.max(axis=1)
        lse = np.log(np.exp(z - m[:, None]).sum(axis=1)) + m
        out[lo:lo + step] = lse - z[np.arange(z.shape[0]), label[lo:lo + step]]
    return {"loss": out}
