// One phase of blocked Floyd-Warshall, its independent blocks: for the n x n int distance
// matrix d_in (row-major) cut into 32 x 32 tiles and pivot tile kb (its rows and columns
// K = [32 kb, 32 kb + 32) clipped to n), every element outside the pivot row and column
// bands becomes
//   d_out[i][j] = min(d_in[i][j], min_{k in K} d_in[i][k] + d_in[k][j]),
// and the bands are copied as they are (phases one and two own them). Ping-pong buffers:
// the phase reads d_in and writes d_out. A block owns one 32 x 32 tile; it stages the
// tile's slice of the pivot columns (32 rows x 32 k) and of the pivot rows (32 k x 32
// columns) in shared memory, then each thread runs the min-plus over k for its element.
// Distances past n read as INF (1 << 29: two of them add up without overflow).
// Launch: grid = ((n + 31) / 32, (n + 31) / 32), block = (32, 32).

struct Tile {
    static constexpr int kSide = 32;
    static constexpr int kInf = 1 << 29;
};

extern "C" __global__ void floyd_block_phase(int* d_out, const int* d_in, int n, int kb)
{
    __shared__ int rowPiv[Tile::kSide][Tile::kSide];  // [i in tile][k]
    __shared__ int colPiv[Tile::kSide][Tile::kSide];  // [k][j in tile]

    const int ti = threadIdx.y, tj = threadIdx.x;
    const int i = blockIdx.y * Tile::kSide + ti;
    const int j = blockIdx.x * Tile::kSide + tj;
    const int kBase = kb * Tile::kSide;
    const bool inside = i < n && j < n;

    int cur = inside ? d_in[i * n + j] : Tile::kInf;
    if (blockIdx.x == kb || blockIdx.y == kb) {
        if (inside) d_out[i * n + j] = cur;
        return;
    }

    rowPiv[ti][tj] = (i < n && kBase + tj < n) ? d_in[i * n + kBase + tj] : Tile::kInf;
    colPiv[ti][tj] = (kBase + ti < n && j < n) ? d_in[(kBase + ti) * n + j] : Tile::kInf;
    __syncthreads();

    for (int k = 0; k < Tile::kSide; ++k) {
        int via = rowPiv[ti][k] + colPiv[k][tj];
        cur = via < cur ? via : cur;
    }
    if (inside) d_out[i * n + j] = cur;
}
