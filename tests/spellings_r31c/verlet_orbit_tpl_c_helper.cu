/* Velocity-Verlet test particles around a unit mass (GM = 1), dt = 1/100, STEPS steps;
 * another hand: plain C with #define sizes, the force in a helper writing through
 * references, the state in scalar locals, an early return. */
#define STEPS 400
#define BLOCK 128
#define DT 0.01f

__device__ void accel(float x, float y, float& ax, float& ay) {
  const float inv = 1.0f / sqrtf(x * x + y * y);
  const float inv3 = inv * inv * inv;
  ax = -x * inv3;
  ay = -y * inv3;
}

extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const float* s = state + 4 * i;
  float x = s[0], y = s[1], vx = s[2], vy = s[3];
  float ax, ay;
  accel(x, y, ax, ay);
  for (int step = 0; step < STEPS; step++) {
    vx += 0.5f * DT * ax;
    vy += 0.5f * DT * ay;
    x += DT * vx;
    y += DT * vy;
    accel(x, y, ax, ay);
    vx += 0.5f * DT * ax;
    vy += 0.5f * DT * ay;
  }
  float* o = out + 4 * i;
  o[0] = x;
  o[1] = y;
  o[2] = vx;
  o[3] = vy;
}
