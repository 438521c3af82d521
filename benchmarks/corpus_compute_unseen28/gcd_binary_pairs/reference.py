"""Inputs and numpy reference for gcd_binary_pairs: Stein's binary gcd of uint32 pairs and
its subtraction rounds, run on whole arrays (every pair steps together, a finished pair
masked off): exact integers, compared exactly."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Mostly uniform uint32 pairs; every 7th pair shares a random factor of 1 to 2^12
    times a power of two up to 2^6 (a large gcd, common factors of two), every 97th has a
    zero on one side, every 101st is a pair of equal values."""
    n = shape["n"]
    a = rng.integers(0, 2**32, size=n, dtype=np.uint64)
    b = rng.integers(0, 2**32, size=n, dtype=np.uint64)
    f = rng.integers(1, 2**12, size=n, dtype=np.uint64) << rng.integers(0, 7, size=n).astype(np.uint64)
    shared = np.arange(n) % 7 == 3
    a[shared] = (a[shared] % (2**32 // f[shared])) * f[shared]
    b[shared] = (b[shared] % (2**32 // f[shared])) * f[shared]
    a[np.arange(n) % 97 == 5] = 0
    b[np.arange(n) % 97 == 50] = 0
    same = np.arange(n) % 101 == 7
    b[same] = a[same]
    return {"a": a.astype(np.uint32), "b": b.astype(np.uint32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    u = np.asarray(inputs["a"]).reshape(-1).astype(np.uint64)
    v = np.asarray(inputs["b"]).reshape(-1).astype(np.uint64)
    g = np.where(u == 0, v, u)  # gcd(0, v) = v, gcd(u, 0) = u
    rounds = np.zeros(u.size, dtype=np.int64)
    live = (u != 0) & (v != 0)
    shift = np.zeros(u.size, dtype=np.uint64)
    while True:  # the common factors of two
        m = live & (((u | v) & 1) == 0)
        if not m.any():
            break
        u[m] >>= 1
        v[m] >>= 1
        shift[m] += 1
    while True:
        m = live & ((u & 1) == 0)
        if not m.any():
            break
        u[m] >>= 1
    going = live.copy()
    while going.any():
        while True:
            m = going & ((v & 1) == 0)
            if not m.any():
                break
            v[m] >>= 1
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        u = np.where(going, lo, u)
        v = np.where(going, hi - lo, v)
        rounds[going] += 1
        going &= v != 0
    g = np.where(live, u << shift, g)
    return {"g": g.astype(np.uint32), "rounds": rounds.astype(np.int32)}
