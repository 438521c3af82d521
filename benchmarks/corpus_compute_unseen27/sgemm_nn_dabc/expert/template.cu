// D = alpha * A * B + beta * C in float, row-major (A [M][K], B [K][N], C and D [M][N]).
// Expert parameterization (hand-written): a BM x BN tile of D a block of (BN / TN) x
// (BM / TM) threads, each a TM x TN register tile (rows ty + i * BM / TM, columns
// tx + j * BN / TN: coalesced stores, a warp's B reads on consecutive words); BK-deep K
// steps staged in static shared memory, A's tile transposed (As[k][m], rows of BM + 1
// floats: the transposing stores on distinct banks, the m reads broadcast) and B's as
// it lies (Bs[k][n]); VEC = 4 stages B's tile by float4 global loads when N % 4 == 0
// (scalar loads otherwise). K is summed in order, as the kernel as written sums it.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
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
#ifndef VEC
#define VEC 1
#endif

#define TX (BN / TN)
#define TY (BM / TM)
#define NTHREADS (TX * TY)

// launch bounds name one block an SM, leaving ptxas the registers the largest register
// tiles ask for (8 x 8 over 32-deep steps with float4 staging: 149 a thread, no spills)
extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
sgemm_nn_dabc(float *__restrict__ D, const float *__restrict__ A, const float *__restrict__ B,
              const float *__restrict__ C, int M, int N, int K, float alpha, float beta)
{
    __shared__ float As[BK][BM + 1];
    __shared__ __align__(16) float Bs[BK][BN];

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
        // A's tile, read along K (coalesced), stored transposed
#pragma unroll 4
        for (int e = tid; e < BM * BK; e += NTHREADS) {
            const int r = e / BK, c = e % BK;
            As[c][r] = (m0 + r < M && k0 + c < K) ? A[(size_t)(m0 + r) * K + k0 + c] : 0.0f;
        }
        // B's tile as it lies
#if VEC == 4
        if ((N & 3) == 0) {
#pragma unroll 4
            for (int g = tid; g < BK * (BN / 4); g += NTHREADS) {
                const int r = g / (BN / 4), c = (g % (BN / 4)) * 4;
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (k0 + r < K && n0 + c < N) // N % 4 == 0: a group is whole or past N
                    v = *reinterpret_cast<const float4 *>(B + (size_t)(k0 + r) * N + n0 + c);
                *reinterpret_cast<float4 *>(&Bs[r][c]) = v;
            }
        } else
#endif
        {
#pragma unroll 4
            for (int e = tid; e < BK * BN; e += NTHREADS) {
                const int r = e / BN, c = e % BN;
                Bs[r][c] = (k0 + r < K && n0 + c < N) ? B[(size_t)(k0 + r) * N + n0 + c] : 0.0f;
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
            if (row < M && col < N) {
                const size_t idx = (size_t)row * N + col;
                D[idx] = alpha * acc[i][j] + beta * C[idx];
            }
        }
    }
}
