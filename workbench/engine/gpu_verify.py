"""Output verification inside the GPU worker: poison, golden copies, device-side checks.

Runs only in the child (:class:`workbench.engine.gpu_session.GpuSession` owns the buffers);
numpy and the CUDA driver are reached through the session, imported lazily. The check
kernels' source is compiled by the parent, so it lives here as plain text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.engine.gpu_session import GpuSession


#: Poison written into outputs before a verification run: a signalling-NaN bit pattern for
#: floats (not 0x7FFF / 0x7FC00000, the canonical NaNs a kernel's conversions produce, so
#: "NaN written" and "never written" stay distinguishable), the same bits as an integer
#: sentinel. 8-byte outputs get the 4-byte pattern twice.
POISON_BITS = {2: 0x7FAB, 4: 0x7FBADBAD, 8: 0x7FBADBAD}
_STORAGE = {"bf16": "uint16", "fp16": "uint16", "fp32": "float32", "f32": "float32",
            "i32": "int32", "i64": "int64"}
_ELEMENT_DTYPES = ("bf16", "fp16", "fp32")
_SCALAR_FORMAT = {"i32": "i", "i64": "q", "f32": "f", "fp32": "f"}


#: Device-side checks: conversion of outputs to float32 (golden copies) and comparison
#: against them, counting unwritten (poison) elements, NaNs and tolerance misses, so that
#: outputs of hundreds of MB never cross PCIe. Compiled by the parent with the Compiler.
CHECK_KERNELS_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// kind: 0 bf16 bits, 1 fp16 bits, 2 f32, 3 i32, 4 i64
__device__ __forceinline__ float wb_load(const void* p, long long i, int kind, bool* poison) {
  switch (kind) {
    case 0: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
              return __uint_as_float(((unsigned int)b) << 16); }
    case 1: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
              return __half2float(__ushort_as_half(b)); }
    case 2: { unsigned int b = ((const unsigned int*)p)[i]; *poison = b == 0x7FBADBADu;
              return __uint_as_float(b); }
    case 3: { int b = ((const int*)p)[i]; *poison = b == 0x7FBADBAD; return (float)b; }
    default: { long long b = ((const long long*)p)[i]; *poison = b == 0x7FBADBAD7FBADBADLL;
               return (float)b; }
  }
}
// counters: [0] unwritten  [1] NaN where a number was expected  [2] outside tolerance
//           [3] first bad index (min)  [4] max |got - want| as float bits (non-negative)
__device__ void wb_flush(unsigned long long* counters, unsigned long long c0,
                         unsigned long long c1, unsigned long long c2,
                         unsigned long long first, unsigned long long maxbits) {
  for (int o = 16; o > 0; o >>= 1) {
    c0 += __shfl_xor_sync(0xffffffffu, c0, o);
    c1 += __shfl_xor_sync(0xffffffffu, c1, o);
    c2 += __shfl_xor_sync(0xffffffffu, c2, o);
    first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
    maxbits = max(maxbits, __shfl_xor_sync(0xffffffffu, maxbits, o));
  }
  if ((threadIdx.x & 31) == 0) {
    if (c0) atomicAdd(&counters[0], c0);
    if (c1) atomicAdd(&counters[1], c1);
    if (c2) atomicAdd(&counters[2], c2);
    if (first != ~0ull) atomicMin(&counters[3], first);
    if (maxbits) atomicMax(&counters[4], maxbits);
  }
}
extern "C" __global__ void wb_to_f32(const void* src, int kind, int check_poison, float* dst,
                                     long long n, unsigned long long* counters) {
  unsigned long long c0 = 0, first = ~0ull;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    bool poison; float v = wb_load(src, i, kind, &poison);
    dst[i] = v;
    if (check_poison && poison) { c0++; first = min(first, (unsigned long long)i); }
  }
  wb_flush(counters, c0, 0, 0, first, 0);
}
extern "C" __global__ void wb_compare(const void* got, int kind, int check_poison,
                                      const float* want, long long n, float rtol, float atol,
                                      unsigned long long* counters) {
  unsigned long long c0 = 0, c1 = 0, c2 = 0, first = ~0ull, maxbits = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    bool poison; float v = wb_load(got, i, kind, &poison);
    float w = want[i];
    if (check_poison && poison) { c0++; first = min(first, (unsigned long long)i); continue; }
    if (isnan(v) && !isnan(w)) { c1++; first = min(first, (unsigned long long)i); continue; }
    float d = fabsf(v - w);
    bool close = (v == w) || (isnan(v) && isnan(w)) || (d <= atol + rtol * fabsf(w));
    if (!close) { c2++; first = min(first, (unsigned long long)i); }
    if (isfinite(d)) maxbits = max(maxbits, (unsigned long long)__float_as_uint(d));
  }
  wb_flush(counters, c0, c1, c2, first, maxbits);
}
"""
CHECK_KERNELS_ENTRY = "wb_compare"
_KIND = {"bf16": 0, "fp16": 1, "fp32": 2, "f32": 2, "i32": 3, "i64": 4}


