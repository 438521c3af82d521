// Strided-batched GEMM over half inputs with float accumulation, "TN" as a column-major
// BLAS names it: for each batch b, C_b [M x N] = alpha * A_b^T * B_b, where A_b is stored
// K x M row-major (A_b[k][m]: the transposed operand) and B_b is stored N x K row-major
// (B_b[n][k]), C_b M x N row-major in float. Each operand's batch sits at a fixed element
// stride (strideA, strideB, strideC: 64-bit, as cublasGemmStridedBatchedEx takes them);
// the batch is blockIdx.z. A TS x TS block of threads owns a TS x TS tile of C; the K loop
// is a while loop stepping TS at a time, each step converting a tile of A and one of B to
// float in shared memory (zeros past the edges).
// Launch: grid = ((N + 15) / 16, (M + 15) / 16, batch), block = (16, 16).

#include <cuda_fp16.h>

#define TS 16

extern "C" __global__ void hgemm_tn_bstrided(float *C, const __half *A, const __half *B,
                                             int M, int N, int K, long long strideA,
                                             long long strideB, long long strideC,
                                             float alpha)
{
    __shared__ float sA[TS][TS + 1]; // sA[k][m]
    __shared__ float sB[TS][TS + 1]; // sB[n][k]

    const __half *Ab = A + blockIdx.z * strideA;
    const __half *Bb = B + blockIdx.z * strideB;
    float *Cb = C + blockIdx.z * strideC;

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int mBase = blockIdx.y * TS, nBase = blockIdx.x * TS;

    float acc = 0.0f;
    int k0 = 0;
    while (k0 < K) {
        // A_b[k][m]: consecutive threads read consecutive m
        const int ka = k0 + ty, ma = mBase + tx;
        sA[ty][tx] = (ka < K && ma < M) ? __half2float(Ab[(size_t)ka * M + ma]) : 0.0f;
        // B_b[n][k]: consecutive threads read consecutive k
        const int nb = nBase + ty, kb = k0 + tx;
        sB[ty][tx] = (nb < N && kb < K) ? __half2float(Bb[(size_t)nb * K + kb]) : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TS; kk++)
            acc += sA[kk][ty] * sB[tx][kk];
        __syncthreads();
        k0 += TS;
    }

    const int m = mBase + ty, n = nBase + tx;
    if (m < M && n < N)
        Cb[(size_t)m * N + n] = alpha * acc;
}
