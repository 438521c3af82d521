// Softened gravitational accelerations of n bodies (float4 records x, y, z, mass; acc
// [n, 3]). Expert parameterization (hand-written): a block of THREADS x JSPLIT threads owns
// THREADS * ITEMS bodies (a thread ITEMS of them, THREADS apart) and walks all bodies in
// tiles of THREADS * JSPLIT staged in shared memory, each row of JSPLIT taking a contiguous
// THREADS of the tile (small n: more threads a body, the rows' sums added in row order at
// the end through shared memory). Each staged body is read once from shared memory for
// ITEMS bodies' sums; UNROLL unrolls the walk of a tile. Sums run over j in order within
// a row; masses of 0 pad the last tile.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = (THREADS, JSPLIT).
// Defaults: the kernel as written (256 threads, a body a thread, unrolled by 8).
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef JSPLIT
#define JSPLIT 1
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#define EPS2 1e-3f
#define TILE (THREADS * JSPLIT)
constexpr int kUnroll = UNROLL;  // the unroll pragma reads a constant, not a macro

extern "C" __global__ void __launch_bounds__(THREADS * JSPLIT)
nbody_accel(float* __restrict__ acc, const float* __restrict__ bodies, int n) {
  __shared__ float4 tile[TILE];
  const float4* body = reinterpret_cast<const float4*>(bodies);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int first = blockIdx.x * (THREADS * ITEMS) + tx;
  float4 me[ITEMS];
  float ax[ITEMS], ay[ITEMS], az[ITEMS];
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int i = first + u * THREADS;
    me[u] = i < n ? __ldg(body + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    ax[u] = ay[u] = az[u] = 0.0f;
  }
  for (int base = 0; base < n; base += TILE) {
    const int j = base + ty * THREADS + tx;
    tile[ty * THREADS + tx] = j < n ? __ldg(body + j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    const float4* row = tile + ty * THREADS;
#pragma unroll kUnroll
    for (int k = 0; k < THREADS; ++k) {
      const float4 other = row[k];
#pragma unroll
      for (int u = 0; u < ITEMS; ++u) {
        const float dx = other.x - me[u].x, dy = other.y - me[u].y, dz = other.z - me[u].z;
        const float inv = rsqrtf(dx * dx + dy * dy + dz * dz + EPS2);
        const float w = other.w * inv * inv * inv;
        ax[u] += w * dx;
        ay[u] += w * dy;
        az[u] += w * dz;
      }
    }
    __syncthreads();
  }
#if JSPLIT > 1
  // rows 1.. hand their sums to row 0 one at a time, in row order
  __shared__ float part[3 * ITEMS][THREADS];
  for (int r = 1; r < JSPLIT; ++r) {
    if (ty == r) {
#pragma unroll
      for (int u = 0; u < ITEMS; ++u) {
        part[3 * u + 0][tx] = ax[u];
        part[3 * u + 1][tx] = ay[u];
        part[3 * u + 2][tx] = az[u];
      }
    }
    __syncthreads();
    if (ty == 0) {
#pragma unroll
      for (int u = 0; u < ITEMS; ++u) {
        ax[u] += part[3 * u + 0][tx];
        ay[u] += part[3 * u + 1][tx];
        az[u] += part[3 * u + 2][tx];
      }
    }
    __syncthreads();
  }
#endif
  if (ty != 0) return;
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int i = first + u * THREADS;
    if (i < n) {
      acc[3 * i + 0] = ax[u];
      acc[3 * i + 1] = ay[u];
      acc[3 * i + 2] = az[u];
    }
  }
}
