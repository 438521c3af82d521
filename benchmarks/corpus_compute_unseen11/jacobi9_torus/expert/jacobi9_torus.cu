// One weighted-Jacobi sweep of the 9-point (Mehrstellen) Poisson stencil over a batch of
// periodic fields, each a torus (the first row's upper neighbour is the last row, the first
// column's left neighbour the last column):
//   u_new = (1 - OMEGA) u + OMEGA (4 (N + S + W + E) + (NW + NE + SW + SE) + 6 h2 f) / 20
// u, f, u_new [B, H, W]; the field is blockIdx.z. A small class maps a (row, column) that
// may be one step outside the field to its wrapped offset.
// Launch: grid = ((W + 31) / 32, (H + 7) / 8, B), block = (32, 8).

#define OMEGA 0.8f

class Torus {
 public:
  __device__ Torus(int rows, int cols) : rows_(rows), cols_(cols) {}
  __device__ int operator()(int r, int c) const {
    return ((r + rows_) % rows_) * cols_ + (c + cols_) % cols_;
  }

 private:
  int rows_, cols_;
};

extern "C" __global__ void jacobi9_torus(float* u_new, const float* u, const float* f, int H,
                                         int W, float h2) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= H || c >= W) return;
  const size_t plane = (size_t)blockIdx.z * H * W;
  const float* U = u + plane;
  const Torus at(H, W);
  const float edges = U[at(r - 1, c)] + U[at(r + 1, c)] + U[at(r, c - 1)] + U[at(r, c + 1)];
  const float corners = U[at(r - 1, c - 1)] + U[at(r - 1, c + 1)] + U[at(r + 1, c - 1)] +
                        U[at(r + 1, c + 1)];
  const int here = at(r, c);
  u_new[plane + here] = (1.0f - OMEGA) * U[here] +
                        OMEGA * (4.0f * edges + corners + 6.0f * h2 * f[plane + here]) / 20.0f;
}
