// y [rows, 1024] = the orthonormal Walsh-Hadamard transform of each row of x, scaled 1 / 32.
// Expert parameterization (hand-written): a row is spread over 1024 / V threads, each
// holding V consecutive elements in registers (loaded and stored VEC floats at a time), and
// a block holds ROWS rows (threadIdx.y). The stages that pair elements less than V apart run
// inside a thread's registers; a stage pairing threads d = h / V apart exchanges through a
// warp shuffle when d < 32 and SHFL is 1, otherwise through the block's shared copy of the
// row (elements padded by one word every 32 with PAD 1). Every stage computes the kernel's
// butterflies in its order, so every output is what the kernel as written computes.
// Launch: grid = ceil(rows / ROWS), block = (1024 / V, ROWS).
// Defaults: the kernel as written (512 threads a row, two elements each, one row a block;
// its stages all through shared memory).

#ifndef V
#define V 2
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef SHFL
#define SHFL 0
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef VEC
#define VEC 1
#endif
#define ROW 1024
#define T_ROW (ROW / V)
#define SLOT(i) ((i) + PAD * ((i) >> 5))

extern "C" __global__ void __launch_bounds__(T_ROW * ROWS)
wht1024_rows(float* __restrict__ y, const float* __restrict__ x, int rows) {
  __shared__ float buf[ROWS][ROW + 32 * PAD];
  const int t = threadIdx.x;
  const int row = blockIdx.x * ROWS + threadIdx.y;
  const bool live = row < rows;  // rows past the end run along (barriers) and store nothing
  const size_t at = (size_t)(live ? row : rows - 1) * ROW + (size_t)t * V;
  float r[V];
#pragma unroll
  for (int j = 0; j < V; j += VEC) {
#if VEC == 4
    const float4 q = *reinterpret_cast<const float4*>(x + at + j);
    r[j] = q.x; r[j + 1] = q.y; r[j + 2] = q.z; r[j + 3] = q.w;
#elif VEC == 2
    const float2 q = *reinterpret_cast<const float2*>(x + at + j);
    r[j] = q.x; r[j + 1] = q.y;
#else
    r[j] = x[at + j];
#endif
  }
#pragma unroll
  for (int h = 1; h < V; h *= 2) {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if (j & h) continue;
      const float a = r[j], b = r[j + h];
      r[j] = a + b;
      r[j + h] = a - b;
    }
  }
  float* mine = buf[threadIdx.y];
#pragma unroll
  for (int d = 1; d < T_ROW; d *= 2) {
    const bool upper = (t & d) != 0;  // this thread holds the pairs' elements with bit h set
    if (SHFL && d < 32) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float p = __shfl_xor_sync(0xffffffffu, r[j], d);
        r[j] = upper ? p - r[j] : r[j] + p;
      }
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) mine[SLOT(t * V + j)] = r[j];
      __syncthreads();
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float p = mine[SLOT((t ^ d) * V + j)];
        r[j] = upper ? p - r[j] : r[j] + p;
      }
      __syncthreads();
    }
  }
  if (!live) return;
  const float scale = 1.0f / 32.0f;
#pragma unroll
  for (int j = 0; j < V; j += VEC) {
#if VEC == 4
    *reinterpret_cast<float4*>(y + at + j) =
        make_float4(r[j] * scale, r[j + 1] * scale, r[j + 2] * scale, r[j + 3] * scale);
#elif VEC == 2
    *reinterpret_cast<float2*>(y + at + j) = make_float2(r[j] * scale, r[j + 1] * scale);
#else
    y[at + j] = r[j] * scale;
#endif
  }
}
