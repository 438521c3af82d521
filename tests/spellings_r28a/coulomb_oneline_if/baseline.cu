// Softened Coulomb potential at each probe, a third hand: the charges read as plain floats
// handed to a helper by value, the walk's body one brace-less `if` (charges of zero
// skipped), the probe's index named first, the work under an if-block.
__device__ __forceinline__ float pair_term(float px, float py, float pz, float cx, float cy,
                                           float cz, float q) {
  const float dx = px - cx, dy = py - cy, dz = pz - cz;
  return q * rsqrtf(dx * dx + dy * dy + dz * dz + 0.01f);
}

extern "C" __global__ void coulomb_pot_tiles(float* out, const float* probe_data,
                                             const float* charge_data, int n, int m) {
  const int probe = blockIdx.x * blockDim.x + threadIdx.x;
  if (probe < n) {
    const float px = probe_data[3 * probe], py = probe_data[3 * probe + 1];
    const float pz = probe_data[3 * probe + 2];
    float phi = 0.0f;
    for (int j = 0; j < m; ++j)
      if (charge_data[4 * j + 3] != 0.0f)
        phi += pair_term(px, py, pz, charge_data[4 * j], charge_data[4 * j + 1],
                         charge_data[4 * j + 2], charge_data[4 * j + 3]);
    out[probe] = phi;
  }
}
