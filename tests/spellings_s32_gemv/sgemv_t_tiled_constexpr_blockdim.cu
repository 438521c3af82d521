// y = A^T x, A row-major rows x cols. Written with constexpr sizes and blockDim-based
// indexing: a block of kLanes x kRowThreads threads owns kLanes columns; x is staged kStage
// rows at a time; each thread row sums every kRowThreads-th row of its column, the first
// thread row adds the partial sums.
constexpr int kLanes = 32;
constexpr int kRowThreads = 8;
constexpr int kStage = kLanes * kRowThreads;

extern "C" __global__ void sgemv_t_tiled(float* __restrict__ y, const float* __restrict__ A,
                                         const float* __restrict__ x, int M, int N)
{
    __shared__ float stage[kStage];
    __shared__ float sums[kRowThreads][kLanes + 1];

    const int lane = threadIdx.x;
    const int rowThread = threadIdx.y;
    const int j = blockIdx.x * blockDim.x + lane;
    float partial = 0.f;

    for (int i0 = 0; i0 < M; i0 += kStage) {
        const int flat = threadIdx.y * blockDim.x + threadIdx.x;
        stage[flat] = (i0 + flat < M) ? x[i0 + flat] : 0.f;
        __syncthreads();
        const int count = min(kStage, M - i0);
        if (j < N) {
            for (int i = rowThread; i < count; i += blockDim.y)
                partial += A[(size_t)(i0 + i) * (size_t)N + j] * stage[i];
        }
        __syncthreads();
    }

    sums[rowThread][lane] = partial;
    __syncthreads();
    if (rowThread == 0 && j < N) {
        float total = 0.f;
        for (int k = 0; k < kRowThreads; ++k)
            total += sums[k][lane];
        y[j] = total;
    }
}
