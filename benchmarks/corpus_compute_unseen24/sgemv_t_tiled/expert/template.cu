// Transposed single-precision GEMV: y[j] = sum_i A[i][j] * x[i], A row-major M x N.
// Expert parameterization (hand-written): a block owns a strip of BX * VEC columns, VEC
// consecutive columns a thread read as one float2 / float4 along the row when N is a
// multiple of VEC (the rows stay aligned; otherwise a column at a time), BY threads down
// the rows each summing every BY-th row of a tile of TILE rows whose x is staged in shared
// memory; the BY partial sums of a column added by the first row of threads in turn
// (TREE = 0) or halved in shared memory in log2(BY) steps (TREE = 1).
// Launch: grid = (ceil(N / (BX * VEC))), block = (BX, BY).
// Defaults: the kernel as written (32 x 8 threads, one column a thread, 256-row tiles).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef TILE
#define TILE 256
#endif
#ifndef TREE
#define TREE 0
#endif

constexpr int kCols = BX * VEC;

extern "C" __global__ void __launch_bounds__(BX * BY)
sgemv_t_tiled(float *__restrict__ y, const float *__restrict__ A,
              const float *__restrict__ x, int M, int N)
{
    __shared__ float xs[TILE];
    __shared__ float part[BY][kCols + 1];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * BX + tx;
    const int col0 = blockIdx.x * kCols + tx * VEC;
    const bool vec = (VEC > 1) && (N % VEC == 0) && (col0 + VEC <= N);
    float acc[VEC];
#pragma unroll
    for (int v = 0; v < VEC; ++v)
        acc[v] = 0.0f;

    for (int base = 0; base < M; base += TILE) {
        for (int t = tid; t < TILE; t += BX * BY)
            xs[t] = (base + t < M) ? x[base + t] : 0.0f;
        __syncthreads();
        const int rows = min(TILE, M - base);
        const float *a = A + (size_t)base * N + col0;
        if (vec) {
            for (int r = ty; r < rows; r += BY) {
                const float xr = xs[r];
#if VEC == 4
                const float4 v = *reinterpret_cast<const float4 *>(a + (size_t)r * N);
                acc[0] += v.x * xr;
                acc[1] += v.y * xr;
                acc[2] += v.z * xr;
                acc[3] += v.w * xr;
#elif VEC == 2
                const float2 v = *reinterpret_cast<const float2 *>(a + (size_t)r * N);
                acc[0] += v.x * xr;
                acc[1] += v.y * xr;
#else
                acc[0] += a[(size_t)r * N] * xr;
#endif
            }
        } else {
            for (int r = ty; r < rows; r += BY) {
                const float xr = xs[r];
#pragma unroll
                for (int v = 0; v < VEC; ++v)
                    if (col0 + v < N)
                        acc[v] += a[(size_t)r * N + v] * xr;
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int v = 0; v < VEC; ++v)
        part[ty][tx * VEC + v] = acc[v];
    __syncthreads();
#if TREE
#pragma unroll
    for (int half = BY / 2; half > 0; half /= 2) {
        if (ty < half) {
#pragma unroll
            for (int v = 0; v < VEC; ++v)
                part[ty][tx * VEC + v] += part[ty + half][tx * VEC + v];
        }
        __syncthreads();
    }
    if (ty == 0) {
#pragma unroll
        for (int v = 0; v < VEC; ++v)
            if (col0 + v < N)
                y[col0 + v] = part[0][tx * VEC + v];
    }
#else
    if (ty == 0) {
#pragma unroll
        for (int v = 0; v < VEC; ++v) {
            if (col0 + v < N) {
                float sum = 0.0f;
                for (int k = 0; k < BY; ++k)
                    sum += part[k][tx * VEC + v];
                y[col0 + v] = sum;
            }
        }
    }
#endif
}
