// Row-wise log-softmax of a half matrix, in float: out[r][c] = x[r][c] - lse_r,
// lse_r = max_r + log(sum_c exp(x[r][c] - max_r)); one warp a row.
// Expert parameterization (hand-written): WARPS rows a block; VEC halves a load (2: a
// 4-byte pair when cols is even; 8: a 16-byte group when cols is a multiple of 8, else
// pairs; the lanes of a warp read consecutive packs); REGS halves a lane kept in registers
// (0: none; 64 or 128: a row of up to 32 * REGS halves is read once and its three passes run
// from registers, longer rows take the streaming passes); ONLINE = 1 streams the max and the
// sum of exponentials in one pass (each lane rescales its sum when its max grows, the warp
// merges the lanes' pairs), two passes over the row instead of three; FASTEXP = 1 takes
// __expf.
// Launch: grid = ceil(rows / WARPS), block = (32, WARPS).
// Defaults: the kernel as written (eight rows a block, a half a load, three passes).

#ifndef WARPS
#define WARPS 8
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef REGS
#define REGS 0
#endif
#ifndef ONLINE
#define ONLINE 0
#endif
#ifndef FASTEXP
#define FASTEXP 0
#endif

#include <cuda_fp16.h>

#if FASTEXP
#define EXP(v) __expf(v)
#else
#define EXP(v) expf(v)
#endif

// V consecutive halves, loaded and stored as one 2 V-byte access
template <int V>
struct alignas(2 * V) Pack {
    __half v[V];
};

static __device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
    return v;
}

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, mask);
    return v;
}

template <int V>
static __device__ __forceinline__ void store_row(Pack<V> *__restrict__ yp, const Pack<V> &q,
                                                 int p, float lse)
{
    Pack<V> o;
#pragma unroll
    for (int j = 0; j < V; ++j)
        o.v[j] = __float2half(__half2float(q.v[j]) - lse);
    yp[p] = o;
}

template <int V>
static __device__ __forceinline__ void log_softmax_row(__half *__restrict__ yr,
                                                       const __half *__restrict__ xr,
                                                       int cols, int lane)
{
    const Pack<V> *xp = reinterpret_cast<const Pack<V> *>(xr);
    Pack<V> *yp = reinterpret_cast<Pack<V> *>(yr);
    const int packs = cols / V;
#if REGS
    constexpr int kSteps = REGS / V;
    if (packs <= kSteps * 32) {
        Pack<V> row[kSteps];
        float m = -INFINITY;
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
            if (s * 32 + lane < packs) {
                row[s] = xp[s * 32 + lane];
#pragma unroll
                for (int j = 0; j < V; ++j)
                    m = fmaxf(m, __half2float(row[s].v[j]));
            }
        }
        m = warp_max(m);
        float sum = 0.0f;
#pragma unroll
        for (int s = 0; s < kSteps; ++s)
            if (s * 32 + lane < packs)
#pragma unroll
                for (int j = 0; j < V; ++j)
                    sum += EXP(__half2float(row[s].v[j]) - m);
        sum = warp_sum(sum);
        const float lse = m + logf(sum);
#pragma unroll
        for (int s = 0; s < kSteps; ++s)
            if (s * 32 + lane < packs)
                store_row<V>(yp, row[s], s * 32 + lane, lse);
        return;
    }
#endif
#if ONLINE
    float m = -INFINITY, sum = 0.0f;
    for (int p = lane; p < packs; p += 32) {
        const Pack<V> q = xp[p];
        float top = m;
#pragma unroll
        for (int j = 0; j < V; ++j)
            top = fmaxf(top, __half2float(q.v[j]));
        sum *= EXP(m - top);  // m = -inf before a lane's first pack: 0 * 0
#pragma unroll
        for (int j = 0; j < V; ++j)
            sum += EXP(__half2float(q.v[j]) - top);
        m = top;
    }
    const float wm = warp_max(m);
    sum = warp_sum(m == -INFINITY ? 0.0f : sum * EXP(m - wm));
    m = wm;
#else
    float m = -INFINITY;
    for (int p = lane; p < packs; p += 32) {
        const Pack<V> q = xp[p];
#pragma unroll
        for (int j = 0; j < V; ++j)
            m = fmaxf(m, __half2float(q.v[j]));
    }
    m = warp_max(m);
    float sum = 0.0f;
    for (int p = lane; p < packs; p += 32) {
        const Pack<V> q = xp[p];
#pragma unroll
        for (int j = 0; j < V; ++j)
            sum += EXP(__half2float(q.v[j]) - m);
    }
    sum = warp_sum(sum);
#endif
    const float lse = m + logf(sum);
    for (int p = lane; p < packs; p += 32)
        store_row<V>(yp, xp[p], p, lse);
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
logsoftmax_h16_warp(__half *__restrict__ out, const __half *__restrict__ x, int rows, int cols)
{
    const int row = blockIdx.x * WARPS + threadIdx.y;
    if (row >= rows)
        return;  // the whole warp leaves
    const int lane = threadIdx.x;
    const __half *xr = x + (size_t)row * cols;
    __half *yr = out + (size_t)row * cols;
#if VEC >= 8
    if (cols % 8 == 0) {
        log_softmax_row<8>(yr, xr, cols, lane);
        return;
    }
#endif
#if VEC >= 2
    if (cols % 2 == 0) {
        log_softmax_row<2>(yr, xr, cols, lane);
        return;
    }
#endif
    log_softmax_row<1>(yr, xr, cols, lane);
}
