"""The worker's output-check kernels and the per-dtype facts they rely on.

Outputs are compared on the GPU against golden copies kept on the device, so outputs of
hundreds of MB never cross PCIe. Two families:

- float outputs (f32, bf16, fp16, fp8 e4m3/e5m2): golden copies in float32 (every one of
  these dtypes converts to float32 exactly); close when |got - want| <= atol + rtol*|want|;
- integer outputs (i8..i64): golden copies in int64, compared as integers:
  |got - want| <= atol with an integral atol (0: exact). Never through float32, which
  cannot hold every i32 / i64.

Before a verification run every ``out`` buffer is filled with a poison pattern; an element
still holding it was never written. Float poisons are non-canonical NaN bit patterns, so
"NaN written" and "never written" stay distinguishable. Every bit pattern of an integer is
a valid value, so an integer element counts as unwritten only where it holds the poison
and is outside the tolerance of the golden value (a kernel may write the poison value).
"""

from __future__ import annotations

from types import MappingProxyType

from workbench.core.dtypes import INTEGER_DTYPES, arg_storage

__all__ = ["CHECK_KERNELS_ENTRY", "CHECK_KERNELS_SOURCE", "KIND", "POISON_BITS", "poison_for"]

#: dtype -> kind code understood by the check kernels below
KIND: MappingProxyType[str, int] = MappingProxyType({
    "bf16": 0, "fp16": 1, "fp32": 2, "f32": 2, "i32": 3, "i64": 4, "fp8_e4m3": 5,
    "fp8_e5m2": 6, "i8": 7, "u8": 8, "i16": 9, "u16": 10, "u32": 11})

#: Poison by element size in bytes (floats: signalling-NaN patterns; fp8: 0xFF, a negative
#: NaN that CUDA's conversions never produce; 8-byte outputs get the 4-byte pattern twice).
POISON_BITS: MappingProxyType[int, int] = MappingProxyType(
    {1: 0xAB, 2: 0x7FAB, 4: 0x7FBADBAD, 8: 0x7FBADBAD})
_FP8_POISON = 0xFF


def poison_for(dtype: str) -> int:
    """The byte pattern (of the element's size) written into unwritten-check outputs."""
    if dtype.startswith("fp8"):
        return _FP8_POISON
    return POISON_BITS[arg_storage(dtype).itemsize]


def is_integer_kind(dtype: str) -> bool:
    return dtype in INTEGER_DTYPES


CHECK_KERNELS_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
// float kinds: 0 bf16 bits, 1 fp16 bits, 2 f32, 5 fp8 e4m3, 6 fp8 e5m2
__device__ __forceinline__ float wb_load(const void* p, long long i, int kind, bool* poison) {
  switch (kind) {
    case 0: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
              return __uint_as_float(((unsigned int)b) << 16); }
    case 1: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
              return __half2float(__ushort_as_half(b)); }
    case 5: { __nv_fp8_e4m3 v; v.__x = ((const unsigned char*)p)[i]; *poison = v.__x == 0xFF;
              return float(v); }
    case 6: { __nv_fp8_e5m2 v; v.__x = ((const unsigned char*)p)[i]; *poison = v.__x == 0xFF;
              return float(v); }
    default: { unsigned int b = ((const unsigned int*)p)[i]; *poison = b == 0x7FBADBADu;
               return __uint_as_float(b); }
  }
}
// integer kinds: 3 i32, 4 i64, 7 i8, 8 u8, 9 i16, 10 u16, 11 u32; *poison: holds the pattern
__device__ __forceinline__ long long wb_load_int(const void* p, long long i, int kind,
                                                 bool* poison) {
  switch (kind) {
    case 7: { unsigned char b = ((const unsigned char*)p)[i]; *poison = b == 0xAB;
              return (long long)(signed char)b; }
    case 8: { unsigned char b = ((const unsigned char*)p)[i]; *poison = b == 0xAB;
              return (long long)b; }
    case 9: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
              return (long long)(short)b; }
    case 10: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
               return (long long)b; }
    case 11: { unsigned int b = ((const unsigned int*)p)[i]; *poison = b == 0x7FBADBADu;
               return (long long)b; }
    case 4: { long long b = ((const long long*)p)[i]; *poison = b == 0x7FBADBAD7FBADBADLL;
              return b; }
    default: { int b = ((const int*)p)[i]; *poison = b == 0x7FBADBAD; return (long long)b; }
  }
}
// counters: [0] unwritten  [1] NaN where a number was expected  [2] outside tolerance
//           [3] first bad index (min)  [4] max |got - want| (float bits, or the integer)
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
// The baseline's integer outputs as int64 golden copies (poison counted only where asked:
// the baseline may write the poison value, see wb_compare_int).
extern "C" __global__ void wb_to_i64(const void* src, int kind, int check_poison,
                                     long long* dst, long long n,
                                     unsigned long long* counters) {
  unsigned long long c0 = 0, first = ~0ull;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    bool poison; long long v = wb_load_int(src, i, kind, &poison);
    dst[i] = v;
    if (check_poison && poison) { c0++; first = min(first, (unsigned long long)i); }
  }
  wb_flush(counters, c0, 0, 0, first, 0);
}
// |got - want| <= atol as integers; a failing element that holds the poison counts as unwritten.
extern "C" __global__ void wb_compare_int(const void* got, int kind, int check_poison,
                                          const long long* want, long long n, long long atol,
                                          unsigned long long* counters) {
  unsigned long long c0 = 0, c2 = 0, first = ~0ull, maxdiff = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    bool poison; long long v = wb_load_int(got, i, kind, &poison);
    long long w = want[i];
    unsigned long long d = v >= w ? (unsigned long long)v - (unsigned long long)w
                                  : (unsigned long long)w - (unsigned long long)v;
    if (d > (unsigned long long)atol) {  // the poison value within tolerance was written
      if (check_poison && poison) c0++; else c2++;
      first = min(first, (unsigned long long)i);
    }
    maxdiff = max(maxdiff, d);
  }
  wb_flush(counters, c0, 0, c2, first, maxdiff);
}
// An order-independent hash of n 32-bit words into counters[0]: the sum of
// (word + k) * (2 i + 1) mod 2^64. The worker takes it of every buffer a kernel must not
// write (inputs, pristine copies, golden outputs) when a problem is loaded and again after
// each candidate: a write past the end of an output lands in a neighbouring allocation and
// changes it, which the outputs' own check cannot see.
extern "C" __global__ void wb_checksum(const unsigned int* p, long long n,
                                       unsigned long long* counters) {
  unsigned long long h = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    h += ((unsigned long long)p[i] + 0x9E3779B97F4A7C15ull) * (2ull * (unsigned long long)i + 1ull);
  for (int offset = 16; offset > 0; offset >>= 1) h += __shfl_down_sync(0xffffffffu, h, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(&counters[0], h);
}
"""
CHECK_KERNELS_ENTRY = "wb_compare"
