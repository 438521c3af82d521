// A bank of 8 cross-correlations of one image img [h, w] with 9 x 9 weights wts [8][9][9]:
// out[f][y][x] = sum over dy, dx < 9 of wts[f][dy][dx] * img[y + dy - 4][x + dx - 4], pixels
// outside the image read as zero (the output has the image's size). The block stages the
// whole weight bank in shared memory; each thread computes all 8 filters at its pixel.
// Launch: grid = ((w + 15) / 16, (h + 15) / 16), block = (16, 16).

#define NF 8
#define KS 9
#define HALF (KS / 2)

extern "C" __global__ void corr9_bank8(float* out, const float* img, const float* wts, int h,
                                       int w) {
  __shared__ float wsh[NF * KS * KS];
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int e = tid; e < NF * KS * KS; e += blockDim.x * blockDim.y) wsh[e] = wts[e];
  __syncthreads();

  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  auto pixel = [&](int yy, int xx) -> float {
    return (yy >= 0 && yy < h && xx >= 0 && xx < w) ? img[yy * w + xx] : 0.0f;
  };
  float acc[NF];
#pragma unroll
  for (int f = 0; f < NF; ++f) acc[f] = 0.0f;
  for (int dy = 0; dy < KS; ++dy) {
    for (int dx = 0; dx < KS; ++dx) {
      const float v = pixel(y + dy - HALF, x + dx - HALF);
#pragma unroll
      for (int f = 0; f < NF; ++f) acc[f] += wsh[(f * KS + dy) * KS + dx] * v;
    }
  }
#pragma unroll
  for (int f = 0; f < NF; ++f) out[((size_t)f * h + y) * w + x] = acc[f];
}
