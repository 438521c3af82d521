// Bicubic Bezier patches sampled on a res x res grid of (u, v) = (col, row) / (res - 1):
// S = sum_{i,j} B_i(u) B_j(v) P[i][j], N = normalize(dS/du x dS/dv); 8 patches of 16
// control points in __constant__ memory (point (i, j) of a patch at (4 i + j) * 3).
// Expert parameterization (hand-written): THREADS a block, ITEMS consecutive samples of one
// row a thread (v and its basis computed once), REUSE=1 the patch contracted with the v
// basis once a thread (four points of the v-curve and four of its derivative) so that each
// sample costs three 4-term sums instead of 16-term ones, RSQ=1 the normal scaled by rsqrtf
// (2 ulps) instead of a divide by sqrtf.
// Launch: grid = (ceil(res * ceil(res / ITEMS) / THREADS), 8), block = THREADS.
// Defaults: the kernel as written (128 threads, one sample a thread, 16-term sums).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef REUSE
#define REUSE 0
#endif
#ifndef RSQ
#define RSQ 0
#endif
#define NUM_PATCHES 8

__constant__ float ctrl[NUM_PATCHES * 48];

static __device__ __forceinline__ void bernstein3(float t, float b[4], float db[4])
{
    const float s = 1.0f - t;
    b[0] = s * s * s;
    b[1] = 3.0f * t * s * s;
    b[2] = 3.0f * t * t * s;
    b[3] = t * t * t;
    db[0] = -3.0f * s * s;
    db[1] = 3.0f * s * s - 6.0f * t * s;
    db[2] = 6.0f * t * s - 3.0f * t * t;
    db[3] = 3.0f * t * t;
}

extern "C" __global__ void __launch_bounds__(THREADS)
bezier_patch_eval(float* __restrict__ pos, float* __restrict__ nrm, int res)
{
    const int patch = blockIdx.y;
    const int per_row = (res + ITEMS - 1) / ITEMS;  // thread units a row
    const int unit = blockIdx.x * THREADS + threadIdx.x;
    if (unit >= res * per_row)
        return;
    const int row = unit / per_row;
    const int col0 = (unit - row * per_row) * ITEMS;
    const float span = (float)(res - 1);
    const float v = (float)row / span;
    float bv[4], dbv[4];
    bernstein3(v, bv, dbv);
    const float* P = ctrl + patch * 48;

#if REUSE
    // the v-curve's points C[i] = sum_j B_j(v) P[i][j] and its v-derivative's D[i]
    float C[4][3], D[4][3];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            float cs = 0.0f, ds = 0.0f;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float p = P[(4 * i + j) * 3 + c];
                cs += bv[j] * p;
                ds += dbv[j] * p;
            }
            C[i][c] = cs;
            D[i][c] = ds;
        }
    }
#endif

#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int col = col0 + k;
        if (col >= res)
            break;
        const float u = (float)col / span;
        float bu[4], dbu[4];
        bernstein3(u, bu, dbu);
        float S[3] = {0.0f, 0.0f, 0.0f}, Su[3] = {0.0f, 0.0f, 0.0f}, Sv[3] = {0.0f, 0.0f, 0.0f};
#if REUSE
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                S[c] += bu[i] * C[i][c];
                Su[c] += dbu[i] * C[i][c];
                Sv[c] += bu[i] * D[i][c];
            }
        }
#else
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float w = bu[i] * bv[j], wu = dbu[i] * bv[j], wv = bu[i] * dbv[j];
#pragma unroll
                for (int c = 0; c < 3; ++c) {
                    const float p = P[(4 * i + j) * 3 + c];
                    S[c] += w * p;
                    Su[c] += wu * p;
                    Sv[c] += wv * p;
                }
            }
        }
#endif
        const float nx = Su[1] * Sv[2] - Su[2] * Sv[1];
        const float ny = Su[2] * Sv[0] - Su[0] * Sv[2];
        const float nz = Su[0] * Sv[1] - Su[1] * Sv[0];
#if RSQ
        const float inv_len = rsqrtf(nx * nx + ny * ny + nz * nz);
#else
        const float inv_len = 1.0f / sqrtf(nx * nx + ny * ny + nz * nz);
#endif
        const size_t at = (((size_t)patch * res + row) * res + col) * 3;
        pos[at] = S[0];
        pos[at + 1] = S[1];
        pos[at + 2] = S[2];
        nrm[at] = nx * inv_len;
        nrm[at + 1] = ny * inv_len;
        nrm[at + 2] = nz * inv_len;
    }
}
