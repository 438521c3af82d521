"""numpy reference for crc32_records: the same reflected CRC-32 table built in numpy, every
record's bytes fed through it at once (uint32 arithmetic is exact); equal to zlib.crc32 of
each record's 64 bytes."""

from __future__ import annotations

import numpy as np

REC_WORDS = 16
POLY = 0xEDB88320


def _table() -> np.ndarray:
    c = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        c = np.where(c & np.uint32(1), np.uint32(POLY) ^ (c >> np.uint32(1)), c >> np.uint32(1))
    return c.astype(np.uint32)


def make_inputs(shape: dict[str, int], dtype: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Records of random words, a few of them all zero bytes or all one bytes."""
    n = shape["nrec"]
    rec = rng.integers(0, 1 << 32, size=(n, REC_WORDS), dtype=np.uint32)
    rec[::97] = 0
    rec[5::101] = 0xFFFFFFFF
    return {"rec": rec}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int], dtype: str) -> dict[str, np.ndarray]:
    table = _table()
    rec = np.asarray(inputs["rec"], dtype=np.uint32).reshape(shape["nrec"], REC_WORDS)
    c = np.full(shape["nrec"], 0xFFFFFFFF, dtype=np.uint32)
    for k in range(REC_WORDS):
        w = rec[:, k].copy()
        for _ in range(4):
            c = table[(c ^ w) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
            w >>= np.uint32(8)
    return {"crc": c ^ np.uint32(0xFFFFFFFF)}
