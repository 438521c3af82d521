// A 5 x 5 cross-correlation dilated by 2 in both directions of a stack of images, the
// outputs of the folder's launch ((H - 8) x (W - 8)): constexpr sizes, a 2-D __constant__
// filter, int offsets from an image pointer (`img = in + plane`), the body under an `if`
// instead of an early return, the filter's loops counting with `i++`.
constexpr int K = 5;
constexpr int DIL = 2;

__constant__ float taps[K][K];

extern "C" __global__ void dil2_conv5_valid(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int ow = W - (K - 1) * DIL;
    int oh = H - (K - 1) * DIL;
    if (x < ow && y < oh) {
        const float *img = in + (size_t)blockIdx.z * W * H;
        float acc = 0.0f;
        for (int i = 0; i < K; i++) {
            for (int j = 0; j < K; j++)
                acc += taps[i][j] * img[(y + DIL * i) * W + x + DIL * j];
        }
        out[(size_t)blockIdx.z * ow * oh + y * ow + x] = acc;
    }
}
