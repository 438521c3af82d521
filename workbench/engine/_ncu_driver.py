"""A tiny launcher for Nsight Compute: ``python _ncu_driver.py problem.json``.

Loads one cubin with pycuda (or, under ``kernels``, several configs' cubins that share the
problem's buffers), fills every buffer with random numbers (element dtype bits for
bf16/fp16 are drawn as small random floats' bit patterns), launches each kernel three times
(or the problem's ``launches`` times) in turn and synchronises. It checks nothing: correctness is
the GPU worker's job. Runs only under ``ncu`` (:func:`workbench.engine.ncu.profile_config`
and the benchmarks' ncu probes).
"""

from __future__ import annotations

import json
import sys

import numpy as np

_INTEGERS = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
             "i32": np.int32, "u32": np.uint32, "i64": np.int64}


def main(path: str) -> None:
    import pycuda.autoinit  # noqa: F401  (creates the context)
    import pycuda.driver as drv

    with open(path, encoding="utf-8") as fh:
        problem = json.load(fh)
    rng = np.random.default_rng(0)
    args, keep = [], []
    for arg in problem["args"]:
        dtype = arg["dtype"]
        if arg["role"] == "scalar":
            value = arg["value"]
            args.append(np.int64(value) if dtype == "i64" else
                        np.float32(value) if dtype == "f32" else np.int32(value))
            continue
        count = int(np.prod(arg["shape"])) if arg["shape"] else 1
        values = rng.standard_normal(count).astype(np.float32)
        host: np.ndarray
        if dtype == "bf16":
            host = (values.view(np.uint32) >> 16).astype(np.uint16)
        elif dtype == "fp16":
            host = values.astype(np.float16).view(np.uint16)
        elif dtype in _INTEGERS:  # small values: index arguments stay in bounds
            host = rng.integers(0, 8, count).astype(_INTEGERS[dtype])
        elif dtype.startswith("fp8"):
            host = rng.integers(0, 0x70, count).astype(np.uint8)
        else:
            host = values
        buffer = drv.to_device(host)
        keep.append(buffer)
        args.append(buffer)
    # one kernel (the problem itself) or several configs' cubins on the same buffers, each
    # launched ``launches`` times in turn
    for launch in problem.get("kernels", [problem]):
        kernel = drv.module_from_file(launch["cubin"]).get_function(launch["entry"])
        for _ in range(int(problem.get("launches", 3))):
            kernel(*args, grid=tuple(launch["grid"]), block=tuple(launch["block"]),
                   shared=int(launch["smem_bytes"]))
        drv.Context.synchronize()


if __name__ == "__main__":
    main(sys.argv[1])
