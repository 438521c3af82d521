// Sums of variable-length segments of one long array (per-sentence token scores, per-graph
// node features, a ragged batch): sums[s] = values[offsets[s]] + ... + values[offsets[s+1] - 1],
// 0 for an empty segment. A warp per segment: its lanes walk the segment 32 apart through a
// pointer, then fold their partial sums with xor shuffles in a do-while; 8 warps a block.
// Launch: grid = (segments + 7) / 8, block = 256.
#define WARPS_PER_BLOCK 8

extern "C" __global__ void segment_sums(float* sums, const float* values, const int* offsets,
                                        int segments) {
  const int lane = threadIdx.x % 32;
  const int seg = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
  if (seg >= segments) return;  // the whole warp leaves together
  const float* p = values + offsets[seg] + lane;
  const float* end = values + offsets[seg + 1];
  float s = 0.0f;
  for (; p < end; p += 32) s += *p;
  int step = 16;
  do {
    s += __shfl_xor_sync(0xffffffffu, s, step);
    step /= 2;
  } while (step > 0);
  if (lane == 0) sums[seg] = s;
}
