// Scaled softmax over each row of scores s [batch, rows, cols] with a key-padding mask:
// in batch b only the first lens[b] columns take part, y = softmax(scale * s) over them and
// 0 in the masked columns (a batch with lens[b] == 0 gets a zero row). blockIdx.y is the
// batch, blockIdx.x the row; a block of 256 threads takes the row's max, its sum of
// exponentials and then writes it, each reduction a tree in shared memory.
// Launch: grid = (rows, batch), block = (256).

#define BLOCK 256
#define LOWEST (-3.402823466e38f)

struct RowView {
  const float* in;
  float* out;
  int len, cols;
};

__device__ float block_reduce(float v, float* buf, bool take_max) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int half = BLOCK / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      const float other = buf[threadIdx.x + half];
      buf[threadIdx.x] = take_max ? fmaxf(buf[threadIdx.x], other) : buf[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const float total = buf[0];
  __syncthreads();
  return total;
}

extern "C" __global__ void softmax_lenmask(float* y, const float* s, const int* lens,
                                           float scale, int rows, int cols) {
  __shared__ float buf[BLOCK];
  const int b = blockIdx.y;
  const size_t base = ((size_t)b * rows + blockIdx.x) * cols;
  RowView row = {s + base, y + base, lens[b] < cols ? lens[b] : cols, cols};

  float m = LOWEST;
  for (int c = threadIdx.x; c < row.len; c += BLOCK) m = fmaxf(m, row.in[c] * scale);
  m = block_reduce(m, buf, true);

  float sum = 0.0f;
  for (int c = threadIdx.x; c < row.len; c += BLOCK) sum += expf(row.in[c] * scale - m);
  sum = block_reduce(sum, buf, false);

  const float inv = row.len > 0 ? 1.0f / sum : 0.0f;
  for (int c = threadIdx.x; c < row.cols; c += BLOCK)
    row.out[c] = c < row.len ? expf(row.in[c] * scale - m) * inv : 0.0f;
}
