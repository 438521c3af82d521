// Eccentric anomaly E from mean anomaly M (E - e sin E = M) by a fixed number of Newton
// steps, double precision on float data. The solver takes its settings as a struct by value; the kernel
// walks the array grid-stride in a while loop.
// Launch: grid = (n + 127) / 128, block = 128.
struct Solver {
  double ecc;
  int steps;
};

__device__ double newton_kepler(double m, Solver s) {
  double e = m + s.ecc * sin(m);
  int it = 0;
  do {
    const double f = e - s.ecc * sin(e) - m;
    const double df = 1.0 - s.ecc * cos(e);
    e = e - f / df;
    ++it;
  } while (it < s.steps);
  return e;
}

extern "C" __global__ void v2_kepler_struct_do(float* ecc_anom, const float* mean_anom,
                                               float ecc, int n) {
  Solver s;
  s.ecc = ecc;
  s.steps = 6;
  int i = threadIdx.x + blockDim.x * blockIdx.x;
  const int stride = blockDim.x * gridDim.x;
  while (i < n) {
    ecc_anom[i] = (float)newton_kepler((double)mean_anom[i], s);
    i += stride;
  }
}
