// Layout change with a per-channel affine on the way (a batch norm folded for inference,
// applied while converting for a channels-last consumer):
//   out[b][p][c] = in[b][c][p] * scale[c] + shift[c],  NCHW [B, C, HW] -> NHWC [B, HW, C]
// where p is the pixel (h * W + w). The textbook tiled transpose, per image: a block of
// 32 x 8 threads moves a 32-channel x 32-pixel tile through shared memory (rows padded to
// 33 floats against bank conflicts), each thread 4 rows of the tile on the way in and on
// the way out. blockIdx.z is the image.
// Launch: grid = ((HW + 31) / 32, (C + 31) / 32, B), block = (32, 8).
#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void nchw_to_nhwc_affine(float* out, const float* in, const float* scale,
                                               const float* shift, int C, int HW) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  const int p0 = blockIdx.x * TILE_DIM;
  const int c0 = blockIdx.y * TILE_DIM;
  const size_t image = (size_t)blockIdx.z * C * HW;
  const int p = p0 + threadIdx.x;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    const int c = c0 + threadIdx.y + j;
    if (c < C && p < HW)
      tile[threadIdx.y + j][threadIdx.x] = in[image + (size_t)c * HW + p] * scale[c] + shift[c];
  }
  __syncthreads();
  const int c = c0 + threadIdx.x;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    const int q = p0 + threadIdx.y + j;
    if (c < C && q < HW) out[image + (size_t)q * C + c] = tile[threadIdx.x][threadIdx.y + j];
  }
}
