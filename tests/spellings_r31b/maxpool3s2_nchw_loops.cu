// 3 x 3 max pooling at stride 2, no padding, over the planes of an NCHW float tensor:
// out[p][oy][ox] = max of in[p][2oy + ky][2ox + kx], ky, kx < 3. Nested loops over the
// window with an index macro, #ifndef block size, plane pointers, the work inside the test.
// Launch: grid = ((ho * wo + 127) / 128, planes), block = (128).

#ifndef THREADS
#define THREADS 128
#endif
#define K 3
#define S 2
#define AT(y, x) plane[(y) * w + (x)]

extern "C" __global__ void maxpool3s2_nchw(float* out, const float* in, int h, int w, int ho,
                                           int wo) {
  const float* plane = in + (size_t)blockIdx.y * h * w;
  float* dst = out + (size_t)blockIdx.y * ho * wo;
  int i = blockIdx.x * THREADS + threadIdx.x;
  if (i < ho * wo) {
    int oy = i / wo;
    int ox = i % wo;
    float m = AT(S * oy, S * ox);
    for (int ky = 0; ky < K; ++ky)
      for (int kx = 0; kx < K; ++kx)
        m = fmaxf(m, AT(S * oy + ky, S * ox + kx));
    dst[i] = m;
  }
}
