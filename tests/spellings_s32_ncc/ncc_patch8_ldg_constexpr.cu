// ncc_patch8 respelled (session 32): constexpr sizes, the template read through __ldg at
// tmpl[(dy) * PATCH + dx], its mean and energy from one helper, the tile loaded by one
// index loop per row with an explicit bounds test.
constexpr int PATCH = 8;
constexpr int APRON = PATCH - 1;
constexpr int TX = 32;
constexpr int TY = 8;

__device__ __forceinline__ float tile_at(const float *img, int gy, int gx, int W, int H)
{
    if (gy < H && gx < W)
        return img[(size_t)gy * W + gx];
    return 0.0f;
}

extern "C" __global__ void ncc_patch8(float *out, const float *img, const float *__restrict__ tmpl,
                                      int W, int H)
{
    __shared__ float tile[TY + APRON][TX + APRON];
    const int outW = W - APRON;
    const int outH = H - APRON;
    const int bx = blockIdx.x * TX;
    const int by = blockIdx.y * TY;

    for (int r = threadIdx.y; r < TY + APRON; r += TY)
        for (int c = threadIdx.x; c < TX + APRON; c += TX)
            tile[r][c] = tile_at(img, by + r, bx + c, W, H);
    __syncthreads();

    const int x = bx + threadIdx.x;
    const int y = by + threadIdx.y;
    if (x >= outW || y >= outH)
        return;

    float mean = 0.0f;
    for (int i = 0; i < PATCH * PATCH; i++)
        mean += __ldg(&tmpl[i]);
    mean *= 1.0f / (PATCH * PATCH);
    float energy = 0.0f;
    for (int i = 0; i < PATCH * PATCH; i++) {
        const float d = __ldg(&tmpl[i]) - mean;
        energy += d * d;
    }

    float s1 = 0.0f, s2 = 0.0f, st = 0.0f;
    for (int dy = 0; dy < PATCH; dy++) {
        for (int dx = 0; dx < PATCH; dx++) {
            const float v = tile[threadIdx.y + dy][threadIdx.x + dx];
            s1 += v;
            s2 += v * v;
            st += v * (__ldg(&tmpl[(dy) * PATCH + dx]) - mean);
        }
    }
    const float var = s2 - s1 * s1 * (1.0f / (PATCH * PATCH));
    out[(size_t)y * outW + x] = st / sqrtf(var * energy);
}
