/* C = diag(s) A B^T, column-major, 0-based, C89: declarations first, the guard as an
   if-block, the k loop a while. */
extern "C" __global__ void gemm_cm_bt_rowscale(float *c, const float *a, const float *b,
                                               const float *s, int M, int N, int K)
{
    int i, j, k;
    float t;

    i = blockIdx.x * 16 + threadIdx.x;
    j = blockIdx.y * 16 + threadIdx.y;
    if (i < M && j < N) {
        t = 0.0f;
        k = 0;
        while (k < K) {
            t += a[k * M + i] * b[k * N + j];
            k++;
        }
        c[j * M + i] = s[i] * t;
    }
}
