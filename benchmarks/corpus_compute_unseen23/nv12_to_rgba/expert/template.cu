// NV12 to RGBA8, BT.601 limited range in 8.8 fixed point: C = Y - 16, D = U - 128,
// E = V - 128, R = clamp((298 C + 409 E + 128) >> 8), G = clamp((298 C - 100 D - 208 E +
// 128) >> 8), B = clamp((298 C + 516 D + 128) >> 8), A = 255; luma rows and interleaved
// half-resolution U V rows of `pitch` bytes, rgba packed (w pixels a row).
// Expert parameterization (hand-written): BX x BY blocks, PX consecutive pixels a thread
// (PX = 2: one chroma pair for both; PX = 4: two pairs), VEC=1 vector accesses for a whole
// group: the PX luma bytes as one uchar2 / uchar4, the chroma pairs as one uchar2 / uchar4,
// the pixels stored as 8-byte uint2 pairs (aligned: the widths are even and the pitches
// multiples of 4, as NV12 frames are); a group cut by the row's end goes a pixel at a time.
// Launch: grid = (ceil(w / (BX * PX)), ceil(h / BY)), block = (BX, BY).
// Defaults: the kernel as written (32 x 8 blocks, one pixel a thread, byte loads).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef PX
#define PX 1
#endif
#ifndef VEC
#define VEC 0
#endif

static __device__ __forceinline__ unsigned char sat8(int v)
{
    return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

// one pixel from its luma byte and chroma pair, packed R | G << 8 | B << 16 | A << 24
static __device__ __forceinline__ unsigned convert(int y, int u, int v)
{
    const int d = u - 128, e = v - 128;
    const int base = 298 * (y - 16) + 128;
    const unsigned r = sat8((base + 409 * e) >> 8);
    const unsigned g = sat8((base - 100 * d - 208 * e) >> 8);
    const unsigned b = sat8((base + 516 * d) >> 8);
    return r | (g << 8) | (b << 16) | (255u << 24);
}

extern "C" __global__ void __launch_bounds__(BX * BY)
nv12_to_rgba(unsigned char *__restrict__ rgba, const unsigned char *__restrict__ luma,
             const unsigned char *__restrict__ chroma, int w, int h, int pitch)
{
    const int py = blockIdx.y * BY + threadIdx.y;
    const int x0 = (blockIdx.x * BX + threadIdx.x) * PX;
    if (py >= h || x0 >= w)
        return;
    const unsigned char *ys = luma + (size_t)py * pitch;
    const unsigned char *uv = chroma + (size_t)(py >> 1) * pitch;
    unsigned *out = reinterpret_cast<unsigned *>(rgba) + (size_t)py * w;

#if PX > 1
    if (x0 + PX <= w) {
        unsigned px[PX];
#if VEC && PX == 2
        const uchar2 yy = *reinterpret_cast<const uchar2 *>(ys + x0);
        const uchar2 c = *reinterpret_cast<const uchar2 *>(uv + x0);
        px[0] = convert(yy.x, c.x, c.y);
        px[1] = convert(yy.y, c.x, c.y);
#elif VEC && PX == 4
        const uchar4 yy = *reinterpret_cast<const uchar4 *>(ys + x0);
        const uchar4 c = *reinterpret_cast<const uchar4 *>(uv + x0);
        px[0] = convert(yy.x, c.x, c.y);
        px[1] = convert(yy.y, c.x, c.y);
        px[2] = convert(yy.z, c.z, c.w);
        px[3] = convert(yy.w, c.z, c.w);
#else
#pragma unroll
        for (int k = 0; k < PX; k += 2) {
            const int u = uv[x0 + k], v = uv[x0 + k + 1];
            px[k] = convert(ys[x0 + k], u, v);
            px[k + 1] = convert(ys[x0 + k + 1], u, v);
        }
#endif
#if VEC
#pragma unroll
        for (int k = 0; k < PX; k += 2) {
            uint2 pair;
            pair.x = px[k];
            pair.y = px[k + 1];
            *reinterpret_cast<uint2 *>(out + x0 + k) = pair;
        }
#else
#pragma unroll
        for (int k = 0; k < PX; ++k)
            out[x0 + k] = px[k];
#endif
        return;
    }
#endif
    for (int x = x0; x < min(x0 + PX, w); ++x) {
        const int cx = x & ~1;
        out[x] = convert(ys[x], uv[cx], uv[cx + 1]);
    }
}
