// HOG cell histograms: for every 8 x 8 cell of a grey image (h x w, row-major; partial
// cells at the right and bottom), the 9-bin unsigned-orientation histogram (20 degrees a
// bin, centres at 10..170, wrapping), each pixel voting its gradient magnitude into the two
// nearest bins by linear interpolation. Centred-difference gradients, edges replicated.
// Expert parameterization (hand-written): a block of CX x CY cells, (8 CX) x (8 CY / PY)
// threads, PY pixel rows a thread (strided by 8 / PY within its cell), and the votes summed
// by REDUCE: 0 a shared atomic a vote (as written), 1 nine private bins a thread then nine
// shared atomics, 2 private bins summed over a warp's lanes of the same cell by xor
// shuffles, then one shared atomic a bin from each cell's leading lane.
// Launch: grid = (ceil(w / (8 CX)), ceil(h / (8 CY))), block = (8 CX, 8 CY / PY).
// Defaults: the kernel as written (one cell a block, one pixel a thread, atomics a vote).

#ifndef CX
#define CX 1
#endif
#ifndef CY
#define CY 1
#endif
#ifndef PY
#define PY 1
#endif
#ifndef REDUCE
#define REDUCE 0
#endif
#define CELL 8
#define NBINS 9
#define BX (CELL * CX)
#define BY (CELL * CY / PY)
#define RPC (CELL / PY)
#define NTHREADS (BX * BY)
#define NCELLS (CX * CY)
// the lanes of a warp that share a cell: bits 0..2 (x in the cell) and the row bits below
// BX * RPC (rows of the same cell), up to the warp's 32
#define SPAN (BX * RPC < 32 ? BX * RPC : 32)
#define HI_MASK ((SPAN - 1) & ~(BX - 1))

struct HogVote {
    int b0, b1;
    float v0, v1;
};

static __device__ __forceinline__ HogVote hogVote(const float* img, int w, int h, int x,
                                                  int y)
{
    const float* row = img + (size_t)y * w;
    const float* up = img + (size_t)max(y - 1, 0) * w;
    const float* down = img + (size_t)min(y + 1, h - 1) * w;
    const float gx = __ldg(row + min(x + 1, w - 1)) - __ldg(row + max(x - 1, 0));
    const float gy = __ldg(down + x) - __ldg(up + x);
    const float mag = sqrtf(gx * gx + gy * gy);
    float ang = atan2f(gy, gx) * 57.29577951308232f;
    if (ang < 0.0f)
        ang += 180.0f;
    const float pos = ang * (1.0f / 20.0f) - 0.5f;
    const float fb = floorf(pos);
    const float frac = pos - fb;
    HogVote v;
    v.b0 = (int)fb;
    v.b1 = v.b0 + 1;
    if (v.b0 < 0)
        v.b0 += NBINS;
    if (v.b1 >= NBINS)
        v.b1 -= NBINS;
    v.v0 = mag * (1.0f - frac);
    v.v1 = mag * frac;
    return v;
}

extern "C" __global__ void __launch_bounds__(NTHREADS)
hog9_cells(float* __restrict__ hist, const float* __restrict__ img, int w, int h)
{
    __shared__ float cellHist[NCELLS * NBINS];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * BX + tx;
    const int cxl = tx / CELL, cyl = ty / RPC;
    const int x = blockIdx.x * BX + tx;
    const int yFirst = blockIdx.y * (CELL * CY) + cyl * CELL + ty % RPC;
    float* mine = cellHist + (cyl * CX + cxl) * NBINS;

    for (int e = tid; e < NCELLS * NBINS; e += NTHREADS)
        cellHist[e] = 0.0f;
    __syncthreads();

#if REDUCE == 0
#pragma unroll
    for (int k = 0; k < PY; ++k) {
        const int y = yFirst + k * RPC;
        if (x < w && y < h) {
            const HogVote v = hogVote(img, w, h, x, y);
            atomicAdd(&mine[v.b0], v.v0);
            atomicAdd(&mine[v.b1], v.v1);
        }
    }
#else
    float acc[NBINS];
#pragma unroll
    for (int b = 0; b < NBINS; ++b)
        acc[b] = 0.0f;
#pragma unroll
    for (int k = 0; k < PY; ++k) {
        const int y = yFirst + k * RPC;
        if (x < w && y < h) {
            const HogVote v = hogVote(img, w, h, x, y);
#pragma unroll
            for (int b = 0; b < NBINS; ++b)
                acc[b] += (b == v.b0 ? v.v0 : 0.0f) + (b == v.b1 ? v.v1 : 0.0f);
        }
    }
#if REDUCE == 2
    const int lane = tid & 31;
#pragma unroll
    for (int b = 0; b < NBINS; ++b) {
#pragma unroll
        for (int m = 1; m < CELL; m <<= 1)
            acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], m);
#pragma unroll
        for (int m = BX; m < SPAN; m <<= 1)
            acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], m);
    }
    if ((lane & (CELL - 1)) == 0 && (lane & HI_MASK) == 0)
#endif
    {
#pragma unroll
        for (int b = 0; b < NBINS; ++b)
            atomicAdd(&mine[b], acc[b]);
    }
#endif
    __syncthreads();

    const int cw = (w + CELL - 1) / CELL, ch = (h + CELL - 1) / CELL;
    for (int e = tid; e < NCELLS * NBINS; e += NTHREADS) {
        const int cell = e / NBINS, b = e % NBINS;
        const int gcx = blockIdx.x * CX + cell % CX, gcy = blockIdx.y * CY + cell / CX;
        if (gcx < cw && gcy < ch)
            hist[((size_t)gcy * cw + gcx) * NBINS + b] = cellHist[e];
    }
}
