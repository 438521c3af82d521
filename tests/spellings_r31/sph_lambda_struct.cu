/* All-pairs SPH density with the cubic-spline kernel (support 2h), the particles as
 * float4 (x, y, z, m). A 256-particle tile is staged in shared memory per step. */

#define TILE_SIZE 256

struct Particle {
  float x, y, z, m;
};

extern "C" __global__ void sph_density_tiles(float *rho, const float *pos_mass, int n, float h)
{
  __shared__ float4 cache[TILE_SIZE];
  const float4 *pm = (const float4 *)pos_mass;
  int tid = threadIdx.x;
  int gid = blockIdx.x * TILE_SIZE + tid;

  Particle me = {0.0f, 0.0f, 0.0f, 0.0f};
  if (gid < n) {
    float4 v = pm[gid];
    me.x = v.x;
    me.y = v.y;
    me.z = v.z;
    me.m = v.w;
  }

  auto kernelW = [&](float r) -> float {
    float q = r / h;
    float sigma = 1.0f / (3.14159265358979f * h * h * h);
    float w = 0.0f;
    if (q < 1.0f) {
      w = sigma * (1.0f - 1.5f * q * q + 0.75f * q * q * q);
    } else if (q < 2.0f) {
      float t = 2.0f - q;
      w = sigma * 0.25f * t * t * t;
    }
    return w;
  };

  float sum = 0.0f;
  int start = 0;
  while (start < n) {
    if (start + tid < n) {
      cache[tid] = pm[start + tid];
    } else {
      cache[tid] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    __syncthreads();
    int count = min(TILE_SIZE, n - start);
    for (int k = 0; k < count; k++) {
      float dx = me.x - cache[k].x;
      float dy = me.y - cache[k].y;
      float dz = me.z - cache[k].z;
      sum += cache[k].w * kernelW(sqrtf(dx * dx + dy * dy + dz * dz));
    }
    __syncthreads();
    start += TILE_SIZE;
  }

  if (gid < n) {
    rho[gid] = sum;
  }
}
