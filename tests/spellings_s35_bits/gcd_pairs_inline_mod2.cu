// gcd_binary_pairs written inline in the kernel by another hand: one guarded item, the
// parity tested by `% 2` and `!(.. & 1u)`, halvings by `/= 2` and `= y / 2`, a `for` with
// no initializer stripping y, the zero inputs answered by `x | y`.
extern "C" __global__ void gcd_binary_pairs(unsigned int* g, int* rounds, const unsigned int* a,
                                            const unsigned int* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned int x = a[i];
    unsigned int y = b[i];
    int steps = 0;
    if (x == 0u || y == 0u) {
      g[i] = x | y;
    } else {
      int k = 0;
      while (!((x | y) & 1u)) {
        x /= 2;
        y = y >> 1;
        k++;
      }
      while (x % 2 == 0)
        x = x / 2;
      do {
        for (; 0 == (y & 1); )
          y /= 2u;
        if (x > y) {
          unsigned int t = y;
          y = x;
          x = t;
        }
        y -= x;
        steps += 1;
      } while (y);
      g[i] = x << k;
    }
    rounds[i] = steps;
  }
}
