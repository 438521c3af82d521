// C = tanh(A * B + bias), row-major; a rectangular 32 x 8 block over a 32-wide, 8-tall
// output tile, the k slice 8 deep: A's 8 x 8 slice loaded by the first 8 columns of
// threads, B's 8 x 32 slice by all; the bias and tanh fused in the store
#define BW 32
#define BH 8
#define BKK 8
extern "C" __global__ void k(float* C, const float* A, const float* B, const float* bias,
                             int M, int N, int K) {
  __shared__ float As[BH][BKK];
  __shared__ float Bs[BKK][BW];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * BH + ty;
  const int col = blockIdx.x * BW + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += BKK) {
    if (tx < BKK) As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < BKK; ++kk) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = tanhf(acc + bias[col]);
}
