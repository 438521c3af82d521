// Per-chunk minimum and its position: each row of x [batch, n] is cut into chunks of 4096
// floats (the last may be short); chunk c of row b gives minval[b][c] and argmin[b][c],
// the smallest value and its index in the row (the first one where several tie).
// blockIdx.y is the row, blockIdx.x the chunk; a block of 256 threads walks its chunk with
// a pointer and a while loop, then merges the threads' pairs by a tree in shared memory.
// Launch: grid = ((n + 4095) / 4096, batch), block = (256).

#define CHUNK 4096
#define THREADS 256

struct MinAt {
  float v;
  int i;
};

__device__ __forceinline__ MinAt smaller(MinAt a, MinAt b) {
  return (b.v < a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

extern "C" __global__ void argmin_chunks(float* minval, int* argmin, const float* x, int n,
                                         int nchunks) {
  __shared__ float sv[THREADS];
  __shared__ int si[THREADS];
  const int row = blockIdx.y;
  const int start = blockIdx.x * CHUNK;
  const int stop = start + CHUNK < n ? start + CHUNK : n;
  const float* p = x + (size_t)row * n + start + threadIdx.x;
  const float* end = x + (size_t)row * n + stop;
  MinAt best = {3.402823466e38f, n};
  int i = start + threadIdx.x;
  while (p < end) {
    if (*p < best.v) {
      best.v = *p;
      best.i = i;
    }
    p += THREADS;
    i += THREADS;
  }
  sv[threadIdx.x] = best.v;
  si[threadIdx.x] = best.i;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      MinAt mine = {sv[threadIdx.x], si[threadIdx.x]};
      MinAt other = {sv[threadIdx.x + half], si[threadIdx.x + half]};
      mine = smaller(mine, other);
      sv[threadIdx.x] = mine.v;
      si[threadIdx.x] = mine.i;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    minval[(size_t)row * nchunks + blockIdx.x] = sv[0];
    argmin[(size_t)row * nchunks + blockIdx.x] = si[0];
  }
}
