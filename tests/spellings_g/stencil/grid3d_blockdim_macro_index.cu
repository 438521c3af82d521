// the same 7-point stencil on a 3-D grid, the point through blockDim, the flat index a macro
#define IDX(i, j, l) (((size_t)(l) * ny + (j)) * nx + (i))

extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int l = blockIdx.z * blockDim.z + threadIdx.z;
  if (i < nx && j < ny && l < nz) {
    if (i > 0 && j > 0 && l > 0 && i < nx - 1 && j < ny - 1 && l < nz - 1)
      out[IDX(i, j, l)] = 0.4f * in[IDX(i, j, l)] +
          0.1f * (in[IDX(i - 1, j, l)] + in[IDX(i + 1, j, l)] + in[IDX(i, j - 1, l)] +
                  in[IDX(i, j + 1, l)] + in[IDX(i, j, l - 1)] + in[IDX(i, j, l + 1)]);
    else
      out[IDX(i, j, l)] = in[IDX(i, j, l)];
  }
}
