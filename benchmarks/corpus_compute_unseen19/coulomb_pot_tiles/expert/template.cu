// Softened Coulomb potential at each probe from m charges, summed in charge order.
// Expert parameterization (hand-written): THREADS a block, ITEMS probes a thread strided by
// THREADS (each charge loaded once for all of them), the charges staged TILE at a time in
// shared memory by the whole block, and the charge loop over a tile unrolled by UNROLL.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (TILE = 0: every charge from global memory).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef TILE
#define TILE 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define SOFT2 0.01f

extern "C" __global__ void __launch_bounds__(THREADS) coulomb_pot_tiles(
    float* __restrict__ out, const float* __restrict__ probes,
    const float* __restrict__ charges, int n, int m) {
  const float4* __restrict__ c4 = reinterpret_cast<const float4*>(charges);
  const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float px[ITEMS], py[ITEMS], pz[ITEMS], phi[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = min(first + j * THREADS, n - 1);
    px[j] = probes[3 * i];
    py[j] = probes[3 * i + 1];
    pz[j] = probes[3 * i + 2];
    phi[j] = 0.0f;
  }
#if TILE
  __shared__ float4 tile[TILE];
  for (int base = 0; base < m; base += TILE) {
    const int count = min(TILE, m - base);
    __syncthreads();
    for (int k = threadIdx.x; k < count; k += THREADS) tile[k] = c4[base + k];
    __syncthreads();
    int k = 0;
#pragma unroll 1
    for (; k + UNROLL <= count; k += UNROLL) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const float4 c = tile[k + u];
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
          const float dx = px[j] - c.x, dy = py[j] - c.y, dz = pz[j] - c.z;
          phi[j] += c.w * rsqrtf(dx * dx + dy * dy + dz * dz + SOFT2);
        }
      }
    }
    for (; k < count; ++k) {
      const float4 c = tile[k];
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const float dx = px[j] - c.x, dy = py[j] - c.y, dz = pz[j] - c.z;
        phi[j] += c.w * rsqrtf(dx * dx + dy * dy + dz * dz + SOFT2);
      }
    }
  }
#else
  int k = 0;
#pragma unroll 1
  for (; k + UNROLL <= m; k += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const float4 c = c4[k + u];
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const float dx = px[j] - c.x, dy = py[j] - c.y, dz = pz[j] - c.z;
        phi[j] += c.w * rsqrtf(dx * dx + dy * dy + dz * dz + SOFT2);
      }
    }
  }
  for (; k < m; ++k) {
    const float4 c = c4[k];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const float dx = px[j] - c.x, dy = py[j] - c.y, dz = pz[j] - c.z;
      phi[j] += c.w * rsqrtf(dx * dx + dy * dy + dz * dz + SOFT2);
    }
  }
#endif
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = first + j * THREADS;
    if (i < n) out[i] = phi[j];
  }
}
