"""Inputs for a kernel folder with no ``make_inputs``: one generator per argument dtype.

Used when ``reference.py`` is absent or defines only ``reference``. Values are random (a
kernel that ignores its input, or reads the wrong element, gives different outputs) and
never all zeros:

- float dtypes (``f32``, ``bf16``, ``fp16``, fp8, the element dtype ``T``): N(0, 1),
  rounded to the dtype on upload (fp8 e4m3/e5m2 hold it without saturating);
- 8- and 16-bit integers: uniform over the whole range of the type;
- 32- and 64-bit integers: uniform over ``[0, m)`` where ``m`` is the smallest problem size
  of the shape (at least 2), so that an index argument (a gather's token ids, a row map)
  stays in bounds of every dimension. Give ``make_inputs`` when indices need another range.

Module globals read as inputs (``__constant__`` tables: workbench.core.module_constants)
get the same generators; :func:`complete_inputs` adds those ``make_inputs`` did not return
and checks the ones it did (element count; values that are all zero are refused: a zero
table makes every output zero and hides a config that reads the wrong entry).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import INTEGER_DTYPES
from workbench.core.errors import InputsError

__all__ = ["complete_inputs", "default_inputs"]

_WIDE = ("i32", "u32", "i64")


def _one(dtype: str, shape: tuple[int, ...], sizes: Mapping[str, int],
         rng: np.random.Generator) -> np.ndarray:
    if dtype in INTEGER_DTYPES:
        if dtype in _WIDE:
            high = max(2, min(sizes.values(), default=2))
            return rng.integers(0, high, size=shape, dtype=np.int64)
        info = np.iinfo(INTEGER_DTYPES[dtype])
        return rng.integers(int(info.min), int(info.max) + 1, size=shape, dtype=np.int64)
    return rng.standard_normal(shape, dtype=np.float32)


def default_inputs(args: Sequence[Mapping[str, Any]], sizes: Mapping[str, int],
                   rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Host arrays for every ``in``/``inout`` buffer of an argument layout
    (:meth:`KernelFolder.arg_layout`: name, role, concrete dtype, shape)."""
    out: dict[str, np.ndarray] = {}
    for arg in args:
        if arg["role"] not in ("in", "inout"):
            continue
        shape = tuple(int(n) for n in arg["shape"])
        out[arg["name"]] = _one(str(arg["dtype"]), shape, sizes, rng)
    return out


def complete_inputs(host: Mapping[str, Any], constants: Sequence[Mapping[str, Any]],
                    sizes: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``host`` (from make_inputs or :func:`default_inputs`) plus a value for every module
    global of ``constants`` (:meth:`KernelFolder.constant_layout`: name, dtype, shape).

    A constant make_inputs returned keeps its values, reshaped to the declared shape (the
    symbol is flat memory: the element count must match); a missing one is generated per
    dtype. ValueError names the constant whose array has the wrong element count or is
    all zeros."""
    out = {k: np.asarray(v) for k, v in host.items()}
    for const in constants:
        name = str(const["name"])
        shape = tuple(int(n) for n in const["shape"])
        count = int(np.prod(shape)) if shape else 1
        if name in out:
            given = out[name]
            if given.size != count:
                raise InputsError(f"make_inputs()[{name!r}] holds {given.size} elements; the "
                                  f"module global {name} holds {count} (shape {list(shape)})",
                                  name=name, expected=f"{count} elements")
            out[name] = given.reshape(shape)
        else:
            out[name] = _one(str(const["dtype"]), shape, sizes, rng)
            if count and not np.any(out[name]):  # a 1-element integer draw of 0
                out[name] = np.ones(shape, dtype=out[name].dtype)
        if count and not np.any(out[name]):
            raise InputsError(f"make_inputs()[{name!r}]: every value of the module global "
                              f"{name} is zero (every output would be zero whatever the "
                              "config reads)", name=name, expected="a nonzero value")
    return out
