// out [cols, rows] = transpose of in [rows, cols] (float), through a 32x32 shared tile.
// Launch: grid = ((cols + 31) / 32, (rows + 31) / 32), block = (32, 8).
extern "C" __global__ void transpose(float* __restrict__ out, const float* __restrict__ in,
                                     int rows, int cols) {
  __shared__ float tile[32][32];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  }
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
  }
}
