// Eigenvalues of many symmetric 3 x 3 matrices by cyclic Jacobi rotations. Matrix e is given
// by its upper triangle m[e] = (a00, a01, a02, a11, a12, a22); w[e] gets its three
// eigenvalues in ascending order. A small struct holds the matrix and rotates one pair
// (p, q) to zero; a rotation whose off-diagonal entry is already negligible against its
// diagonal is skipped, so later sweeps mostly skip. One matrix per thread.
// Launch: grid = (n + 255) / 256, block = 256.

#define SWEEPS 6

struct Sym3 {
  float a[3][3];

  __device__ void rotate(int p, int q) {
    const float apq = a[p][q];
    if (fabsf(apq) <= 1e-12f * (fabsf(a[p][p]) + fabsf(a[q][q]))) {
      a[p][q] = a[q][p] = 0.0f;
      return;
    }
    const float theta = (a[q][q] - a[p][p]) / (2.0f * apq);
    const float t = copysignf(1.0f, theta) / (fabsf(theta) + sqrtf(theta * theta + 1.0f));
    const float c = 1.0f / sqrtf(t * t + 1.0f);
    const float s = t * c;
    a[p][p] -= t * apq;
    a[q][q] += t * apq;
    a[p][q] = a[q][p] = 0.0f;
    const int r = 3 - p - q;  // the third row and column
    const float arp = a[r][p], arq = a[r][q];
    a[r][p] = a[p][r] = c * arp - s * arq;
    a[r][q] = a[q][r] = s * arp + c * arq;
  }
};

__device__ inline void order3(float& x, float& y, float& z) {
  float u;
  if (x > y) { u = x; x = y; y = u; }
  if (y > z) { u = y; y = z; z = u; }
  if (x > y) { u = x; x = y; y = u; }
}

extern "C" __global__ void sym3_jacobi(float* w, const float* m, int n) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n) return;
  const float* src = m + 6 * e;
  Sym3 A;
  A.a[0][0] = src[0];
  A.a[0][1] = A.a[1][0] = src[1];
  A.a[0][2] = A.a[2][0] = src[2];
  A.a[1][1] = src[3];
  A.a[1][2] = A.a[2][1] = src[4];
  A.a[2][2] = src[5];
  for (int sweep = 0; sweep < SWEEPS; ++sweep) {
#pragma unroll
    for (int pair = 0; pair < 3; ++pair) A.rotate(pair == 2 ? 1 : 0, pair == 0 ? 1 : 2);
  }
  float l0 = A.a[0][0], l1 = A.a[1][1], l2 = A.a[2][2];
  order3(l0, l1, l2);
  w[3 * e] = l0;
  w[3 * e + 1] = l1;
  w[3 * e + 2] = l2;
}
