// Sobel edge detector: gradient magnitude and direction of a grey image (h x w, row-major,
// pixel values 0..255 held as floats), edges replicated (coordinates clamped):
//   gx = (p[y-1][x+1] + 2 p[y][x+1] + p[y+1][x+1]) - (p[y-1][x-1] + 2 p[y][x-1] + p[y+1][x-1])
//   gy = (p[y+1][x-1] + 2 p[y+1][x] + p[y+1][x+1]) - (p[y-1][x-1] + 2 p[y-1][x] + p[y-1][x+1])
//   mag[y][x] = sqrt(gx^2 + gy^2), dir[y][x] = atan2(gy, gx)
// Each BLOCK_SIZE x BLOCK_SIZE block stages its pixels and a one-pixel apron in shared
// memory. Launch: grid = ((w + 15) / 16, (h + 15) / 16), block = (16, 16).

#define BLOCK_SIZE 16

extern "C" __global__ void sobel_magdir_tile(float *mag, float *dir, const float *img, int w,
                                             int h)
{
    __shared__ float tile[BLOCK_SIZE + 2][BLOCK_SIZE + 2];

    int x = blockDim.x * blockIdx.x + threadIdx.x;
    int y = blockDim.y * blockIdx.y + threadIdx.y;

    // the (BLOCK_SIZE + 2)^2 apron, clamped at the image's edges
    for (int ty = threadIdx.y; ty < BLOCK_SIZE + 2; ty += BLOCK_SIZE) {
        for (int tx = threadIdx.x; tx < BLOCK_SIZE + 2; tx += BLOCK_SIZE) {
            int gx = min(max((int)(blockDim.x * blockIdx.x) + tx - 1, 0), w - 1);
            int gy = min(max((int)(blockDim.y * blockIdx.y) + ty - 1, 0), h - 1);
            tile[ty][tx] = img[gy * w + gx];
        }
    }
    __syncthreads();

    if (x >= w || y >= h)
        return;

    int cx = threadIdx.x + 1;
    int cy = threadIdx.y + 1;
    float gx = (tile[cy - 1][cx + 1] + 2.0f * tile[cy][cx + 1] + tile[cy + 1][cx + 1])
             - (tile[cy - 1][cx - 1] + 2.0f * tile[cy][cx - 1] + tile[cy + 1][cx - 1]);
    float gy = (tile[cy + 1][cx - 1] + 2.0f * tile[cy + 1][cx] + tile[cy + 1][cx + 1])
             - (tile[cy - 1][cx - 1] + 2.0f * tile[cy - 1][cx] + tile[cy - 1][cx + 1]);

    mag[y * w + x] = sqrtf(gx * gx + gy * gy);
    dir[y * w + x] = atan2f(gy, gx);
}