class _Mismatch(Exception):
    """Verification failed (message says where)."""

    def __init__(self, reason: str, max_abs_err: float | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.max_abs_err = max_abs_err


class _InputSet:
    """Device buffers for one random input set, pristine copies of inouts, golden outputs."""

    def __init__(self, session: GpuSession, spec: Mapping[str, Any], dtype: str,
                 host_inputs: Mapping[str, Any]) -> None:
        import numpy as np

        from workbench.core import dtypes as wdt

        cuda = session.cuda
        self.session = session
        self.spec = spec
        self.dtype = dtype
        self.args: list[dict[str, Any]] = list(spec["args"])
        self.buffers: dict[str, Any] = {}
        self.pristine: dict[str, Any] = {}
        self.nbytes: dict[str, int] = {}
        self.golden: dict[str, Any] = {}
        self.quantized: dict[str, Any] = {}
        self.values: list[Any] = []
        fmt = ""
        for arg in self.args:
            name, role, adt = arg["name"], arg["role"], arg["dtype"]
            if role == "scalar":
                fmt += _SCALAR_FORMAT[adt]
                value = arg["value"]
                self.values.append(float(value) if adt in ("f32", "fp32") else int(value))
                continue
            fmt += "P"
            shape = tuple(int(n) for n in arg["shape"])
            storage = np.dtype(_STORAGE[adt])
            count = int(np.prod(shape)) if shape else 1
            nbytes = max(1, count * storage.itemsize)
            self.nbytes[name] = nbytes
            buf = cuda.mem_alloc(nbytes)
            self.buffers[name] = buf
            self.values.append(int(buf))
            if role in ("in", "inout"):
                if name not in host_inputs:
                    raise KeyError(f"reference.make_inputs returned no array for {name!r}")
                raw = np.asarray(host_inputs[name])
                if tuple(raw.shape) != shape:
                    raise ValueError(f"make_inputs()[{name!r}] has shape {raw.shape}; "
                                     f"kernel.toml says {shape}")
                if adt in _ELEMENT_DTYPES:
                    q = wdt.quantize(raw.astype(np.float32), adt)
                    bits = np.ascontiguousarray(wdt.to_device_bits(q, adt))
                else:
                    q = raw.astype(storage)
                    bits = np.ascontiguousarray(q)
                self.quantized[name] = q
                cuda.memcpy_htod(buf, bits)
                if role == "inout":
                    copy = cuda.mem_alloc(nbytes)
                    cuda.memcpy_dtod(copy, buf, nbytes)
                    self.pristine[name] = copy
        self.format = fmt

    def output_args(self) -> list[dict[str, Any]]:
        return [a for a in self.args if a["role"] in ("out", "inout")]

    def restore(self, stream: Any) -> None:
        """Copy every inout argument back from its pristine copy."""
        for name, copy in self.pristine.items():
            self.session.cuda.memcpy_dtod_async(self.buffers[name], copy, self.nbytes[name],
                                                stream)

    def poison(self, stream: Any) -> None:
        """Fill every out argument with the poison pattern."""
        import numpy as np

        cuda = self.session.cuda
        for arg in self.args:
            if arg["role"] != "out":
                continue
            itemsize = np.dtype(_STORAGE[arg["dtype"]]).itemsize
            buf, nbytes = self.buffers[arg["name"]], self.nbytes[arg["name"]]
            if itemsize == 2:
                cuda.memset_d16_async(buf, POISON_BITS[2], nbytes // 2, stream)
            else:
                cuda.memset_d32_async(buf, POISON_BITS[4], nbytes // 4, stream)

    def download(self) -> dict[str, tuple[Any, Any]]:
        """name -> (values as float64, mask of elements still holding poison)."""
        import numpy as np

        from workbench.core import dtypes as wdt

        out = {}
        for arg in self.output_args():
            shape = tuple(int(n) for n in arg["shape"])
            storage = np.dtype(_STORAGE[arg["dtype"]])
            host = np.empty(shape, dtype=storage)
            self.session.cuda.memcpy_dtoh(host, self.buffers[arg["name"]])
            raw = host.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[storage.itemsize])
            poison = (POISON_BITS[8] * (1 << 32) + POISON_BITS[8] if storage.itemsize == 8
                      else POISON_BITS[storage.itemsize])
            unwritten = (raw == poison) if arg["role"] == "out" else np.zeros(shape, bool)
            if arg["dtype"] in _ELEMENT_DTYPES:
                values = wdt.from_device_bits(host, arg["dtype"]).astype(np.float64)
            else:
                values = host.astype(np.float64)
            out[arg["name"]] = (values, unwritten)
        return out

    def _count(self, arg: Mapping[str, Any]) -> int:
        import numpy as np

        return int(np.prod([int(n) for n in arg["shape"]])) if arg["shape"] else 1

    def _launch_check(self, func: Any, n: int, *args: Any) -> Any:
        import numpy as np

        cuda, stream = self.session.cuda, self.session.stream
        counters = self.session.counters
        init = np.array([0, 0, 0, 2**64 - 1, 0], dtype=np.uint64)
        cuda.memcpy_htod_async(counters, init, stream)
        blocks = max(1, min((n + 255) // 256, 4096))
        func.prepared_async_call((blocks, 1, 1), (256, 1, 1), stream, *args, int(counters))
        host = np.empty(5, dtype=np.uint64)
        cuda.memcpy_dtoh_async(host, counters, stream)
        stream.synchronize()
        return host

    def make_golden(self) -> str | None:
        """Keep float32 device copies of the outputs; the reason if some were unwritten."""
        cuda = self.session.cuda
        for arg in self.output_args():
            n = self._count(arg)
            gold = cuda.mem_alloc(max(4, 4 * n))
            self.golden[arg["name"]] = gold
            counts = self._launch_check(self.session.to_f32, n, int(self.buffers[arg["name"]]),
                                        _KIND[arg["dtype"]], int(arg["role"] == "out"),
                                        int(gold), n)
            if counts[0]:
                return (f"{arg['name']}: {int(counts[0])} of {n} elements not written "
                        f"(first at {self._index(arg, int(counts[3]))})")
        return None

    def _index(self, arg: Mapping[str, Any], flat: int) -> tuple[int, ...]:
        import numpy as np

        shape = tuple(int(n) for n in arg["shape"]) or (1,)
        return tuple(int(i) for i in np.unravel_index(flat, shape))

    def _element(self, arg: Mapping[str, Any], flat: int) -> tuple[float, float]:
        import numpy as np

        from workbench.core import dtypes as wdt

        cuda = self.session.cuda
        storage = np.dtype(_STORAGE[arg["dtype"]])
        got = np.empty(1, dtype=storage)
        cuda.memcpy_dtoh(got, int(self.buffers[arg["name"]]) + flat * storage.itemsize)
        want = np.empty(1, dtype=np.float32)
        cuda.memcpy_dtoh(want, int(self.golden[arg["name"]]) + flat * 4)
        value = (wdt.from_device_bits(got, arg["dtype"]) if arg["dtype"] in _ELEMENT_DTYPES
                 else got.astype(np.float64))
        return float(value[0]), float(want[0])

    def verify(self, label: str) -> float:
        """Compare outputs with the golden copies on the GPU; raise _Mismatch on failure."""
        worst = 0.0
        for arg in self.output_args():
            n = self._count(arg)
            c = self._launch_check(self.session.compare, n, int(self.buffers[arg["name"]]),
                                   _KIND[arg["dtype"]], int(arg["role"] == "out"),
                                   int(self.golden[arg["name"]]), n, float(arg["rtol"]),
                                   float(arg["atol"]))
            import numpy as np

            err = float(np.array([int(c[4])], dtype=np.uint32).view(np.float32)[0])
            worst = max(worst, err)
            name, first = arg["name"], int(c[3])
            if c[0]:
                raise _Mismatch(f"{label}: {name}: {int(c[0])} of {n} elements not written "
                                f"(still poison; first at {self._index(arg, first)})", None)
            if c[1]:
                raise _Mismatch(f"{label}: {name}: {int(c[1])} of {n} elements are NaN where "
                                f"the baseline has numbers (first at "
                                f"{self._index(arg, first)})", float("nan"))
            if c[2]:
                got, want = self._element(arg, first)
                raise _Mismatch(f"{label}: {name}: {int(c[2])} of {n} elements outside "
                                f"rtol={arg['rtol']} atol={arg['atol']}; max abs err {err:.4g}; "
                                f"first at {self._index(arg, first)}: got {got:.6g}, "
                                f"expected {want:.6g}", err)
        return worst

    def free(self) -> None:
        for buf in [*self.buffers.values(), *self.pristine.values(),
                    *self.golden.values()]:
            buf.free()
        self.buffers.clear()
        self.pristine.clear()
        self.golden.clear()


def compare_outputs(got: Mapping[str, tuple[Any, Any]], want: Mapping[str, Any],
                    args: list[dict[str, Any]], label: str) -> float:
    """Raise _Mismatch naming the first bad output; return the largest absolute error."""
    import numpy as np

    worst = 0.0
    for arg in args:
        name = arg["name"]
        values, unwritten = got[name]
        expected = np.asarray(want[name], dtype=np.float64).reshape(values.shape)
        total = values.size
        n_unwritten = int(unwritten.sum())
        if n_unwritten:
            first = tuple(int(i) for i in np.argwhere(unwritten)[0])
            raise _Mismatch(f"{label}: {name}: {n_unwritten} of {total} elements not written "
                            f"(still poison; first at {first})", None)
        bad_nan = np.isnan(values) & ~np.isnan(expected)
        if bad_nan.any():
            first = tuple(int(i) for i in np.argwhere(bad_nan)[0])
            raise _Mismatch(f"{label}: {name}: {int(bad_nan.sum())} of {total} elements are "
                            f"NaN where the expected values are numbers (first at {first})",
                            float("nan"))
        rtol, atol = float(arg["rtol"]), float(arg["atol"])
        diff = np.abs(values - expected)
        finite = np.isfinite(diff)
        err = float(diff[finite].max()) if finite.any() else 0.0
        worst = max(worst, err)
        close = np.isclose(values, expected, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            n_bad = int((~close).sum())
            idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(np.where(close, -1, diff))),
                                                         values.shape))
            raise _Mismatch(f"{label}: {name}: {n_bad} of {total} elements outside rtol={rtol} "
                            f"atol={atol}; max abs err {err:.4g} at {idx} "
                            f"(got {values[idx]:.6g}, expected {expected[idx]:.6g})", err)
    return worst
