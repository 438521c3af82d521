// Stereo block matching, the core of a classic depth-from-stereo pipeline: for each pixel
// of the left image, the disparity d in [0, 64) whose 5 x 5 window of the right image,
// shifted d pixels left, has the smallest sum of absolute differences (SAD); the smallest
// d wins a tie. Images are 8-bit grey, row-major H x W; coordinates past the border are
// clamped to it (each read on its own: row, left column, right column). The disparity is
// written as an int.
// Launch: grid = ((W + 15) / 16, (H + 15) / 16), block = (16, 16).
#define MAX_DISP 64
#define RADIUS 2

__device__ __forceinline__ int clampi(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

extern "C" __global__ void stereo_sad64(int* disp, const unsigned char* left,
                                        const unsigned char* right, int H, int W) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  int best_cost = 0x7fffffff, best_d = 0;
  for (int d = 0; d < MAX_DISP; d++) {
    int cost = 0;
    for (int dy = -RADIUS; dy <= RADIUS; dy++) {
      const int yy = clampi(y + dy, 0, H - 1);
      const unsigned char* lrow = left + yy * W;
      const unsigned char* rrow = right + yy * W;
      for (int dx = -RADIUS; dx <= RADIUS; dx++) {
        const int xl = clampi(x + dx, 0, W - 1);
        const int xr = clampi(x + dx - d, 0, W - 1);
        cost += abs((int)lrow[xl] - (int)rrow[xr]);
      }
    }
    if (cost < best_cost) {
      best_cost = cost;
      best_d = d;
    }
  }
  disp[y * W + x] = best_d;
}
