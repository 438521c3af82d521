// Strided-batched C_b = alpha A_b^T B_b, half inputs (A_b [K][M], B_b [N][K]) with float
// accumulation, C_b [M][N] float; batch b = blockIdx.z at 64-bit element strides.
// Expert parameterization (hand-written): a BM x BN tile of C_b a block of (BN / TN) x
// (BM / TM) threads, each a TM x TN register tile (rows ty + i * BM / TM, columns
// tx + j * BN / TN: coalesced stores); BK-deep K steps converted to float in static shared
// memory, both as [k][m] / [k][n] (As as A_b lies, read along m; Bs transposed from B_b's
// rows, read along k, rows of BN + 1 floats so the transposing stores spread over banks).
// VEC = 2 stages pairs of halves by __half2 loads where the row length is even (M for A,
// K for B; scalar loads otherwise). K is summed in order, as the kernel as written sums it.
// Launch: grid = (ceil(N / BN), ceil(M / BM), batch), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tiles, one output a thread).

#include <cuda_fp16.h>

#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 16
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 1
#endif
#ifndef TN
#define TN 1
#endif
#ifndef VEC
#define VEC 1
#endif

#define TX (BN / TN)
#define TY (BM / TM)
#define NTHREADS (TX * TY)

// launch bounds name one block an SM, leaving ptxas the registers the largest register
// tiles ask for (168 a thread at most over the space, no spills)
extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
hgemm_tn_bstrided(float *__restrict__ C, const __half *__restrict__ A,
                  const __half *__restrict__ B, int M, int N, int K, long long strideA,
                  long long strideB, long long strideC, float alpha)
{
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN + 1];

    const __half *Ab = A + blockIdx.z * strideA;
    const __half *Bb = B + blockIdx.z * strideB;
    float *Cb = C + blockIdx.z * strideC;

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * TX + tx;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // A_b's tile as it lies: row k0 + r, columns m0 .. m0 + BM
#if VEC == 2
        if ((M & 1) == 0) {
            for (int g = tid; g < BK * (BM / 2); g += NTHREADS) {
                const int r = g / (BM / 2), c = (g % (BM / 2)) * 2;
                float lo = 0.0f, hi = 0.0f;
                if (k0 + r < K && m0 + c < M) { // M even: a pair is whole or past M
                    const __half2 v =
                        *reinterpret_cast<const __half2 *>(Ab + (size_t)(k0 + r) * M + m0 + c);
                    lo = __low2float(v);
                    hi = __high2float(v);
                }
                As[r][c] = lo;
                As[r][c + 1] = hi;
            }
        } else
#endif
        {
            for (int e = tid; e < BK * BM; e += NTHREADS) {
                const int r = e / BM, c = e % BM;
                As[r][c] = (k0 + r < K && m0 + c < M)
                               ? __half2float(Ab[(size_t)(k0 + r) * M + m0 + c]) : 0.0f;
            }
        }
        // B_b's tile: row n0 + r, columns k0 .. k0 + BK, stored transposed
#if VEC == 2
        if ((K & 1) == 0) {
            for (int g = tid; g < BN * (BK / 2); g += NTHREADS) {
                const int r = g / (BK / 2), c = (g % (BK / 2)) * 2;
                float lo = 0.0f, hi = 0.0f;
                if (n0 + r < N && k0 + c < K) { // K even: a pair is whole or past K
                    const __half2 v =
                        *reinterpret_cast<const __half2 *>(Bb + (size_t)(n0 + r) * K + k0 + c);
                    lo = __low2float(v);
                    hi = __high2float(v);
                }
                Bs[c][r] = lo;
                Bs[c + 1][r] = hi;
            }
        } else
#endif
        {
            for (int e = tid; e < BN * BK; e += NTHREADS) {
                const int r = e / BK, c = e % BK;
                Bs[c][r] = (n0 + r < N && k0 + c < K)
                               ? __half2float(Bb[(size_t)(n0 + r) * K + k0 + c]) : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = As[kk][ty + i * TY];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = Bs[kk][tx + j * TX];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + ty + i * TY;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + tx + j * TX;
            if (row < M && col < N)
                Cb[(size_t)row * N + col] = alpha * acc[i][j];
        }
    }
}
