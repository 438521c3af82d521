// w [n, 3] = the ascending eigenvalues of n symmetric 3 x 3 matrices m [n, 6] (upper
// triangles), six cyclic Jacobi sweeps, negligible rotations skipped.
// Expert parameterization (hand-written): a block of THREADS threads takes THREADS * ITEMS
// matrices, each thread ITEMS of them (threadIdx.x + k * THREADS), rotated side by side so
// their chains of divisions and roots overlap. STAGE 1 moves the block's matrices and
// eigenvalues between global and shared memory with consecutive threads on consecutive
// words (the six- and three-word records otherwise load and store strided); RSQRT 1 takes
// the cosine from one reciprocal square root. MIN_BLOCKS is __launch_bounds__' minimum of
// resident blocks. The rotations and their order are the kernel's.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (256 threads, one matrix each, records read in place).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef STAGE
#define STAGE 0
#endif
#ifndef RSQRT
#define RSQRT 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define SWEEPS 6
#define PER_BLOCK (THREADS * ITEMS)

// a[0..5] = (a00, a01, a02, a11, a12, a22); the pair (p, q) and the third index r.
__device__ __forceinline__ void jacobi_rotate(float (&a)[6], int pp, int qq, int pq, int rp,
                                              int rq) {
  const float apq = a[pq];
  if (fabsf(apq) <= 1e-12f * (fabsf(a[pp]) + fabsf(a[qq]))) {
    a[pq] = 0.0f;
    return;
  }
  const float theta = (a[qq] - a[pp]) / (2.0f * apq);
  const float t = copysignf(1.0f, theta) / (fabsf(theta) + sqrtf(theta * theta + 1.0f));
#if RSQRT
  const float c = rsqrtf(t * t + 1.0f);
#else
  const float c = 1.0f / sqrtf(t * t + 1.0f);
#endif
  const float s = t * c;
  a[pp] -= t * apq;
  a[qq] += t * apq;
  a[pq] = 0.0f;
  const float arp = a[rp], arq = a[rq];
  a[rp] = c * arp - s * arq;
  a[rq] = s * arp + c * arq;
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
sym3_jacobi(float* __restrict__ w, const float* __restrict__ m, int n) {
  const int first = blockIdx.x * PER_BLOCK;
  const int count = min(PER_BLOCK, n - first);  // matrices this block has
  float a[ITEMS][6];
#if STAGE
  __shared__ float rec[PER_BLOCK * 6];
  for (int i = threadIdx.x; i < count * 6; i += THREADS) rec[i] = m[(size_t)first * 6 + i];
  __syncthreads();
#endif
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int local = min((int)threadIdx.x + k * THREADS, count - 1);  // past the end: a copy
#pragma unroll
    for (int j = 0; j < 6; ++j) {
#if STAGE
      a[k][j] = rec[local * 6 + j];
#else
      a[k][j] = m[(size_t)(first + local) * 6 + j];
#endif
    }
  }
  for (int sweep = 0; sweep < SWEEPS; ++sweep) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      jacobi_rotate(a[k], 0, 3, 1, 2, 4);  // (0, 1), r = 2: a02, a12
      jacobi_rotate(a[k], 0, 5, 2, 1, 4);  // (0, 2), r = 1: a01, a21
      jacobi_rotate(a[k], 3, 5, 4, 1, 2);  // (1, 2), r = 0: a01, a02
    }
  }
#if STAGE
  __syncthreads();  // every thread's reads of rec are done before it holds eigenvalues
#endif
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int local = threadIdx.x + k * THREADS;
    float l0 = a[k][0], l1 = a[k][3], l2 = a[k][5], u;
    if (l0 > l1) { u = l0; l0 = l1; l1 = u; }
    if (l1 > l2) { u = l1; l1 = l2; l2 = u; }
    if (l0 > l1) { u = l0; l0 = l1; l1 = u; }
#if STAGE
    if (local < count) {
      rec[local * 3] = l0;
      rec[local * 3 + 1] = l1;
      rec[local * 3 + 2] = l2;
    }
#else
    if (local < count) {
      float* dst = w + (size_t)(first + local) * 3;
      dst[0] = l0;
      dst[1] = l1;
      dst[2] = l2;
    }
#endif
  }
#if STAGE
  __syncthreads();
  for (int i = threadIdx.x; i < count * 3; i += THREADS) w[(size_t)first * 3 + i] = rec[i];
#endif
}
