/* C = A^T A / K + 0.01 I over 16 x 16 shared tiles, C89 style: every variable declared at
   the top of the body, the slice walk and the inner product as while loops. */
#define BS 16

extern "C" __global__ void gram_ata_ridge(float *C, float *A, int K, int N)
{
    __shared__ float sa[BS][BS];
    __shared__ float sb[BS][BS];
    int tx, ty, r, c, kt, kk;
    float s;

    tx = threadIdx.x;
    ty = threadIdx.y;
    r = blockIdx.y * BS + ty;
    c = blockIdx.x * BS + tx;
    s = 0.0f;
    kt = 0;
    while (kt < K) {
        if (kt + ty < K && blockIdx.y * BS + tx < N)
            sa[ty][tx] = A[(kt + ty) * N + blockIdx.y * BS + tx];
        else
            sa[ty][tx] = 0.0f;
        if (kt + ty < K && blockIdx.x * BS + tx < N)
            sb[ty][tx] = A[(kt + ty) * N + blockIdx.x * BS + tx];
        else
            sb[ty][tx] = 0.0f;
        __syncthreads();
        kk = 0;
        while (kk < BS) {
            s += sa[kk][ty] * sb[kk][tx];
            kk++;
        }
        __syncthreads();
        kt += BS;
    }
    if (r < N && c < N) {
        if (r == c)
            s = s / K + 0.01f;
        else
            s = s / K;
        C[r * N + c] = s;
    }
}
