// Half-resolution 3x3 filter pass: every output texel samples the 3x3 neighbourhood around
// source texel (2x, 2y) (zero outside the image), weights from constant memory, then a
// contrast curve 1.25 * v - 0.1 saturated to [0, 1].
// src is H x W, dst is (H / 2) x (W / 2), both row-major floats.
// Launch: grid = ((W / 2 + 15) / 16, (H / 2 + 15) / 16), block = (16, 16).

__constant__ float c_weights[9];

extern "C" __global__ void conv3x3_s2_sat(float* dst, const float* src, int W, int H)
{
    const int2 o = make_int2(blockIdx.x * blockDim.x + threadIdx.x,
                             blockIdx.y * blockDim.y + threadIdx.y);
    const int2 dims = make_int2(W / 2, H / 2);
    if (o.x >= dims.x || o.y >= dims.y) return;

    const int2 c = make_int2(2 * o.x, 2 * o.y);
    float acc = 0.0f;
    for (int dy = -1; dy <= 1; ++dy) {
        const int y = c.y + dy;
        if (y < 0 || y >= H) continue;
        const float* line = src + y * W;
        for (int dx = -1; dx <= 1; ++dx) {
            const int x = c.x + dx;
            if (x < 0 || x >= W) continue;
            acc = fmaf(line[x], c_weights[(dy + 1) * 3 + (dx + 1)], acc);
        }
    }
    dst[o.y * dims.x + o.x] = __saturatef(fmaf(acc, 1.25f, -0.1f));
}
