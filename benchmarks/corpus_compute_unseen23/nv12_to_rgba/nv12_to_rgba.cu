// NV12 to RGBA8, BT.601 limited range in 8.8 fixed point. NV12: a full-resolution luma plane
// (h rows of `pitch` bytes, w used) and a half-resolution chroma plane (ceil(h / 2) rows of
// `pitch` bytes, interleaved U V, one pair for each 2 x 2 block of pixels). For a pixel:
//   C = Y - 16, D = U - 128, E = V - 128,
//   R = clamp((298 C + 409 E + 128) >> 8), G = clamp((298 C - 100 D - 208 E + 128) >> 8),
//   B = clamp((298 C + 516 D + 128) >> 8), A = 255 (clamp to 0..255).
// rgba is packed: w uchar4 a row, no pitch. One pixel a thread.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8), block = (32, 8).

static __device__ __forceinline__ unsigned char sat8(int v)
{
    return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

extern "C" __global__ void nv12_to_rgba(unsigned char *rgba, const unsigned char *luma,
                                        const unsigned char *chroma, int w, int h, int pitch)
{
    unsigned px = blockIdx.x * 32u + threadIdx.x;
    unsigned py = blockIdx.y * 8u + threadIdx.y;
    if (px >= (unsigned)w || py >= (unsigned)h)
        return;

    const unsigned char *ys = luma + py * pitch;
    const unsigned char *uv = chroma + (py >> 1) * pitch + (px & ~1u);

    int c = (int)ys[px] - 16;
    int d = (int)uv[0] - 128;
    int e = (int)uv[1] - 128;
    int base = 298 * c + 128;

    uchar4 pixel;
    pixel.x = sat8((base + 409 * e) >> 8);
    pixel.y = sat8((base - 100 * d - 208 * e) >> 8);
    pixel.z = sat8((base + 516 * d) >> 8);
    pixel.w = 255;
    ((uchar4 *)rgba)[py * w + px] = pixel;
}
