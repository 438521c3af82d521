// depthwise_conv1d_k9 respelled (session 33): the radius and the line's length are macros of
// other macros (``R (K / 2)``, ``LINE (BS + 2 * R)``), read as the numbers they stand for
// while the macros themselves stay as written (they follow K and BS).
#define K 9
#define R (K / 2)
#define BS 256
#define LINE (BS + 2 * R)
#define MAXC 1024

__constant__ float taps[MAXC * K];

extern "C" __global__ void depthwise_conv1d_k9(float* __restrict__ y,
                                               const float* __restrict__ x, int C, int T)
{
    __shared__ float win[LINE];
    const int c = blockIdx.y;
    const int t0 = blockIdx.x * BS;
    const float* xc = x + (size_t)c * T;

    for (int s = threadIdx.x; s < LINE; s += BS) {
        const int t = t0 + s - R;
        win[s] = (t >= 0 && t < T) ? xc[t] : 0.0f;
    }
    __syncthreads();

    const int t = t0 + threadIdx.x;
    if (t >= T || c >= C) return;
    const float* w = taps + c * K;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k)
        acc += w[k] * win[threadIdx.x + k];
    y[(size_t)c * T + t] = acc;
}
