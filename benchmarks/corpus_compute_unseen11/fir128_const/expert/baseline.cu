// A 128-tap FIR filter over many channels: y[c][i] = sum_t taps[t] * x[c][i + t] for each
// output i < n of channel c (x [ch, n + 127] holds each channel's n outputs plus the filter's
// 127 extra inputs). The taps live in constant memory; the channel is blockIdx.y; the sizes
// travel in a struct passed by value to the routine that computes one output.
// Launch: grid = ((n + 255) / 256, ch), block = 256.

#define FIR_TAPS 128

__constant__ float taps[FIR_TAPS];

struct Signal {
  const float* x;  // this channel's n + FIR_TAPS - 1 inputs
  float* y;        // this channel's n outputs
  int n;
};

__device__ float filter_at(Signal s, int i) {
  float acc = 0.0f;
#pragma unroll 16
  for (int t = 0; t < FIR_TAPS; t++) acc += taps[t] * s.x[i + t];
  return acc;
}

extern "C" __global__ void fir128_const(float* y, const float* x, int n) {
  Signal s;
  s.n = n;
  s.x = x + (size_t)blockIdx.y * (n + FIR_TAPS - 1);
  s.y = y + (size_t)blockIdx.y * n;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < s.n) s.y[i] = filter_at(s, i);
}
