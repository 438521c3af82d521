// Dot product of two int8 vectors to partial sums. Expert parameterization (hand-written):
// GRID_BLOCKS blocks of THREADS threads walk the vectors with a grid-stride loop over
// VEC-byte groups (1: one byte at a time, as written; 4: one 32-bit word of each vector and
// one __dp4a; 16: a 16-byte load of each and four __dp4a), the bytes past the last whole
// group taken one at a time; FINAL 0 ends with a shared-memory tree (as written), 1 with
// warp shuffles and one shared slot per warp. partial has 264 slots, the grid as written:
// block 0 writes 0 to the slots past GRID_BLOCKS, so the host's sum of all 264 is right.
// Launch: grid = GRID_BLOCKS, block = THREADS. Defaults: the kernel as written.
#ifndef GRID_BLOCKS
#define GRID_BLOCKS 264
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef FINAL
#define FINAL 0
#endif
#define SLOTS 264  // partial's length: the grid of the kernel as written

// the four byte products of two packed words, added to acc
__device__ __forceinline__ int dot4(int a, int b, int acc) { return __dp4a(a, b, acc); }

extern "C" __global__ void __launch_bounds__(THREADS, 1)
s8_dot_blocks(int* __restrict__ partial, const signed char* __restrict__ x,
              const signed char* __restrict__ y, int n) {
  const int tid = threadIdx.x;
  const int stride = GRID_BLOCKS * THREADS;
  int sum = 0;
#if VEC == 1
  for (int i = blockIdx.x * THREADS + tid; i < n; i += stride) sum += (int)x[i] * (int)y[i];
#else
  // the buffers are allocation-aligned: whole VEC-byte groups from element 0
  const int groups = n / VEC;
  for (int g = blockIdx.x * THREADS + tid; g < groups; g += stride) {
#if VEC == 4
    sum = dot4(reinterpret_cast<const int*>(x)[g], reinterpret_cast<const int*>(y)[g], sum);
#else
    const int4 a = reinterpret_cast<const int4*>(x)[g];
    const int4 b = reinterpret_cast<const int4*>(y)[g];
    sum = dot4(a.x, b.x, sum);
    sum = dot4(a.y, b.y, sum);
    sum = dot4(a.z, b.z, sum);
    sum = dot4(a.w, b.w, sum);
#endif
  }
  for (int i = groups * VEC + blockIdx.x * THREADS + tid; i < n; i += stride)
    sum += (int)x[i] * (int)y[i];
#endif

#if FINAL == 0
  __shared__ int red[THREADS];
  red[tid] = sum;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s /= 2) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = red[0];
#else
  __shared__ int warp_sum[THREADS / 32];
#pragma unroll
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (tid % 32 == 0) warp_sum[tid / 32] = sum;
  __syncthreads();
  if (tid < 32) {
    int v = tid < THREADS / 32 ? warp_sum[tid] : 0;
#pragma unroll
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (tid == 0) partial[blockIdx.x] = v;
  }
#endif
  if (GRID_BLOCKS < SLOTS && blockIdx.x == 0)
    for (int b = GRID_BLOCKS + tid; b < SLOTS; b += THREADS) partial[b] = 0;
}
