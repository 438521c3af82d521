// depthwise 3 x 3: out[c][y][x] = sum over dy, dx of wt[c][dy][dx] * in[c][y + dy - 1][x + dx - 1]
// (zero padding), the channel blockIdx.z; the input staged with its apron in a shared tile
// (a 1-D array indexed by hand, every thread loading in a strided loop), the filter global
#define TW 16
#define TH 16
#define AW (TW + 2)
#define AH (TH + 2)
extern "C" __global__ void k(float* out, const float* in, const float* wt, int h, int w) {
  __shared__ float tile[AH * AW];
  const int c = blockIdx.z;
  const int x0 = blockIdx.x * TW - 1, y0 = blockIdx.y * TH - 1;
  const float* src = in + (size_t)c * h * w;
  for (int t = threadIdx.y * TW + threadIdx.x; t < AH * AW; t += TW * TH) {
    const int yy = y0 + t / AW, xx = x0 + t % AW;
    tile[t] = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? src[yy * w + xx] : 0.0f;
  }
  __syncthreads();
  const int x = blockIdx.x * TW + threadIdx.x, y = blockIdx.y * TH + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
#pragma unroll
  for (int dy = 0; dy < 3; ++dy)
#pragma unroll
    for (int dx = 0; dx < 3; ++dx)
      acc += wt[c * 9 + dy * 3 + dx] * tile[(threadIdx.y + dy) * AW + threadIdx.x + dx];
  out[((size_t)c * h + y) * w + x] = acc;
}
