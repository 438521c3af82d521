// dst = src correlated with a 7 x 7 __constant__ filter, the edge clamped; the point through
// blockIdx * blockDim on a (32, 4) block, the work under an if, the taps walked by do-while
// loops from -KR to KR
#define KR 3
__constant__ float g[(2 * KR + 1) * (2 * KR + 1)];

extern "C" __global__ void k(const float* __restrict__ src, float* __restrict__ dst, int W,
                             int H) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < W && row < H) {
    float sum = 0.f;
    int fy = -KR;
    do {
      int fx = -KR;
      do {
        int r = min(max(row + fy, 0), H - 1);
        int c = min(max(col + fx, 0), W - 1);
        sum += g[(fy + KR) * (2 * KR + 1) + (fx + KR)] * src[r * W + c];
        ++fx;
      } while (fx <= KR);
      ++fy;
    } while (fy <= KR);
    dst[row * W + col] = sum;
  }
}
