// Transposed single-precision GEMV: y[j] = sum_i A[i][j] * x[i] for a row-major M x N
// matrix A (y has N entries, x has M). A block owns a strip of 32 columns; its 32 x 8
// threads walk the rows in tiles of 256, the tile's x staged in shared memory, each thread
// summing every eighth row of its column; the eight partial sums of a column are then added
// in shared memory by the block's first row of threads.
// Launch: grid = ((N + 31) / 32), block = (32, 8).

#define STRIP 32
#define ROWS_PER_PASS 8
#define X_TILE 256

extern "C" __global__ void sgemv_t_tiled(float *y, const float *A, const float *x, int M, int N)
{
    __shared__ float xs[X_TILE];
    __shared__ float part[ROWS_PER_PASS][STRIP + 1];

    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * STRIP + tx;
    float acc = 0.0f;

    for (int base = 0; base < M; base += X_TILE) {
        int t = ty * STRIP + tx;
        xs[t] = (base + t < M) ? x[base + t] : 0.0f;
        __syncthreads();
        int rows = min(X_TILE, M - base);
        if (col < N) {
            const float *a = A + (size_t)base * N + col;
            for (int r = ty; r < rows; r += ROWS_PER_PASS)
                acc += a[(size_t)r * N] * xs[r];
        }
        __syncthreads();
    }

    part[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < ROWS_PER_PASS; ++k)
            sum += part[k][tx];
        y[col] = sum;
    }
}
