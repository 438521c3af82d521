//     Pearson correlation matrix of the p columns of an n x p data matrix X,
//     column-major, leading dimension n, indices 1-based through the macros below:
//        R(i,j) = SC(i) * SC(j) * sum_{k=1..n} (X(k,i) - MU(i)) * (X(k,j) - MU(j))
//     MU: column means, SC: 1 / sqrt(sum_k (X(k,i) - MU(i))^2), both from the caller.
//     R is p x p, column-major. 16 x 16 blocks, each R element one thread, k in shared
//     16-deep slices. Launch: grid = ((p + 15) / 16, (p + 15) / 16), block = (16, 16).

#define NB 16
#define X(k, i) x[((long)(i) - 1) * n + (k) - 1]
#define R(i, j) r[((long)(j) - 1) * p + (i) - 1]
#define MU(i) mu[(i) - 1]
#define SC(i) sc[(i) - 1]

extern "C" __global__ void pearson_cm_tiled(float *r, const float *x, const float *mu,
                                            const float *sc, int n, int p)
{
    __shared__ float xi[NB][NB + 1];
    __shared__ float xj[NB][NB + 1];
    int ib = blockIdx.x * NB, jb = blockIdx.y * NB;
    int i = ib + threadIdx.x + 1, j = jb + threadIdx.y + 1;
    int kb, kk, col;
    float s = 0.0f;

    for (kb = 1; kb <= n; kb += NB) {
        /* thread (tx, ty) fetches X(kb + tx, column ib/jb + ty + 1), unit stride in k */
        col = ib + threadIdx.y + 1;
        if (kb + (int)threadIdx.x <= n && col <= p)
            xi[threadIdx.x][threadIdx.y] = X(kb + threadIdx.x, col) - MU(col);
        else
            xi[threadIdx.x][threadIdx.y] = 0.0f;
        col = jb + threadIdx.y + 1;
        if (kb + (int)threadIdx.x <= n && col <= p)
            xj[threadIdx.x][threadIdx.y] = X(kb + threadIdx.x, col) - MU(col);
        else
            xj[threadIdx.x][threadIdx.y] = 0.0f;
        __syncthreads();
        for (kk = 0; kk < NB; kk++)
            s += xi[kk][threadIdx.x] * xj[kk][threadIdx.y];
        __syncthreads();
    }
    if (i <= p && j <= p)
        R(i, j) = s * SC(i) * SC(j);
}
