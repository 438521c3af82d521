// out [B, HW, C] = in [B, C, HW] * scale[c] + shift[c]. Expert parameterization
// (hand-written): a block of TILE x ROWS threads moves a TILE-channel x TILE-pixel tile
// through shared memory (rows padded by PAD floats), each thread TILE / ROWS rows of the
// tile on the way in (reads along pixels) and on the way out (writes along channels); the
// affine is applied on the way in, as written. ORDER remaps the block's (x, y) through its
// linear index: 0 as launched (pixel tiles fastest, as written), 1 channel tiles fastest,
// 2 the diagonal order (tile x shifted by tile y), which spreads the blocks in flight over
// more DRAM rows. blockIdx.z is the image.
// Launch: grid = (ceil(HW / TILE), ceil(C / TILE), B), block = (TILE, ROWS).
// Defaults: the kernel as written (32 x 32 tile padded to 33, 32 x 8 threads).
#ifndef TILE
#define TILE 32
#endif
#ifndef ROWS
#define ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif
#ifndef ORDER
#define ORDER 0
#endif

extern "C" __global__ void __launch_bounds__(TILE * ROWS, 1)
nchw_to_nhwc_affine(float* __restrict__ out, const float* __restrict__ in,
                    const float* __restrict__ scale, const float* __restrict__ shift, int C,
                    int HW) {
  __shared__ float tile[TILE][TILE + PAD];
#if ORDER == 0
  const int tile_x = blockIdx.x, tile_y = blockIdx.y;
#else
  const unsigned linear = blockIdx.x + blockIdx.y * gridDim.x;
  const int tile_y = linear % gridDim.y;  // channel tiles fastest
#if ORDER == 1
  const int tile_x = linear / gridDim.y;
#else
  const int tile_x = (linear / gridDim.y + tile_y) % gridDim.x;
#endif
#endif
  const int p0 = tile_x * TILE;
  const int c0 = tile_y * TILE;
  const size_t image = (size_t)blockIdx.z * C * HW;
  const int p = p0 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    const int c = c0 + threadIdx.y + j;
    if (c < C && p < HW)
      tile[threadIdx.y + j][threadIdx.x] =
          __ldg(in + image + (size_t)c * HW + p) * __ldg(scale + c) + __ldg(shift + c);
  }
  __syncthreads();
  const int c = c0 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    const int q = p0 + threadIdx.y + j;
    if (c < C && q < HW) out[image + (size_t)q * C + c] = tile[threadIdx.x][threadIdx.y + j];
  }
}
