// A 3 x 3 x 3 convolution of a 4-channel volume into 8 channels (a layer of a volumetric
// segmentation net), zero padding, same size: for every output channel o and voxel (z, y, x)
//   out[o][z][y][x] = sum over c, dz, dy, dx of wts[o][c][dz][dy][dx] * in[c][z+dz-1][y+dy-1][x+dx-1]
// Volumes are channel-major [C][depth][height][width]. A small index struct carries the
// volume's sizes; each thread computes the 8 outputs of one voxel, the block a 16 x 8 patch
// of one plane (blockIdx.z the plane).
// Launch: grid = ((width + 15) / 16, (height + 7) / 8, depth), block = (16, 8).
constexpr int C_IN = 4;
constexpr int C_OUT = 8;

struct Volume {
  int depth, height, width;
  __device__ bool contains(int z, int y, int x) const {
    return z >= 0 && z < depth && y >= 0 && y < height && x >= 0 && x < width;
  }
  __device__ size_t offset(int c, int z, int y, int x) const {
    return ((size_t(c) * depth + z) * height + y) * width + x;
  }
};

extern "C" __global__ void conv3d_c4to8(float* out, const float* in, const float* wts,
                                        int depth, int height, int width) {
  const Volume vol = {depth, height, width};
  const int x = blockIdx.x * 16 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= vol.width || y >= vol.height) return;
  float acc[C_OUT];
  for (int o = 0; o < C_OUT; ++o) acc[o] = 0.0f;
  for (int c = 0; c < C_IN; ++c)
    for (int dz = 0; dz < 3; ++dz)
      for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) {
          const int zi = z + dz - 1, yi = y + dy - 1, xi = x + dx - 1;
          const float v = vol.contains(zi, yi, xi) ? in[vol.offset(c, zi, yi, xi)] : 0.0f;
          const int tap = ((c * 3 + dz) * 3 + dy) * 3 + dx;
#pragma unroll
          for (int o = 0; o < C_OUT; ++o) acc[o] += wts[o * C_IN * 27 + tap] * v;
        }
  for (int o = 0; o < C_OUT; ++o) out[vol.offset(o, z, y, x)] = acc[o];
}
