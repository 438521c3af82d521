// Batched C[b] = A[b] * B[b]^T in float (A [batch][M][K], B [batch][N][K], C [batch][M][N]).
// Expert parameterization (hand-written): a BM x BN tile of C a block of (BN / TN) x
// (BM / TM) threads, each a TM x TN register tile (rows ty + i * BM / TM, columns
// tx + j * BN / TN: coalesced stores, conflict-free row walks); BK-deep steps of A's and B's
// rows staged in dynamic shared memory, a row BK + 1 floats (the scalar walk: a warp's rows
// on distinct banks); VEC = 4 stages the tiles with float4 global loads when K % 4 == 0
// (scalar loads otherwise) and reads four K values of a row at once from shared memory
// (float4: rows of BK + 4 floats, a quarter warp's rows on distinct banks).
// Launch: grid = (ceil(N / BN), ceil(M / BM), batch), block = (BN / TN, BM / TM),
//         dynamic shared memory (BM + BN) * (BK + VEC) * 4 bytes.
// Defaults: the kernel as written (16 x 16 tiles, one output a thread, rows padded by one).

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
#define LDS (BK + VEC) // a row's floats: padded by one (scalar walk) or four (float4)

// rows [r0, r0 + ROWS) of a matrix of `rows` rows of K floats, K steps [k0, k0 + BK), into
// dst [ROWS][LDS]; zeros past the matrix
template <int ROWS>
static __device__ __forceinline__ void stage(float *dst, const float *__restrict__ src, int r0,
                                             int rows, int k0, int K, int tid)
{
#if VEC == 4
    if ((K & 3) == 0) {
#pragma unroll 4
        for (int g = tid; g < ROWS * (BK / 4); g += NTHREADS) {
            const int r = g / (BK / 4), kk = (g % (BK / 4)) * 4;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (r0 + r < rows && k0 + kk < K)
                v = *reinterpret_cast<const float4 *>(src + (size_t)(r0 + r) * K + k0 + kk);
            float *d = dst + r * LDS + kk;
            d[0] = v.x;
            d[1] = v.y;
            d[2] = v.z;
            d[3] = v.w;
        }
        return;
    }
#endif
#pragma unroll 4
    for (int e = tid; e < ROWS * BK; e += NTHREADS) {
        const int r = e / BK, kk = e % BK;
        dst[r * LDS + kk] = (r0 + r < rows && k0 + kk < K)
                                ? src[(size_t)(r0 + r) * K + k0 + kk] : 0.0f;
    }
}

// launch bounds name one block an SM: the thread count alone lets ptxas cap a thread at 64
// registers, and a 4 x 4 tile of a 64-thread block spilled
extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
bgemm_abt_dyn(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B,
              int M, int N, int K)
{
    extern __shared__ float4 smem4[];
    float *sa = reinterpret_cast<float *>(smem4); // [BM][LDS]
    float *sb = sa + BM * LDS;                    // [BN][LDS]

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * TX + tx;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const size_t batch = blockIdx.z;
    A += batch * M * K;
    B += batch * N * K;
    C += batch * M * N;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        stage<BM>(sa, A, m0, M, k0, K, tid);
        stage<BN>(sb, B, n0, N, k0, K, tid);
        __syncthreads();
#if VEC == 4
#pragma unroll
        for (int kk = 0; kk < BK; kk += 4) {
            float4 a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = *reinterpret_cast<const float4 *>(sa + (ty + i * TY) * LDS + kk);
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = *reinterpret_cast<const float4 *>(sb + (tx + j * TX) * LDS + kk);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i].x * b[j].x;
                    acc[i][j] += a[i].y * b[j].y;
                    acc[i][j] += a[i].z * b[j].z;
                    acc[i][j] += a[i].w * b[j].w;
                }
        }
#else
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = sa[(ty + i * TY) * LDS + kk];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = sb[(tx + j * TX) * LDS + kk];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
#endif
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + ty + i * TY;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + tx + j * TX;
            if (row < M && col < N)
                C[(size_t)row * N + col] = acc[i][j];
        }
    }
}
