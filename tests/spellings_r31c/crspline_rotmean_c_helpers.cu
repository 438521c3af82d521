/* Mean of a periodic 64-knot Catmull-Rom spline over a golden-rotation orbit, another hand:
 * plain C helpers taking the staged knots as a pointer, #define sizes, a grid-stride loop
 * over the values, an index macro for the periodic knots. */
#define KNOTS 64
#define SAMPLES 64
#define STEP 0.61803398875f
#define KNOT(j) knots[(j) % KNOTS]

__device__ float wrap01(float t) { return t >= 1.0f ? t - 1.0f : t; }

__device__ float spline_at(const float *knots, float t) {
  float s = t * KNOTS;
  int i = min((int)s, KNOTS - 1);
  float f = s - i;
  float p0 = KNOT(i + KNOTS - 1);
  float p1 = knots[i];
  float p2 = KNOT(i + 1);
  float p3 = KNOT(i + 2);
  float c1 = 0.5f * (p2 - p0);
  float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
  float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
  return ((c3 * f + c2) * f + c1) * f + p1;
}

extern "C" __global__ void crspline_rotmean(float *out, const float *u, const float *table,
                                            int n) {
  __shared__ float knots[KNOTS];
  int j, k, i;
  for (j = threadIdx.x; j < KNOTS; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float total = 0.0f, offset = 0.0f, ui = u[i];
    for (k = 0; k < SAMPLES; k++) {
      total += spline_at(knots, wrap01(ui + offset));
      offset = wrap01(offset + STEP);
    }
    out[i] = total * (1.0f / SAMPLES);
  }
}
