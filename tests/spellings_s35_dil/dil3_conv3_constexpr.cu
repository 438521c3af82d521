// A 3 x 3 cross-correlation at dilation 3 (footprint 7 x 7) of a stack of images, the
// outputs of the folder's launch ((H - 8) x (W - 8)): constexpr sizes, int indices, the
// image found by 2-D indexing, an if around the work, taps[K * i + j] of the 25.
constexpr int K = 3;
constexpr int D = 3;

__constant__ float taps[25];

extern "C" __global__ void dil2_conv5_valid(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int outW = W - 8;
    int outH = H - 8;
    int img = blockIdx.z;
    if (x < outW && y < outH) {
        float acc = 0.0f;
        for (int i = 0; i < K; i++) {
            for (int j = 0; j < K; j++) {
                acc += taps[K * i + j] * in[(img * H + y + D * i) * W + x + D * j];
            }
        }
        out[(img * outH + y) * outW + x] = acc;
    }
}
