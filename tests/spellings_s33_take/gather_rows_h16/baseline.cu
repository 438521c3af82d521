// Row gather of half rows: dst[k][:] = table[rows[k]][:] for int32 row ids into a [n_rows,
// cols] __half table, a row of zeros for an id outside the table. Pointer arithmetic for
// the row, a ternary on the id, an unsigned flat index.
// Launch: grid = ((count + 255) / 256), block = (256).
#include <cuda_fp16.h>

extern "C" __global__ void gather_rows_h16(__half *__restrict__ dst,
                                           const __half *__restrict__ table,
                                           const int *__restrict__ rows, int n_rows,
                                           unsigned cols, unsigned count)
{
    unsigned t = blockDim.x * blockIdx.x + threadIdx.x;
    if (t >= count)
        return;
    const int from = rows[t / cols];
    const unsigned col = t - (t / cols) * cols;
    dst[t] = (unsigned)from < (unsigned)n_rows ? table[(size_t)from * cols + col]
                                               : __float2half(0.0f);
}
