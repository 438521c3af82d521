// HOG cell histograms (Dalal-Triggs): for every 8 x 8 cell of a grey image (h x w,
// row-major, 0..255 as floats; the last cell row and column may be partial), the 9-bin
// histogram of unsigned gradient orientation (0..180 degrees, 20 degrees a bin, bin centres
// at 10, 30, ..., 170), each pixel voting its gradient magnitude into the two nearest bins
// by linear interpolation (bins wrap: 180 is 0). Gradients by centred differences [-1 0 1],
// edges replicated:
//   gx = I(y, x+1) - I(y, x-1), gy = I(y+1, x) - I(y-1, x),
//   mag = sqrt(gx^2 + gy^2), ang = atan2(gy, gx) in degrees folded into [0, 180].
// hist[cy][cx][b], cells (ceil(h / 8)) x (ceil(w / 8)). One cell per block, one pixel per
// thread, the votes summed with shared-memory atomics.
// Launch: grid = ((w + 7) / 8, (h + 7) / 8), block = (8, 8).

#define CELL 8
#define NBINS 9

extern "C" __global__ void hog9_cells(float* hist, const float* img, int w, int h)
{
    __shared__ float cellHist[NBINS];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * CELL + tx;
    const int x = blockIdx.x * CELL + tx;
    const int y = blockIdx.y * CELL + ty;

    if (tid < NBINS)
        cellHist[tid] = 0.0f;
    __syncthreads();

    if (x < w && y < h) {
        const float* row = img + y * w;
        const float* up = img + max(y - 1, 0) * w;
        const float* down = img + min(y + 1, h - 1) * w;
        float gx = row[min(x + 1, w - 1)] - row[max(x - 1, 0)];
        float gy = down[x] - up[x];
        float mag = sqrtf(gx * gx + gy * gy);
        float ang = atan2f(gy, gx) * 57.29577951308232f;
        if (ang < 0.0f)
            ang += 180.0f;
        float pos = ang * (1.0f / 20.0f) - 0.5f;
        float fb = floorf(pos);
        float frac = pos - fb;
        int b0 = (int)fb;
        int b1 = b0 + 1;
        if (b0 < 0)
            b0 += NBINS;
        if (b1 >= NBINS)
            b1 -= NBINS;
        atomicAdd(&cellHist[b0], mag * (1.0f - frac));
        atomicAdd(&cellHist[b1], mag * frac);
    }
    __syncthreads();

    if (tid < NBINS)
        hist[(blockIdx.y * gridDim.x + blockIdx.x) * NBINS + tid] = cellHist[tid];
}
