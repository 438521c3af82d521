// out[i] = cube root of in[i], computed in double by a fixed 40 Newton steps from
// 1 + |x| / 3 (at or above the root, so the steps fall monotonically onto it); the sign is
// put back at the end and zero maps to zero. One element a thread, 256 threads a block.
// Launch: grid = ((n + 255) / 256), block = (256).

#define STEPS 40
#define NEWTON_STEP(y, x) ((y) - ((y) * (y) * (y) - (x)) / (3.0 * (y) * (y)))

extern "C" __global__ void cbrt_newton_f64(float* out, const float* in, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = in[i];
  const bool negative = x < 0.0;
  if (negative) x = -x;
  if (x == 0.0) {
    out[i] = 0.0f;
    return;
  }
  double y = 1.0 + x / 3.0;
  unsigned step = 0;
  do {
    y = NEWTON_STEP(y, x);
    ++step;
  } while (step < STEPS);
  out[i] = (float)(negative ? -y : y);
}
