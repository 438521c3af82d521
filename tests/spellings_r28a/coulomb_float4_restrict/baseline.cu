// Softened Coulomb potential at each probe: float4 charges read through a __restrict__
// pointer, a float3 probe, the term in a helper, a macro softening, an early return.
#define SOFT2 0.01f

__device__ __forceinline__ float term(float3 p, float4 q) {
  const float dx = p.x - q.x, dy = p.y - q.y, dz = p.z - q.z;
  return q.w * rsqrtf(fmaf(dx, dx, fmaf(dy, dy, dz * dz)) + SOFT2);
}

extern "C" __global__ void coulomb_pot_tiles(float* __restrict__ out,
                                             const float* __restrict__ probe_data,
                                             const float* __restrict__ charge_data, int n,
                                             int m) {
  const float4* __restrict__ q = reinterpret_cast<const float4*>(charge_data);
  const int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i >= n) return;
  const float3 p = make_float3(probe_data[3 * i], probe_data[3 * i + 1], probe_data[3 * i + 2]);
  float acc = 0.0f;
  for (int c = 0; c < m; c++) acc += term(p, q[c]);
  out[i] = acc;
}
