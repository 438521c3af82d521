// y[i] = the integral over [0, 1] of exp(-a t^2) cos(b t), 16-point Gauss-Legendre.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// points, ITEMS a thread strided by THREADS (coalesced loads); the node loop is unrolled
// UNROLL times with the points' terms interleaved (independent expf and cosf in flight);
// NODES_SMEM 1 stages the nodes and weights in shared memory instead of reading the
// __device__ arrays. Every sum adds its terms in node order, as the kernel as written does.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (128 threads, one point each).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 16
#endif
#ifndef NODES_SMEM
#define NODES_SMEM 0
#endif
constexpr int kUnroll = UNROLL;

__device__ const float kNode[16] = {
    5.299532504e-03f, 2.771248846e-02f, 6.718439881e-02f, 1.222977958e-01f,
    1.910618778e-01f, 2.709916112e-01f, 3.591982246e-01f, 4.524937451e-01f,
    5.475062549e-01f, 6.408017754e-01f, 7.290083888e-01f, 8.089381222e-01f,
    8.777022042e-01f, 9.328156012e-01f, 9.722875115e-01f, 9.947004675e-01f};
__device__ const float kWeight[16] = {
    1.357622971e-02f, 3.112676197e-02f, 4.757925584e-02f, 6.231448563e-02f,
    7.479799441e-02f, 8.457825970e-02f, 9.130170752e-02f, 9.472530523e-02f,
    9.472530523e-02f, 9.130170752e-02f, 8.457825970e-02f, 7.479799441e-02f,
    6.231448563e-02f, 4.757925584e-02f, 3.112676197e-02f, 1.357622971e-02f};

extern "C" __global__ void __launch_bounds__(THREADS)
gauss16_quad(float* __restrict__ y, const float* __restrict__ a, const float* __restrict__ b,
             int n) {
#if NODES_SMEM
  __shared__ float node[16], weight[16];
  if (threadIdx.x < 16) {
    node[threadIdx.x] = kNode[threadIdx.x];
    weight[threadIdx.x] = kWeight[threadIdx.x];
  }
  __syncthreads();
#else
  const float* node = kNode;
  const float* weight = kWeight;
#endif
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float av[ITEMS], bv[ITEMS], sum[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    av[it] = i < n ? a[i] : 0.0f;
    bv[it] = i < n ? b[i] : 0.0f;
    sum[it] = 0.0f;
  }
#pragma unroll (kUnroll)
  for (int q = 0; q < 16; ++q) {
    const float t = node[q], w = weight[q];
#pragma unroll
    for (int it = 0; it < ITEMS; ++it)
      sum[it] += w * (expf(-av[it] * t * t) * cosf(bv[it] * t));
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) y[i] = sum[it];
  }
}
