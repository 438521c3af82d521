// Multi-channel 1-D convolution with "same" zero padding, as in a temporal convolution
// layer: for batch item b, output channel o and time t,
//   out[b][o][t] = biases[o] + sum over c < 16, k < 7 of weights[o][c][k] * in[b][c][t + k - 3]
// with in[b][c][s] = 0 outside 0 <= s < T. Tensors are [B, 16, T], time fastest. The
// weights (16 x 16 x 7) and biases live in constant memory. One thread per output sample:
// blockIdx.y is the output channel and blockIdx.z the batch item, so every thread of a
// block reads the same weight at the same time.
// Launch: grid = ((T + BLOCK_T - 1) / BLOCK_T, 16, B), block = BLOCK_T.
#ifndef BLOCK_T
#define BLOCK_T 128
#endif
#define CH 16
#define TAPS 7

__constant__ float weights[CH * CH * TAPS];  // [o][c][k]
__constant__ float biases[CH];

extern "C" __global__ void conv1d_mix7(float* out, const float* in, int T) {
  const size_t t = (size_t)blockIdx.x * BLOCK_T + threadIdx.x;
  const int o = blockIdx.y;
  const size_t b = blockIdx.z;
  if (t < (size_t)T) {
    const float* src = in + b * CH * (size_t)T;
    float acc = biases[o];
    for (int c = 0; c < CH; ++c) {
      for (int k = 0; k < TAPS; ++k) {
        const long long s = (long long)t + k - TAPS / 2;
        if (s >= 0 && s < T) acc += weights[(o * CH + c) * TAPS + k] * src[(size_t)c * T + s];
      }
    }
    out[(b * CH + o) * (size_t)T + t] = acc;
  }
}
