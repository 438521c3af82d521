// ncc_patch8 respelled (session 32): #ifndef sizes, the template's mean and energy from a
// helper writing through references, the template read in the window loop at
// t[ty * PATCH + tx] with the window row read through a row of the tile.
#ifndef PATCH
#define PATCH 8
#endif
#define HALO (PATCH - 1)
#define BW 32
#define BH 8

__device__ void template_stats(const float *t, float &mean, float &energy)
{
    float s = 0.0f;
    for (int k = 0; k < PATCH * PATCH; ++k)
        s += t[k];
    mean = s * (1.0f / (PATCH * PATCH));
    float e = 0.0f;
    for (int k = 0; k < PATCH * PATCH; ++k) {
        const float d = t[k] - mean;
        e += d * d;
    }
    energy = e;
}

extern "C" __global__ void ncc_patch8(float *out, const float *img, const float *t, int W, int H)
{
    __shared__ float sm[BH + HALO][BW + HALO];
    const int ox = blockIdx.x * BW, oy = blockIdx.y * BH;
    for (int r = threadIdx.y; r < BH + HALO; r += BH) {
        for (int c = threadIdx.x; c < BW + HALO; c += BW) {
            const int gy = oy + r, gx = ox + c;
            sm[r][c] = (gy < H && gx < W) ? img[(size_t)gy * W + gx] : 0.0f;
        }
    }
    __syncthreads();

    const int x = ox + threadIdx.x, y = oy + threadIdx.y;
    if (x >= W - HALO || y >= H - HALO)
        return;
    float mean, energy;
    template_stats(t, mean, energy);

    float s1 = 0.0f, s2 = 0.0f, st = 0.0f;
    for (int ty = 0; ty < PATCH; ++ty) {
        for (int tx = 0; tx < PATCH; ++tx) {
            const float v = sm[threadIdx.y + ty][threadIdx.x + tx];
            s1 += v;
            s2 += v * v;
            st += v * (t[ty * PATCH + tx] - mean);
        }
    }
    const float var = s2 - s1 * s1 * (1.0f / (PATCH * PATCH));
    out[(size_t)y * (W - HALO) + x] = st / sqrtf(var * energy);
}
