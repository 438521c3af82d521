// C[b] = alpha * A[b] * B[b] + beta * C[b] for each batch b = blockIdx.z; the arguments a
// struct passed by value, the offsets through an index helper, the loads __ldg, the tile a
// constexpr and the k walk a while loop
constexpr int BS = 16;
struct GemmArgs {
  const float* a;
  const float* b;
  float* c;
  int m, n, k;
  float alpha, beta;
};
__device__ __forceinline__ size_t at(int row, int col, int ld) { return (size_t)row * ld + col; }

extern "C" __global__ void k(GemmArgs p) {
  __shared__ float ta[BS][BS];
  __shared__ float tb[BS][BS];
  const float* a = p.a + (size_t)blockIdx.z * p.m * p.k;
  const float* b = p.b + (size_t)blockIdx.z * p.k * p.n;
  float* c = p.c + (size_t)blockIdx.z * p.m * p.n;
  int row = blockIdx.y * BS + threadIdx.y;
  int col = blockIdx.x * BS + threadIdx.x;
  float acc = 0.0f;
  int k0 = 0;
  while (k0 < p.k) {
    ta[threadIdx.y][threadIdx.x] =
        (row < p.m && k0 + threadIdx.x < p.k) ? __ldg(&a[at(row, k0 + threadIdx.x, p.k)]) : 0.0f;
    tb[threadIdx.y][threadIdx.x] =
        (k0 + threadIdx.y < p.k && col < p.n) ? __ldg(&b[at(k0 + threadIdx.y, col, p.n)]) : 0.0f;
    __syncthreads();
    for (int j = 0; j < BS; j++) acc += ta[threadIdx.y][j] * tb[j][threadIdx.x];
    __syncthreads();
    k0 += BS;
  }
  if (row < p.m && col < p.n) c[at(row, col, p.n)] = p.alpha * acc + p.beta * c[at(row, col, p.n)];
}
