// y = A^T x, A row-major M x N. Guarded macros, unsigned thread indices, a row pointer
// advanced by N each step, and the column's partial sums added by a helper.
#ifndef COLS_PER_BLOCK
#define COLS_PER_BLOCK 32
#endif
#ifndef ROW_GROUPS
#define ROW_GROUPS 8
#endif
#ifndef XCHUNK
#define XCHUNK 256
#endif

__device__ float column_total(float (&p)[ROW_GROUPS][COLS_PER_BLOCK + 1], unsigned c)
{
    float s = 0.0f;
    for (int g = 0; g < ROW_GROUPS; g++)
        s += p[g][c];
    return s;
}

extern "C" __global__ void sgemv_t_tiled(float *y, const float *A, const float *x, int M, int N)
{
    __shared__ float xc[XCHUNK];
    __shared__ float psum[ROW_GROUPS][COLS_PER_BLOCK + 1];

    unsigned c = threadIdx.x;
    unsigned g = threadIdx.y;
    int column = COLS_PER_BLOCK * blockIdx.x + c;
    float run = 0.0f;

    for (int chunk = 0; chunk < M; chunk += XCHUNK) {
        int k = g * COLS_PER_BLOCK + c;
        xc[k] = chunk + k < M ? x[chunk + k] : 0.0f;
        __syncthreads();
        int valid = M - chunk < XCHUNK ? M - chunk : XCHUNK;
        if (column < N) {
            for (int r = g; r < valid; r += ROW_GROUPS)
                run += A[(size_t)(chunk + r) * N + column] * xc[r];
        }
        __syncthreads();
    }

    psum[g][c] = run;
    __syncthreads();
    if (g == 0 && column < N)
        y[column] = column_total(psum, c);
}
