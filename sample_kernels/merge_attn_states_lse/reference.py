"""numpy reference for merge_attn_states_lse (natural-log LSE, +inf = empty segment)."""

from __future__ import annotations

import numpy as np

INF_FRACTION = 0.1  # share of (token, head) rows with one empty segment, as in SGLang's tests


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Values ~ N(0, 1); LSEs ~ N(0, 2^2) with ~10 % +inf on exactly one side of a row."""
    tokens, heads, head_dim = shape["tokens"], shape["heads"], shape["head_dim"]
    v_a = rng.standard_normal((tokens, heads, head_dim), dtype=np.float32)
    v_b = rng.standard_normal((tokens, heads, head_dim), dtype=np.float32)
    s_a = (2.0 * rng.standard_normal((tokens, heads))).astype(np.float32)
    s_b = (2.0 * rng.standard_normal((tokens, heads))).astype(np.float32)
    empty = rng.random((tokens, heads)) < INF_FRACTION
    side_a = rng.random((tokens, heads)) < 0.5
    s_a[empty & side_a] = np.inf
    s_b[empty & ~side_a] = np.inf
    return {"v_a": v_a, "s_a": s_a, "v_b": v_b, "s_b": s_b}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    """Weighted average of v_a and v_b by exp(LSE), in float64."""
    s_a = inputs["s_a"].astype(np.float64)
    s_b = inputs["s_b"].astype(np.float64)
    s_a = np.where(np.isposinf(s_a), -np.inf, s_a)
    s_b = np.where(np.isposinf(s_b), -np.inf, s_b)
    m = np.maximum(s_a, s_b)
    w_a, w_b = np.exp(s_a - m), np.exp(s_b - m)
    total = w_a + w_b
    v = (w_a[..., None] * inputs["v_a"].astype(np.float64)
         + w_b[..., None] * inputs["v_b"].astype(np.float64)) / total[..., None]
    return {"out": v, "out_lse": m + np.log(total)}
