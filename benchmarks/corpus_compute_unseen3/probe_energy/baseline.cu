// Potential energy of each probe particle in the field of NSRC fixed ions whose parameters
// sit in constant memory: a Lennard-Jones term plus a screened (Yukawa) Coulomb term, both
// cut off at RCUT and shifted by their value at RCUT so the energy is continuous there.
// The squared distance is softened by SOFT2 so a probe on top of an ion stays finite.
//   energy[i] = sum over ions s with r^2 < RCUT^2 of  (lj(r^2) - lj(RCUT^2))
//                                                    + q_i q_s (yukawa(r) - yukawa(RCUT))
//   lj(r^2) = 4 eps_s ((sig_s^2 / r^2)^6 - (sig_s^2 / r^2)^3),  yukawa(r) = exp(-KAPPA r) / r
// pos holds the probes as x, y, z triples (3 n floats), q their charges.
// Launch: grid = (n + 127) / 128, block = 128.
#define NSRC 96
#define BLOCK 128
#define RCUT 2.5f
#define SOFT2 0.01f
#define KAPPA 0.8f

__constant__ float ions[NSRC * 6];  // per ion: x, y, z, charge, epsilon, sigma

__device__ float lj(float r2, float sig, float eps) {
  float sr2 = sig * sig / r2;
  float sr6 = sr2 * sr2 * sr2;
  return 4.0f * eps * (sr6 * sr6 - sr6);
}

__device__ float yukawa(float r) {
  return expf(-KAPPA * r) / r;
}

extern "C" __global__ void probe_energy(float* energy, const float* pos, const float* q, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  float x = pos[3 * i], y = pos[3 * i + 1], z = pos[3 * i + 2];
  float qi = q[i];
  float e = 0.0f;
  for (int s = 0; s < NSRC; ++s) {
    const float* ion = &ions[6 * s];
    float dx = x - ion[0], dy = y - ion[1], dz = z - ion[2];
    float r2 = dx * dx + dy * dy + dz * dz + SOFT2;
    if (r2 < RCUT * RCUT) {
      float shift = lj(RCUT * RCUT, ion[5], ion[4]) + qi * ion[3] * yukawa(RCUT);
      e += lj(r2, ion[5], ion[4]) + qi * ion[3] * yukawa(sqrtf(r2)) - shift;
    }
  }
  energy[i] = e;
}
