// Layer normalisation of the rows of a float matrix, a warp a row (two passes: the mean,
// then the mean of squared deviations), y = (x - mean) rsqrt(var + eps) gamma + beta.
// Expert parameterization (hand-written): WARPS rows a block (threadIdx.y); VEC floats a
// load (float2 / float4 when cols % VEC == 0, so every row starts aligned; scalar loads
// otherwise), lane l taking groups l, l + 32, ...; REGS groups a lane kept in registers
// from the first pass (the row's first 32 REGS VEC elements read once, the rest read in
// every pass); UNROLL the unroll of the loops over the groups past the registers.
// Launch: grid = ceil(rows / WARPS), block = (32, WARPS).
// Defaults: the kernel as written (4 rows a block, scalar, the row read in every pass).

#ifndef WARPS
#define WARPS 4
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef REGS
#define REGS 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

#define HELD (REGS > 0 ? REGS : 1) // register groups declared (none used at REGS 0)

constexpr int kUnroll = UNROLL; // `#pragma unroll N` takes a constant expression

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// the VEC floats of group g of a row of `cols` (zeros past it)
static __device__ __forceinline__ void load_group(float (&v)[VEC], const float *__restrict__ p,
                                                  int g, int cols, bool vec_ok)
{
    const int e = g * VEC;
#if VEC == 4
    if (vec_ok) {
        const float4 q = *reinterpret_cast<const float4 *>(p + e);
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
        return;
    }
#elif VEC == 2
    if (vec_ok) {
        const float2 q = *reinterpret_cast<const float2 *>(p + e);
        v[0] = q.x;
        v[1] = q.y;
        return;
    }
#endif
#pragma unroll
    for (int u = 0; u < VEC; ++u)
        v[u] = e + u < cols ? p[e + u] : 0.0f;
}

static __device__ __forceinline__ float group_sum(const float (&v)[VEC], int g, int cols)
{
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < VEC; ++u)
        if (g * VEC + u < cols)
            s += v[u];
    return s;
}

static __device__ __forceinline__ float group_sq(const float (&v)[VEC], int g, int cols,
                                                 float mean)
{
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < VEC; ++u)
        if (g * VEC + u < cols) {
            const float d = v[u] - mean;
            s += d * d;
        }
    return s;
}

static __device__ __forceinline__ void store_group(float *__restrict__ yr, const float (&v)[VEC],
                                                   const float *__restrict__ gamma,
                                                   const float *__restrict__ beta, int g,
                                                   int cols, bool vec_ok, float mean, float rstd)
{
    float gm[VEC], bt[VEC], o[VEC];
    load_group(gm, gamma, g, cols, vec_ok);
    load_group(bt, beta, g, cols, vec_ok);
#pragma unroll
    for (int u = 0; u < VEC; ++u)
        o[u] = (v[u] - mean) * rstd * gm[u] + bt[u];
    const int e = g * VEC;
#if VEC == 4
    if (vec_ok) {
        *reinterpret_cast<float4 *>(yr + e) = make_float4(o[0], o[1], o[2], o[3]);
        return;
    }
#elif VEC == 2
    if (vec_ok) {
        *reinterpret_cast<float2 *>(yr + e) = make_float2(o[0], o[1]);
        return;
    }
#endif
#pragma unroll
    for (int u = 0; u < VEC; ++u)
        if (e + u < cols)
            yr[e + u] = o[u];
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
layernorm_rows_yw(float *__restrict__ y, const float *__restrict__ x,
                  const float *__restrict__ gamma, const float *__restrict__ beta, int rows,
                  int cols, float eps)
{
    const int row = blockIdx.x * WARPS + threadIdx.y;
    if (row >= rows)
        return;
    const int lane = threadIdx.x;
    const float *__restrict__ xr = x + (size_t)row * cols;
    float *__restrict__ yr = y + (size_t)row * cols;
    const bool vec_ok = cols % VEC == 0;
    const int groups = (cols + VEC - 1) / VEC;

    float held[HELD][VEC];
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < REGS; ++r) {
        const int g = lane + 32 * r;
        if (g < groups) {
            load_group(held[r], xr, g, cols, vec_ok);
            s += group_sum(held[r], g, cols);
        }
    }
#pragma unroll (kUnroll)
    for (int g = lane + 32 * REGS; g < groups; g += 32) {
        float v[VEC];
        load_group(v, xr, g, cols, vec_ok);
        s += group_sum(v, g, cols);
    }
    const float mean = warp_sum(s) / cols;

    float ss = 0.0f;
#pragma unroll
    for (int r = 0; r < REGS; ++r) {
        const int g = lane + 32 * r;
        if (g < groups)
            ss += group_sq(held[r], g, cols, mean);
    }
#pragma unroll (kUnroll)
    for (int g = lane + 32 * REGS; g < groups; g += 32) {
        float v[VEC];
        load_group(v, xr, g, cols, vec_ok);
        ss += group_sq(v, g, cols, mean);
    }
    const float rstd = rsqrtf(warp_sum(ss) / cols + eps);

#pragma unroll
    for (int r = 0; r < REGS; ++r) {
        const int g = lane + 32 * r;
        if (g < groups)
            store_group(yr, held[r], gamma, beta, g, cols, vec_ok, mean, rstd);
    }
#pragma unroll (kUnroll)
    for (int g = lane + 32 * REGS; g < groups; g += 32) {
        float v[VEC];
        load_group(v, xr, g, cols, vec_ok);
        store_group(yr, v, gamma, beta, g, cols, vec_ok, mean, rstd);
    }
}
