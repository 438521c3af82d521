// Half-resolution 3x3 filter pass (zero outside the image, weights in __constant__), then
// 1.25 * v - 0.1 saturated to [0, 1]. Graphics hand, coordinates set field by field: int2
// locals assigned one component at a time, the taps counted by 0..2 offsets, an early
// return guard.

__constant__ float c_weights[9];

extern "C" __global__ void conv3x3_s2_sat(float* dst, const float* src, int W, int H)
{
    int2 o;
    o.x = blockIdx.x * blockDim.x + threadIdx.x;
    o.y = blockIdx.y * blockDim.y + threadIdx.y;
    int2 half;
    half.x = W / 2;
    half.y = H / 2;
    if (o.x >= half.x || o.y >= half.y) return;

    int2 s;
    s.x = 2 * o.x - 1;
    s.y = 2 * o.y - 1;
    float acc = 0.0f;
    for (int ky = 0; ky < 3; ++ky) {
        const int y = s.y + ky;
        if (y < 0 || y >= H) continue;
        for (int kx = 0; kx < 3; ++kx) {
            const int x = s.x + kx;
            if (x < 0 || x >= W) continue;
            acc = fmaf(src[y * W + x], c_weights[ky * 3 + kx], acc);
        }
    }
    dst[o.y * half.x + o.x] = __saturatef(fmaf(acc, 1.25f, -0.1f));
}
