/* Depth to space by 2 (PixelShuffle(2)), NCHW float: unsigned indices, the source offset
 * from a __device__ helper taking the output coordinates and a shape struct by value, the
 * work inside the bounds test.
 * Launch: grid = ((N * C * 4 * H * W + 255) / 256), block = (256).
 */

#define THREADS 256u
#define R 2u

struct Shape {
    unsigned C, H, W;
};

__device__ unsigned source_offset(unsigned n, unsigned c, unsigned oy, unsigned ox, Shape s)
{
    unsigned ch = c * R * R + (oy % R) * R + (ox % R);
    return ((n * s.C * R * R + ch) * s.H + oy / R) * s.W + ox / R;
}

extern "C" __global__ void pixel_shuffle_r2(float *out, const float *in, int N, int C, int H,
                                            int W)
{
    const Shape s = {(unsigned)C, (unsigned)H, (unsigned)W};
    unsigned tid = blockIdx.x * THREADS + threadIdx.x;
    unsigned plane = R * H * R * W;
    if (tid < (unsigned)N * C * plane) {
        unsigned ox = tid % (R * W);
        unsigned oy = tid / (R * W) % (R * H);
        unsigned c = tid / plane % C;
        unsigned n = tid / (plane * C);
        out[tid] = in[source_offset(n, c, oy, ox, s)];
    }
}
