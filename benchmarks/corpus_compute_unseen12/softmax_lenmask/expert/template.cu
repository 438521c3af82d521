// y [batch, rows, cols] = softmax(scale * s) over the first lens[b] columns of each row of
// batch b, zeros past them. Expert parameterization (hand-written): a block of TPR x RPB
// threads takes RPB rows of one batch (blockIdx.y), TPR threads a row (whole warps),
// reducing by warp shuffles and then across the row's warps through shared memory; float4
// loads and stores where rows are 16-byte aligned (VEC 4, cols a multiple of 4, else the
// scalar loop); ONLINE 1 takes the max and the sum of exponentials in one pass (each
// thread's sum rescaled as its max grows), ONLINE 0 in two as written.
// Launch: grid = (ceil(rows / RPB), batch), block = (TPR, RPB).
// Defaults: the kernel as written's launch (256 threads a row, one row a block).

#ifndef TPR
#define TPR 256
#endif
#ifndef RPB
#define RPB 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ONLINE
#define ONLINE 0
#endif
#define WARPS (TPR / 32)
#define LOWEST (-3.402823466e38f)

// The (max, sum) pair of the row over its threads: shuffles within each warp, then each
// warp's pair through shared memory (every thread of the row gets the row's pair).
__device__ void row_reduce(float& m, float& sum, float (*red_m)[WARPS],
                           float (*red_s)[WARPS]) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, off);
    const float os = __shfl_xor_sync(0xffffffffu, sum, off);
    const float nm = fmaxf(m, om);
    sum = sum * expf(m - nm) + os * expf(om - nm);
    m = nm;
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    red_m[threadIdx.y][warp] = m;
    red_s[threadIdx.y][warp] = sum;
  }
  __syncthreads();
  m = red_m[threadIdx.y][0];
  sum = red_s[threadIdx.y][0];
#pragma unroll
  for (int k = 1; k < WARPS; ++k) {
    const float om = red_m[threadIdx.y][k], os = red_s[threadIdx.y][k];
    const float nm = fmaxf(m, om);
    sum = sum * expf(m - nm) + os * expf(om - nm);
    m = nm;
  }
  __syncthreads();
}

// Folds one unmasked value into the thread's running max (pass 0) or its running sum
// (pass 1, against the row's max m), or both at once when ONLINE.
__device__ __forceinline__ void fold(float z, float& m, float& sum, int pass) {
  if (ONLINE) {
    if (z > m) {
      sum = sum * expf(m - z) + 1.0f;
      m = z;
    } else {
      sum += expf(z - m);
    }
  } else if (pass == 0) {
    m = fmaxf(m, z);
  } else {
    sum += expf(z - m);
  }
}

__device__ void fold_row(const float* in, int len, float scale, float& m, float& sum,
                         int pass, bool vec) {
  if (VEC == 4 && vec) {
    const float4* in4 = reinterpret_cast<const float4*>(in);
    for (int c4 = threadIdx.x; c4 * 4 < len; c4 += TPR) {
      const float4 v = in4[c4];
      const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (c4 * 4 + q < len) fold(e[q] * scale, m, sum, pass);
    }
  } else {
    for (int c = threadIdx.x; c < len; c += TPR) fold(in[c] * scale, m, sum, pass);
  }
}

extern "C" __global__ void __launch_bounds__(TPR * RPB)
softmax_lenmask(float* __restrict__ y, const float* __restrict__ s,
                const int* __restrict__ lens, float scale, int rows, int cols) {
  __shared__ float red_m[RPB][WARPS];
  __shared__ float red_s[RPB][WARPS];
  const int b = blockIdx.y;
  const int row = blockIdx.x * RPB + threadIdx.y;
  const bool live = row < rows;  // a dead row's threads still join the barriers
  const size_t base = ((size_t)b * rows + (live ? row : 0)) * cols;
  const float* in = s + base;
  float* out = y + base;
  const int len = live ? (lens[b] < cols ? lens[b] : cols) : 0;
  const bool vec = cols % 4 == 0;

  float m = LOWEST, sum = 0.0f;
  fold_row(in, len, scale, m, sum, 0, vec);
  if (!ONLINE) {
    float unused = 0.0f;
    row_reduce(m, unused, red_m, red_s);
    fold_row(in, len, scale, m, sum, 1, vec);
    float m_again = m;
    row_reduce(m_again, sum, red_m, red_s);
  } else {
    row_reduce(m, sum, red_m, red_s);
  }
  if (!live) return;
  const float inv = len > 0 ? 1.0f / sum : 0.0f;
  if (VEC == 4 && vec) {
    const float4* in4 = reinterpret_cast<const float4*>(in);
    float4* out4 = reinterpret_cast<float4*>(out);
    for (int c4 = threadIdx.x; c4 * 4 < cols; c4 += TPR) {
      const float4 v = in4[c4];
      const int c = c4 * 4;
      float4 r;
      r.x = c < len ? expf(v.x * scale - m) * inv : 0.0f;
      r.y = c + 1 < len ? expf(v.y * scale - m) * inv : 0.0f;
      r.z = c + 2 < len ? expf(v.z * scale - m) * inv : 0.0f;
      r.w = c + 3 < len ? expf(v.w * scale - m) * inv : 0.0f;
      out4[c4] = r;
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += TPR)
      out[c] = c < len ? expf(in[c] * scale - m) * inv : 0.0f;
  }
}
