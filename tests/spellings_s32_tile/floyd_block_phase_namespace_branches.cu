// floyd_block_phase respelled: constants in a namespace, unsigned indices, the band test a
// named flag, the pivot slices stored by if / else, the relaxation an if.
namespace fw {
constexpr unsigned kTile = 32;
constexpr int kInfinity = 1 << 29;
}

extern "C" __global__ void floyd_block_phase(int* d_out, const int* d_in, int n, int kb)
{
    __shared__ int left[fw::kTile][fw::kTile];
    __shared__ int top[fw::kTile][fw::kTile];
    const unsigned ty = threadIdx.y;
    const unsigned tx = threadIdx.x;
    const unsigned gi = blockIdx.y * fw::kTile + ty;
    const unsigned gj = blockIdx.x * fw::kTile + tx;
    const unsigned pivot = kb * fw::kTile;
    const bool band = blockIdx.x == kb || blockIdx.y == kb;
    const bool mine = gi < n && gj < n;
    int d = fw::kInfinity;
    if (mine) d = d_in[gi * n + gj];
    if (band) {
        if (mine) d_out[gi * n + gj] = d;
        return;
    }
    if (gi < n && pivot + tx < n)
        left[ty][tx] = d_in[gi * n + pivot + tx];
    else
        left[ty][tx] = fw::kInfinity;
    if (pivot + ty < n && gj < n)
        top[ty][tx] = d_in[(pivot + ty) * n + gj];
    else
        top[ty][tx] = fw::kInfinity;
    __syncthreads();
    for (unsigned k = 0; k < fw::kTile; ++k) {
        const int through = left[ty][k] + top[k][tx];
        if (through < d) d = through;
    }
    if (mine) d_out[gi * n + gj] = d;
}
