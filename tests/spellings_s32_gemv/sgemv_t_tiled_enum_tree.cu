// y = A^T x, A row-major M x N. Sizes in an enum; the thread rows' partial sums halved in
// shared memory (a tree over threadIdx.y) instead of added in turn by the first row.
enum { COLS = 32, ROWS = 8, CHUNK = 256 };

extern "C" __global__ void sgemv_t_tiled(float *y, const float *A, const float *x, int M, int N)
{
    __shared__ float chunk_x[CHUNK];
    __shared__ float acc_rows[ROWS][COLS + 1];

    int c = threadIdx.x;
    int rw = threadIdx.y;
    int j = blockIdx.x * COLS + c;
    float a = 0.0f;

    for (int i0 = 0; i0 < M; i0 += CHUNK) {
        int f = rw * COLS + c;
        chunk_x[f] = (i0 + f < M) ? x[i0 + f] : 0.0f;
        __syncthreads();
        int len = M - i0 < CHUNK ? M - i0 : CHUNK;
        if (j < N)
            for (int i = rw; i < len; i += ROWS)
                a += A[(size_t)(i0 + i) * N + j] * chunk_x[i];
        __syncthreads();
    }

    acc_rows[rw][c] = a;
    __syncthreads();
    for (int h = ROWS / 2; h > 0; h >>= 1) {
        if (rw < h)
            acc_rows[rw][c] += acc_rows[rw + h][c];
        __syncthreads();
    }
    if (rw == 0 && j < N)
        y[j] = acc_rows[0][c];
}
