// One phase of blocked Floyd-Warshall, its independent blocks: pivot tile kb of the
// 32 x 32 tiling (K = [32 kb, 32 kb + 32) clipped to n); every element outside the pivot
// row and column bands becomes min(d_in[i][j], min_{k in K} d_in[i][k] + d_in[k][j]) in
// d_out, the bands copied; distances past n read as INF (1 << 29).
// Expert parameterization (hand-written): a block of BX x BY threads owns a BM x BN tile
// (BM = BY * TM, BN = BX * TN), each thread a TM x TN register tile (rows BY apart,
// columns BX apart: a warp's stores stay coalesced); the tile's slice of the pivot columns
// (BM x 32) and rows (32 x BN, padded by PAD a row) staged in shared memory; the band test
// is per element (a tile may straddle a band once BM or BN is not 32).
// Launch: grid = (ceil(n / (BX * TN)), ceil(n / (BY * TM))), block = (BX, BY).
// Defaults: the kernel as written (32 x 32 threads, one element a thread).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 32
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

#define KSIDE 32
#define INF_D (1 << 29)
#define BM (BY * TM)
#define BN (BX * TN)

extern "C" __global__ void __launch_bounds__(BX * BY)
floyd_block_phase(int *__restrict__ d_out, const int *__restrict__ d_in, int n, int kb)
{
    __shared__ int rowPiv[BM][KSIDE + PAD];  // [i in tile][k]
    __shared__ int colPiv[KSIDE][BN + PAD];  // [k][j in tile]

    const int tid = threadIdx.y * BX + threadIdx.x;
    const int i0 = blockIdx.y * BM, j0 = blockIdx.x * BN;
    const int kBase = kb * KSIDE;

    for (int e = tid; e < BM * KSIDE; e += BX * BY) {
        const int r = e / KSIDE, k = e % KSIDE;
        const int i = i0 + r, kk = kBase + k;
        rowPiv[r][k] = (i < n && kk < n) ? d_in[i * n + kk] : INF_D;
    }
    for (int e = tid; e < KSIDE * BN; e += BX * BY) {
        const int k = e / BN, c = e % BN;
        const int j = j0 + c, kk = kBase + k;
        colPiv[k][c] = (kk < n && j < n) ? d_in[kk * n + j] : INF_D;
    }

    int cur[TM][TN];
#pragma unroll
    for (int a = 0; a < TM; ++a) {
        const int i = i0 + threadIdx.y + a * BY;
#pragma unroll
        for (int b = 0; b < TN; ++b) {
            const int j = j0 + threadIdx.x + b * BX;
            cur[a][b] = (i < n && j < n) ? d_in[i * n + j] : INF_D;
        }
    }
    __syncthreads();

#pragma unroll
    for (int k = 0; k < KSIDE; ++k) {
        int rv[TM], cv[TN];
#pragma unroll
        for (int a = 0; a < TM; ++a)
            rv[a] = rowPiv[threadIdx.y + a * BY][k];
#pragma unroll
        for (int b = 0; b < TN; ++b)
            cv[b] = colPiv[k][threadIdx.x + b * BX];
#pragma unroll
        for (int a = 0; a < TM; ++a)
#pragma unroll
            for (int b = 0; b < TN; ++b)
                cur[a][b] = min(cur[a][b], rv[a] + cv[b]);
    }

#pragma unroll
    for (int a = 0; a < TM; ++a) {
        const int i = i0 + threadIdx.y + a * BY;
#pragma unroll
        for (int b = 0; b < TN; ++b) {
            const int j = j0 + threadIdx.x + b * BX;
            if (i < n && j < n) {
                const bool band = (i / KSIDE == kb) || (j / KSIDE == kb);
                d_out[i * n + j] = band ? d_in[i * n + j] : cur[a][b];
            }
        }
    }
}
