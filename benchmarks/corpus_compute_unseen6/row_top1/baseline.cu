// Top-1 of every row of scores [rows, cols] (a greedy decoder's pick): best_val[r] is the
// row's largest value and best_idx[r] its column, the smallest column on ties. A block of
// 128 threads per row: each thread scans the columns tid, tid + 128, ..., keeping its best
// (value, column); the 128 pairs are then merged in a shared-memory tree.
// Launch: grid = rows, block = 128.
#define ROW_THREADS 128

// true when (v, i) beats (bv, bi): larger value, or the same value at a smaller column
__device__ __forceinline__ bool beats(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

extern "C" __global__ void row_top1(int* best_idx, float* best_val, const float* scores,
                                    int rows, int cols) {
  __shared__ float vals[ROW_THREADS];
  __shared__ int idxs[ROW_THREADS];
  const int r = blockIdx.x;
  const int t = threadIdx.x;
  const float* row = scores + (size_t)r * cols;
  float bv = -INFINITY;
  int bi = cols;  // no column yet: loses every tie
  for (int j = t; j < cols; j += ROW_THREADS) {
    const float v = row[j];
    if (beats(v, j, bv, bi)) {
      bv = v;
      bi = j;
    }
  }
  vals[t] = bv;
  idxs[t] = bi;
  __syncthreads();
  for (int half = ROW_THREADS / 2; half > 0; half >>= 1) {
    if (t < half && beats(vals[t + half], idxs[t + half], vals[t], idxs[t])) {
      vals[t] = vals[t + half];
      idxs[t] = idxs[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    best_idx[r] = idxs[0];
    best_val[r] = vals[0];
  }
}
