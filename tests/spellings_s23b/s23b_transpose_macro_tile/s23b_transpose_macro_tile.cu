// out[c, r] = in[r, c] through a 32 x 33 shared tile; each thread of the 32 x 8 block moves
// four elements each way.
// Launch: grid = ((cols + 31) / 32, (rows + 31) / 32), block = (32, 8).
#define TILE_DIM 32
#define IN(r, c) in[(size_t)(r) * cols + (c)]
#define OUT(c, r) out[(size_t)(c) * rows + (r)]

extern "C" __global__ void s23b_transpose_macro_tile(float* out, const float* in, int rows,
                                                     int cols) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int c = blockIdx.x * TILE_DIM + threadIdx.x;
  int r = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int k = 0; k < TILE_DIM; k += blockDim.y)
    if (c < cols && r + k < rows) tile[threadIdx.y + k][threadIdx.x] = IN(r + k, c);
  __syncthreads();
  r = blockIdx.y * TILE_DIM + threadIdx.x;
  c = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int k = 0; k < TILE_DIM; k += blockDim.y)
    if (r < rows && c + k < cols) OUT(c + k, r) = tile[threadIdx.x][threadIdx.y + k];
}
