// 8 x 8 blockwise 2-D DCT-II, orthonormal (JPEG's forward transform): each 8 x 8 block X of
// the image becomes C X C^T, C[u][x] = a(u) cos((2x + 1) u pi / 16), a(0) = sqrt(1/8) and
// a(u) = 1/2 otherwise. One image block a CTA of 8 x 8 threads: the cosine table, the pixels
// and the row transforms live in shared memory. H and W are multiples of 8.
// Launch: grid = (W / 8, H / 8), block = (8, 8).

namespace jpeg {

template <int N>
__device__ void dct_block(float* out, const float* in, int W) {
  __shared__ float ctab[N][N];
  __shared__ float pix[N][N];
  __shared__ float rows[N][N];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const size_t at = (size_t)(blockIdx.y * N + ty) * W + blockIdx.x * N + tx;
  ctab[ty][tx] = (ty == 0 ? 0.35355339f : 0.5f) * cosf((2 * tx + 1) * ty * 3.14159265f / (2 * N));
  pix[ty][tx] = in[at];
  __syncthreads();
  float s = 0.0f;  // rows[y][v] = sum over x of X[y][x] C[v][x]
#pragma unroll
  for (int k = 0; k < N; ++k) s += pix[ty][k] * ctab[tx][k];
  rows[ty][tx] = s;
  __syncthreads();
  float t = 0.0f;  // out[u][v] = sum over y of C[u][y] rows[y][v]
#pragma unroll
  for (int k = 0; k < N; ++k) t += ctab[ty][k] * rows[k][tx];
  out[at] = t;
}

}  // namespace jpeg

extern "C" __global__ void dct8x8_blocks(float* out, const float* in, int H, int W) {
  jpeg::dct_block<8>(out, in, W);
}
