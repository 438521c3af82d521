// out[i, :] = table[ids[i], :], one block a row of d floats (d a multiple of 4), float4
// loads and stores, the block striding over the row's vectors.
// Launch: grid = n, block = 64.
extern "C" __global__ void s23b_gather_rows_float4(float* out, const float* table,
                                                   const int* ids, int d) {
  const int row = blockIdx.x;
  const float4* src = reinterpret_cast<const float4*>(table + (size_t)ids[row] * d);
  float4* dst = reinterpret_cast<float4*>(out + (size_t)row * d);
  for (int j = threadIdx.x; j < d / 4; j += blockDim.x) dst[j] = src[j];
}
