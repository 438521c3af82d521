// Batched C[b] = A[b] * B[b]^T (A [batch][M][K], B [batch][N][K], C [batch][M][N]), respelled:
// a device body templated on the block's tile side, the padded row a macro, the offset of the
// second tile written `OFF + smem` (size_t), unsigned thread indices and int offsets.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16, batch), block = (16, 16), dynamic shared
// memory 2 * 16 * 17 floats.

#define PAD 1

template <int BS>
__device__ __forceinline__ void gemm_nt_block(float *C, const float *A, const float *B, int M,
                                              int N, int K)
{
    extern __shared__ float buf[];
    float *As = buf;
    float *Bs = (size_t)(BS * (BS + PAD)) + buf;

    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BS + ty;
    const int col = blockIdx.x * BS + tx;
    const int bcol = blockIdx.x * BS + ty;
    const int z = blockIdx.z;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BS) {
        As[ty * (BS + PAD) + tx] =
            (row < M && k0 + tx < K) ? A[((size_t)z * M + row) * K + k0 + tx] : 0.0f;
        Bs[ty * (BS + PAD) + tx] =
            (bcol < N && k0 + tx < K) ? B[((size_t)z * N + bcol) * K + k0 + tx] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BS; ++k)
            acc += As[ty * (BS + PAD) + k] * Bs[tx * (BS + PAD) + k];
        __syncthreads();
    }
    if (row < M && col < N)
        C[((size_t)z * M + row) * N + col] = acc;
}

extern "C" __global__ void bgemm_abt_dyn(float *C, const float *A, const float *B, int M, int N,
                                         int K)
{
    gemm_nt_block<16>(C, A, B, M, N, K);
}
