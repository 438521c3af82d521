// D = alpha * A * B + beta * C in float, all row-major, out of place as cuBLASLt writes it
// (A [M][K], B [K][N], C and D [M][N]). A TILE x TILE block of threads owns a TILE x TILE
// tile of D, one output a thread; each step stages a tile of A and one of B in static
// shared memory (zeros past the edges) and the threads walk the shared K run. Constants
// as constexpr, the tile count computed up front, size_t offsets.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16), block = (16, 16).

constexpr int TILE = 16;

extern "C" __global__ void sgemm_nn_dabc(float *D, const float *A, const float *B,
                                         const float *C, int M, int N, int K, float alpha,
                                         float beta)
{
    __shared__ float tileA[TILE][TILE];
    __shared__ float tileB[TILE][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    const int numTiles = (K + TILE - 1) / TILE;

    float dot = 0.0f;
    for (int t = 0; t < numTiles; ++t) {
        const int ka = t * TILE + tx; // the A column this thread stages
        const int kb = t * TILE + ty; // the B row this thread stages
        tileA[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        tileB[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            dot += tileA[ty][k] * tileB[k][tx];
        __syncthreads();
    }

    if (row < M && col < N) {
        const size_t idx = (size_t)row * N + col;
        D[idx] = alpha * dot + beta * C[idx];
    }
}
