// Row gather with a position code: dst[k][c] = table[rows[k]][c] + c for int32 row ids (a
// row of zeros plus c for an id outside the table). The column is read as a value as well
// as in the table's index: each lane's own remainder.
// Launch: grid = ((count + 127) / 128), block = (128).

extern "C" __global__ void gather_rows_pos(const float *__restrict__ table,
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
    dst[t] = v + (float)col;
}
