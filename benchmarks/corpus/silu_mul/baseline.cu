// SwiGLU: out[t, j] = silu(in[t, j]) * in[t, d + j] for in [tokens, 2*d] bf16.
// Launch: grid = tokens, block = 256 (one block per token).
#include <cuda_bf16.h>

extern "C" __global__ void silu_mul(__nv_bfloat16* __restrict__ out,
                                    const __nv_bfloat16* __restrict__ in, int d) {
  int row = blockIdx.x;
  for (int j = threadIdx.x; j < d; j += 256) {
    float g = __bfloat162float(in[row * 2 * d + j]);
    float u = __bfloat162float(in[row * 2 * d + d + j]);
    out[row * d + j] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
  }
}
