// Row gather respelled: dst[k][:] = table[rows[k]][:] for int32 row ids into a [n_rows,
// cols] float table, a row of zeros for an id outside the table. An int flat index, the
// row and column by `/` and `%`, the id checked into a local, the select as an if.
// Launch: grid = ((count + 127) / 128), block = (128).

extern "C" __global__ void gather_rows_i32(const float *__restrict__ table,
                                           const int *__restrict__ rows,
                                           float *__restrict__ dst, int n_rows, int cols,
                                           int count)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    int row = t / cols;
    int col = t % cols;
    int from = rows[row];
    float v = 0.0f;
    if (from >= 0 && from < n_rows)
        v = table[from * cols + col];
    dst[t] = v;
}
