// y = A^T x, A row-major M x N. A block of WIDTH x DEPTH threads owns WIDTH columns; x is
// staged SPAN rows at a time (twice the block's threads: a cooperative fill loop), each
// thread walking its column down the tile with a pointer, every DEPTH-th row.
#define WIDTH 32
#define DEPTH 8
#define SPAN 512

extern "C" __global__ void sgemv_t_tiled(float *y, const float *A, const float *x, int M, int N)
{
    __shared__ float xt[SPAN];
    __shared__ float red[DEPTH][WIDTH + 1];

    const unsigned lx = threadIdx.x;
    const unsigned ly = threadIdx.y;
    const unsigned tid = ly * WIDTH + lx;
    const int n = (int)(blockIdx.x * WIDTH + lx);
    float s = 0.0f;

    for (int r0 = 0; r0 < M; r0 += SPAN) {
        for (int i = tid; i < SPAN; i += WIDTH * DEPTH)
            xt[i] = r0 + i < M ? x[r0 + i] : 0.0f;
        __syncthreads();
        const int end = min(SPAN, M - r0);
        if (n < N) {
            for (int r = ly; r < end; r += DEPTH)
                s += *(A + (size_t)(r0 + r) * N + n) * xt[r];
        }
        __syncthreads();
    }

    red[ly][lx] = s;
    __syncthreads();
    if (ly == 0 && n < N) {
        float t = 0.0f;
        for (int d = 0; d < DEPTH; d++)
            t += red[d][lx];
        y[n] = t;
    }
}
