// Triangular matrix product B = L A, L lower triangular (n x n, row-major; its strict upper
// triangle is not read), A and B n x m (row-major): B[i][j] = sum_{k <= i} L[i][k] A[k][j].
// Expert parameterization (hand-written): a BM x BN block tile of B, each thread a TM x TN
// register tile (rows strided by BM / TM, columns by BN / TN: conflict-free shared reads),
// BK-deep slices of L (BM x BK) and A (BK x BN) staged in shared memory (rows padded by PAD
// floats) by strided loops; the slice loop stops at the end of the block's diagonal (BM a
// multiple of BK: the last slice ends on it), entries above the diagonal staged as zero.
// Launch: grid = (ceil(m / BN), ceil(n / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tiles, one output a thread).

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
#ifndef PAD
#define PAD 0
#endif
#define ROW_THREADS (BM / TM)
#define COL_THREADS (BN / TN)
#define NTHREADS (ROW_THREADS * COL_THREADS)

extern "C" __global__ void __launch_bounds__(NTHREADS)
trmm_lower_tiled(float* __restrict__ B, const float* __restrict__ L,
                 const float* __restrict__ A, int n, int m)
{
    __shared__ float Ls[BM][BK + PAD];
    __shared__ float As[BK][BN + PAD];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * COL_THREADS + tx;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int kend = min(n, row0 + BM);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < kend; k0 += BK) {
        for (int e = tid; e < BM * BK; e += NTHREADS) {
            const int r = e / BK, c = e % BK;
            const int gr = row0 + r, gc = k0 + c;
            Ls[r][c] = (gr < n && gc <= gr) ? __ldg(L + (size_t)gr * n + gc) : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += NTHREADS) {
            const int r = e / BN, c = e % BN;
            const int gr = k0 + r, gc = col0 + c;
            As[r][c] = (gr < n && gc < m) ? __ldg(A + (size_t)gr * m + gc) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = Ls[ty + i * ROW_THREADS][k];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = As[k][tx + j * COL_THREADS];
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
        const int row = row0 + ty + i * ROW_THREADS;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tx + j * COL_THREADS;
            if (row < n && col < m)
                B[(size_t)row * m + col] = acc[i][j];
        }
    }
}
