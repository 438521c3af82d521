/* Correlation matrix R = D^-1/2 C D^-1/2 of the columns of a column-major n x p matrix:
 *   R[i + j * p] = sc[i] * sc[j] * sum_k (x[k + i * n] - mu[i]) * (x[k + j * n] - mu[j]).
 * One R entry a thread, BS x BS blocks, samples staged BS at a time. */

#ifndef BS
#define BS 16
#endif

__device__ float centred(const float *x, const float *mu, int n, int p, int k, int c)
{
    if (k < n && c < p)
        return x[(long)c * n + k] - mu[c];
    return 0.0f;
}

extern "C" __global__ void pearson_cm_tiled(float *r, const float *x, const float *mu,
                                            const float *sc, int n, int p)
{
    __shared__ float si[BS][BS + 1];
    __shared__ float sj[BS][BS + 1];
    int i = blockIdx.x * BS + threadIdx.x;
    int j = blockIdx.y * BS + threadIdx.y;
    float acc = 0.0f;

    int base = 0;
    while (base < n) {
        si[threadIdx.x][threadIdx.y] = centred(x, mu, n, p, base + threadIdx.x,
                                               blockIdx.x * BS + threadIdx.y);
        sj[threadIdx.x][threadIdx.y] = centred(x, mu, n, p, base + threadIdx.x,
                                               blockIdx.y * BS + threadIdx.y);
        __syncthreads();
        for (int kk = 0; kk < BS; kk++)
            acc += si[kk][threadIdx.x] * sj[kk][threadIdx.y];
        __syncthreads();
        base += BS;
    }
    if (i < p && j < p)
        r[(long)j * p + i] = acc * sc[i] * sc[j];
}
