/* Mean of a periodic 64-knot Catmull-Rom spline over 64 points of a golden-rotation orbit,
   C89 hand: declarations at the top, macros for the sizes and the wrap, a helper function
   for the spline, while loops (the samples counted down), the segment clamped by an if. */

#define KNOTS 64
#define SAMPLES 64
#define GOLDEN 0.61803398875f
#define WRAP1(t) ((t) >= 1.0f ? (t) - 1.0f : (t))

__device__ float spline_at(const float *k, float t)
{
    float s, f, p0, p1, p2, p3, c1, c2, c3;
    int seg;
    s = t * KNOTS;
    seg = (int)s;
    if (seg > KNOTS - 1) seg = KNOTS - 1;
    f = s - seg;
    p0 = k[(seg + KNOTS - 1) % KNOTS];
    p1 = k[seg];
    p2 = k[(seg + 1) % KNOTS];
    p3 = k[(seg + 2) % KNOTS];
    c1 = 0.5f * (p2 - p0);
    c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
    c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
    return ((c3 * f + c2) * f + c1) * f + p1;
}

extern "C" __global__ void crspline_rotmean(float *out, const float *u, const float *table,
                                            int n)
{
    __shared__ float knots[KNOTS];
    int i, j, left;
    float x, acc, off;

    j = threadIdx.x;
    while (j < KNOTS) {
        knots[j] = table[j];
        j += blockDim.x;
    }
    __syncthreads();

    i = blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n) {
        x = u[i];
        acc = 0.0f;
        off = 0.0f;
        left = SAMPLES;
        while (left > 0) {
            acc += spline_at(knots, WRAP1(x + off));
            off = WRAP1(off + GOLDEN);
            left--;
        }
        out[i] = acc * (1.0f / SAMPLES);
        i += gridDim.x * blockDim.x;
    }
}
