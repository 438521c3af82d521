// varcoef7_zmarch respelled (session 34): a __device__ helper per face, the column's offset
// in a plane and the plane's size as size_t locals (no macro), registers named below / here
// / above. One explicit variable-coefficient diffusion step, 7 points; a point on a face of
// the box copies u.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4), block = (32, 4).

__device__ __forceinline__ float face_flux(float kc, float kn, float un, float uc) {
  return 0.5f * (kc + kn) * (un - uc);
}

extern "C" __global__ void varcoef7_zmarch(float *out, const float *u, const float *k, float dt,
                                           int nx, int ny, int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const bool edge = x == 0 || y == 0 || x == nx - 1 || y == ny - 1;
  const size_t plane = (size_t)nx * ny;
  const size_t col = (size_t)y * nx + x;

  float u_below = u[col];
  float k_below = k[col];
  out[col] = u_below;
  float u_here = u[col + plane];
  float k_here = k[col + plane];
  for (int z = 1; z < nz - 1; z++) {
    const size_t at = col + (size_t)z * plane;
    const float u_above = u[at + plane];
    const float k_above = k[at + plane];
    if (edge) {
      out[at] = u_here;
    } else {
      float flux = face_flux(k_here, k[at - 1], u[at - 1], u_here);
      flux += face_flux(k_here, k[at + 1], u[at + 1], u_here);
      flux += face_flux(k_here, k[at - nx], u[at - nx], u_here);
      flux += face_flux(k_here, k[at + nx], u[at + nx], u_here);
      flux += face_flux(k_here, k_below, u_below, u_here);
      flux += face_flux(k_here, k_above, u_above, u_here);
      out[at] = u_here + dt * flux;
    }
    u_below = u_here;
    u_here = u_above;
    k_below = k_here;
    k_here = k_above;
  }
  out[col + (size_t)(nz - 1) * plane] = u_here;
}
