// NV12 to RGBA8 (BT.601 limited range, 8.8 fixed point), written with int indices, #define
// block dimensions, index macros, min/max clamps and the work inside the bounds test.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8), block = (32, 8).

#define BX 32
#define BY 8
#define LUMA(x, y) luma[(y) * pitch + (x)]
#define CHROMA(x, y) chroma[((y) / 2) * pitch + ((x) / 2) * 2]

extern "C" __global__ void nv12_to_rgba(unsigned char* rgba, const unsigned char* luma,
                                        const unsigned char* chroma, int w, int h, int pitch) {
  int x = blockIdx.x * BX + threadIdx.x;
  int y = blockIdx.y * BY + threadIdx.y;
  if (x < w && y < h) {
    int c = LUMA(x, y) - 16;
    int d = CHROMA(x, y) - 128;
    int e = (&CHROMA(x, y))[1] - 128;
    int r = (298 * c + 409 * e + 128) >> 8;
    int gr = (298 * c - 100 * d - 208 * e + 128) >> 8;
    int b = (298 * c + 516 * d + 128) >> 8;
    uchar4 out = make_uchar4(min(max(r, 0), 255), min(max(gr, 0), 255), min(max(b, 0), 255),
                             255);
    reinterpret_cast<uchar4*>(rgba)[y * w + x] = out;
  }
}
