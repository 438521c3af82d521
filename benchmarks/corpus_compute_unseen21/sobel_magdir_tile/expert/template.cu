// Sobel gradient magnitude and direction of a grey image (h x w, row-major, whole-number
// pixel values as floats), edges replicated; mag = sqrt(gx^2 + gy^2), dir = atan2(gy, gx).
// Expert parameterization (hand-written): a BX x (BY * RY) block tile, RY rows a thread
// (strided by BY), SMEM=1 staging the tile and its one-pixel apron in shared memory (PAD
// floats of padding a row) or SMEM=0 reading the nine taps from global memory (read-only
// cache) with clamped coordinates.
// Launch: grid = (ceil(w / BX), ceil(h / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (16 x 16 blocks, one pixel a thread, staged).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef RY
#define RY 1
#endif
#ifndef SMEM
#define SMEM 1
#endif
#ifndef PAD
#define PAD 0
#endif
#define TY (BY * RY)

static __device__ __forceinline__ void sobel_out(float *mag, float *dir, int at, float a,
                                                 float b, float c, float d, float f, float g,
                                                 float hh, float k)
{
    // a b c / d . f / g hh k: the 3 x 3 neighbourhood, rows y - 1, y, y + 1
    const float gx = (c + 2.0f * f + k) - (a + 2.0f * d + g);
    const float gy = (g + 2.0f * hh + k) - (a + 2.0f * b + c);
    mag[at] = sqrtf(gx * gx + gy * gy);
    dir[at] = atan2f(gy, gx);
}

extern "C" __global__ void __launch_bounds__(BX * BY)
sobel_magdir_tile(float *__restrict__ mag, float *__restrict__ dir,
                  const float *__restrict__ img, int w, int h)
{
    const int x = blockIdx.x * BX + threadIdx.x;
    const int y0 = blockIdx.y * TY + threadIdx.y;
#if SMEM
    __shared__ float tile[TY + 2][BX + 2 + PAD];
    for (int ty = threadIdx.y; ty < TY + 2; ty += BY) {
        const int gy = min(max((int)blockIdx.y * TY + ty - 1, 0), h - 1);
        for (int tx = threadIdx.x; tx < BX + 2; tx += BX) {
            const int gx = min(max((int)blockIdx.x * BX + tx - 1, 0), w - 1);
            tile[ty][tx] = img[(size_t)gy * w + gx];
        }
    }
    __syncthreads();
    if (x >= w)
        return;
    const int cx = threadIdx.x + 1;
#pragma unroll
    for (int r = 0; r < RY; ++r) {
        const int y = y0 + r * BY;
        if (y >= h)
            break;
        const int cy = threadIdx.y + r * BY + 1;
        sobel_out(mag, dir, y * w + x, tile[cy - 1][cx - 1], tile[cy - 1][cx],
                  tile[cy - 1][cx + 1], tile[cy][cx - 1], tile[cy][cx + 1],
                  tile[cy + 1][cx - 1], tile[cy + 1][cx], tile[cy + 1][cx + 1]);
    }
#else
    if (x >= w)
        return;
    const int xl = max(x - 1, 0), xr = min(x + 1, w - 1);
#pragma unroll
    for (int r = 0; r < RY; ++r) {
        const int y = y0 + r * BY;
        if (y >= h)
            break;
        const float *up = img + (size_t)max(y - 1, 0) * w;
        const float *mid = img + (size_t)y * w;
        const float *dn = img + (size_t)min(y + 1, h - 1) * w;
        sobel_out(mag, dir, y * w + x, __ldg(up + xl), __ldg(up + x), __ldg(up + xr),
                  __ldg(mid + xl), __ldg(mid + xr), __ldg(dn + xl), __ldg(dn + x),
                  __ldg(dn + xr));
    }
#endif
}
