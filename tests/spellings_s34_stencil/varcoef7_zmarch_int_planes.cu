// varcoef7_zmarch respelled (session 34): an int index with the plane size a local `nxy`,
// the face coefficients named first, the registers declared two a line (plane 1 first), the
// interior first under `if (!wall)`. One explicit variable-coefficient diffusion step, 7
// points; a point on a face of the box copies u.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4), block = (32, 4).

extern "C" __global__ void varcoef7_zmarch(float *out, const float *u, const float *k, float dt,
                                           int nx, int ny, int nz) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  int j = threadIdx.y + blockIdx.y * blockDim.y;
  if (i >= nx || j >= ny) return;
  int nxy = nx * ny;
  int p = j * nx + i;
  bool wall = i == 0 || j == 0 || i == nx - 1 || j == ny - 1;
  float uc = u[p + nxy], kc = k[p + nxy];
  float ulo = u[p], klo = k[p];
  out[p] = ulo;
  for (int z = 1; z < nz - 1; ++z) {
    int q = p + z * nxy;
    float uhi = u[q + nxy];
    float khi = k[q + nxy];
    if (!wall) {
      float w = 0.5f * (kc + k[q - 1]), e = 0.5f * (kc + k[q + 1]);
      float s = 0.5f * (kc + k[q - nx]), n = 0.5f * (kc + k[q + nx]);
      float b = 0.5f * (kc + klo), t = 0.5f * (kc + khi);
      float flux = w * (u[q - 1] - uc);
      flux += e * (u[q + 1] - uc);
      flux += s * (u[q - nx] - uc);
      flux += n * (u[q + nx] - uc);
      flux += b * (ulo - uc);
      flux += t * (uhi - uc);
      out[q] = uc + dt * flux;
    } else {
      out[q] = uc;
    }
    ulo = uc;
    klo = kc;
    uc = uhi;
    kc = khi;
  }
  out[p + (nz - 1) * nxy] = uc;
}
