// Int8 GEMM in the "NT" layout with dp4a: C[m][n] = sum_k A[m][k] * B[n][k], int8 A [M, K]
// and B [N, K] row-major (K a multiple of 4), int32 C [M, N]; rows read as 32-bit words.
// Expert parameterization (hand-written): a block owns a BM x BN tile of C with
// (BN / TN) x (BM / TM) threads, each a TM x TN register tile of outputs BM / TM rows and
// BN / TN columns apart (the lanes of a warp read consecutive rows of the B slice: with a
// word of padding, PAD = 1, on different banks); a step stages BKW words of K of the A
// and B slices, VEC = 4 as 16-byte loads when K / 4 is a multiple of four (else a word at a
// time); the k loop fully unrolled. The launch bounds name one block an SM: with the
// thread count alone ptxas caps a 64-thread block at 64 registers and a 4 x 4 tile spills.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tiles, one output a thread, 16 words a step).

#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 16
#endif
#ifndef TM
#define TM 1
#endif
#ifndef TN
#define TN 1
#endif
#ifndef BKW
#define BKW 16
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef VEC
#define VEC 1
#endif

constexpr int kTX = BN / TN;        // threads across
constexpr int kTY = BM / TM;        // threads down
constexpr int kThreads = kTX * kTY;
constexpr int kLds = BKW + PAD;     // words a shared row

// Stages ROWS rows x BKW words of a row-major word matrix (rows of kw words, `rows` of them)
// from row r0 and word k0 into s, zeros past either end.
template <int ROWS>
static __device__ __forceinline__ void stage(int (*s)[kLds], const int *__restrict__ g,
                                             int r0, int rows, int k0, int kw, bool vec,
                                             int tid)
{
#if VEC == 4
    if (vec) {
        constexpr int kGroups = ROWS * (BKW / 4);
        for (int q = tid; q < kGroups; q += kThreads) {
            const int r = q / (BKW / 4), c = (q % (BKW / 4)) * 4;
            int4 v = make_int4(0, 0, 0, 0);
            if (r0 + r < rows && k0 + c < kw)
                v = *reinterpret_cast<const int4 *>(g + (size_t)(r0 + r) * kw + k0 + c);
            s[r][c] = v.x;
            s[r][c + 1] = v.y;
            s[r][c + 2] = v.z;
            s[r][c + 3] = v.w;
        }
        return;
    }
#endif
    for (int q = tid; q < ROWS * BKW; q += kThreads) {
        const int r = q / BKW, c = q % BKW;
        s[r][c] = (r0 + r < rows && k0 + c < kw) ? g[(size_t)(r0 + r) * kw + k0 + c] : 0;
    }
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
s8gemm_nt_dp4a(int *__restrict__ C, const signed char *__restrict__ A,
               const signed char *__restrict__ B, int M, int N, int K)
{
    __shared__ int As[BM][kLds];
    __shared__ int Bs[BN][kLds];

    const int kw = K / 4;
    const int *A4 = reinterpret_cast<const int *>(A);
    const int *B4 = reinterpret_cast<const int *>(B);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * kTX + tx;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vec = (kw % 4) == 0;

    int acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0;

    for (int k0 = 0; k0 < kw; k0 += BKW) {
        stage<BM>(As, A4, row0, M, k0, kw, vec, tid);
        stage<BN>(Bs, B4, col0, N, k0, kw, vec, tid);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BKW; ++k) {
            int a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = As[ty + i * kTY][k];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = Bs[tx + j * kTX][k];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + ty + i * kTY;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tx + j * kTX;
            if (row < M && col < N)
                C[(size_t)row * N + col] = acc[i][j];
        }
    }
}
