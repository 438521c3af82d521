// Depthwise 1-D convolution along time, 9 taps: y[c][t] = sum_k taps[c * 9 + k] *
// x[c][t + k - 4] for [C, T] float signals (zero outside [0, T)), the per-channel taps in
// __constant__ memory (room for 1024 channels).
// Expert parameterization (hand-written): a block of THREADS x CH threads, threadIdx.y a
// channel (CH channels a block); each thread owns OPT consecutive outputs, so a block row
// stages THREADS * OPT samples plus the 4-sample halos in shared memory (the interior as
// float4 when VEC = 1 and T is a multiple of four: every row and tile start stays 16-byte
// aligned; the tile sits 4 floats in, so the interior is aligned in shared memory too),
// then slides a register window of OPT + 8 samples over its outputs, the taps in registers.
// Launch: grid = (ceil(T / (THREADS * OPT)), ceil(C / CH)), block = (THREADS, CH).
// Defaults: the kernel as written (256 threads, one channel, one output a thread).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef OPT
#define OPT 1
#endif
#ifndef CH
#define CH 1
#endif
#ifndef VEC
#define VEC 0
#endif

#define NTAPS 9
#define HALO 4
#define SPAN (THREADS * OPT)

__constant__ float taps[1024 * NTAPS];

extern "C" __global__ void __launch_bounds__(THREADS * CH)
depthwise_conv1d_k9(float *__restrict__ y, const float *__restrict__ x, int C, int T)
{
    // [ 4 halo | SPAN interior | 4 halo ], a row a channel
    __shared__ __align__(16) float win[CH][SPAN + 2 * HALO];
    const int c = blockIdx.y * CH + threadIdx.y;
    const int t0 = blockIdx.x * SPAN;
    const bool live = c < C;
    const float *xc = x + (size_t)(live ? c : 0) * T;
    float *row = win[threadIdx.y];

#if VEC
    if ((T & 3) == 0) {
        for (int s = threadIdx.x; s < SPAN / 4; s += THREADS) {
            const int t = t0 + 4 * s;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (live && t < T)
                v = *reinterpret_cast<const float4 *>(xc + t);
            *reinterpret_cast<float4 *>(row + HALO + 4 * s) = v;
        }
        if (threadIdx.x < 2 * HALO) {
            const int s = threadIdx.x < HALO ? threadIdx.x : SPAN + threadIdx.x;
            const int t = t0 + s - HALO;
            row[s] = (live && t >= 0 && t < T) ? xc[t] : 0.0f;
        }
    } else
#endif
    {
        for (int s = threadIdx.x; s < SPAN + 2 * HALO; s += THREADS) {
            const int t = t0 + s - HALO;
            row[s] = (live && t >= 0 && t < T) ? xc[t] : 0.0f;
        }
    }
    __syncthreads();
    if (!live)
        return;

    float w[NTAPS];
#pragma unroll
    for (int k = 0; k < NTAPS; ++k)
        w[k] = taps[c * NTAPS + k];

    const int s0 = threadIdx.x * OPT;
    float r[OPT + NTAPS - 1];
#pragma unroll
    for (int k = 0; k < OPT + NTAPS - 1; ++k)
        r[k] = row[s0 + k];

    float *yc = y + (size_t)c * T + t0 + s0;
#pragma unroll
    for (int o = 0; o < OPT; ++o) {
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < NTAPS; ++k)
            acc += w[k] * r[o + k];
        if (t0 + s0 + o < T)
            yc[o] = acc;
    }
}
