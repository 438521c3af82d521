// A zero-padded 3 x 3 filter of a batch of planes (plane on blockIdx.z), the plane offset
// computed after the early return and added inside the tap's bounds test.
__constant__ float c_weights[5][5];

extern "C" __global__ void conv5x5_zpad_batch(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    int plane = blockIdx.z * H * W;
    float acc = 0.0f;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            int sy = y + i - 1, sx = x + j - 1;
            if (sy >= 0 && sy < H && sx >= 0 && sx < W)
                acc += c_weights[i][j] * in[plane + sy * W + sx];
        }
    out[plane + y * W + x] = acc;
}
