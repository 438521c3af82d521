// NV12 to RGBA8 (BT.601 limited range, 8.8 fixed point): constexpr block dimensions, the
// planes in a struct passed by value, the colour conversion in a helper returning uchar4,
// row pointers, an early return.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8), block = (32, 8).

namespace {
constexpr unsigned kBlockX = 32;
constexpr unsigned kBlockY = 8;

struct Planes {
  const unsigned char* y;
  const unsigned char* uv;
  int pitch;
};

__device__ __forceinline__ unsigned char clamp255(int v) {
  return static_cast<unsigned char>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

__device__ __forceinline__ uchar4 yuv_to_rgba(int y, int u, int v) {
  const int c = 298 * (y - 16) + 128;
  const int d = u - 128;
  const int e = v - 128;
  return make_uchar4(clamp255((c + 409 * e) >> 8), clamp255((c - 100 * d - 208 * e) >> 8),
                     clamp255((c + 516 * d) >> 8), 255);
}
}  // namespace

extern "C" __global__ void nv12_to_rgba(unsigned char* rgba, const unsigned char* luma,
                                        const unsigned char* chroma, int w, int h, int pitch) {
  const Planes planes{luma, chroma, pitch};
  const unsigned col = blockIdx.x * kBlockX + threadIdx.x;
  const unsigned row = blockIdx.y * kBlockY + threadIdx.y;
  if (col >= static_cast<unsigned>(w) || row >= static_cast<unsigned>(h)) return;
  const unsigned char* yrow = planes.y + row * planes.pitch;
  const unsigned char* uvrow = planes.uv + (row / 2) * planes.pitch;
  const unsigned pair = col & ~1u;
  uchar4* dst = reinterpret_cast<uchar4*>(rgba) + row * w;
  dst[col] = yuv_to_rgba(yrow[col], uvrow[pair], uvrow[pair + 1]);
}
