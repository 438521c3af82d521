// One out-of-place AdamW step: m' = beta1 m + (1 - beta1) g, v' = beta2 v + (1 - beta2) g^2,
// p' = p - lr (m' / bc1 / (sqrt(v' / bc2) + eps) + wd p), bc1 and bc2 the bias corrections.
// Expert parameterization (hand-written): THREADS a block, VEC elements a vector load and
// store (float2 / float4; the last n % VEC elements one at a time), ITEMS vectors a thread
// strided by THREADS, FAST=1 the bias corrections as reciprocals and the update's divide as
// __fdividef (within 2 ulps).
// Launch: grid = ceil(n / (VEC * THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (256 threads, one element a thread, IEEE divides).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef FAST
#define FAST 0
#endif

namespace {

struct AdamWParams {
  float lr, beta1, beta2, eps, wd, bc1, bc2, inv_bc1, inv_bc2;
};

template <int N> struct VecOf;
template <> struct VecOf<1> { using type = float; };
template <> struct VecOf<2> { using type = float2; };
template <> struct VecOf<4> { using type = float4; };
using Vec = typename VecOf<VEC>::type;

template <int N> struct Lanes {
  float v[N];
};

__device__ __forceinline__ Lanes<1> unpack(float a) { return {{a}}; }
__device__ __forceinline__ Lanes<2> unpack(float2 a) { return {{a.x, a.y}}; }
__device__ __forceinline__ Lanes<4> unpack(float4 a) { return {{a.x, a.y, a.z, a.w}}; }
__device__ __forceinline__ float pack(const Lanes<1>& l) { return l.v[0]; }
__device__ __forceinline__ float2 pack(const Lanes<2>& l) { return make_float2(l.v[0], l.v[1]); }
__device__ __forceinline__ float4 pack(const Lanes<4>& l) {
  return make_float4(l.v[0], l.v[1], l.v[2], l.v[3]);
}

template <typename T>
__device__ __forceinline__ T ema(T old, T sample, T beta) {
  return beta * old + (T(1) - beta) * sample;
}

// one element: the moments in place, the new weight returned
__device__ __forceinline__ float adamw_one(float p, float g, float& m, float& v,
                                           const AdamWParams& hp) {
  m = ema(m, g, hp.beta1);
  v = ema(v, g * g, hp.beta2);
#if FAST
  return p - hp.lr * (__fdividef(m * hp.inv_bc1, sqrtf(v * hp.inv_bc2) + hp.eps) + hp.wd * p);
#else
  const auto m_hat = m / hp.bc1;
  const auto v_hat = v / hp.bc2;
  return p - hp.lr * (m_hat / (sqrtf(v_hat) + hp.eps) + hp.wd * p);
#endif
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
adamw_step(float* __restrict__ p_out, float* __restrict__ m_out, float* __restrict__ v_out,
           const float* __restrict__ p, const float* __restrict__ g,
           const float* __restrict__ m, const float* __restrict__ v, int n, float lr,
           float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
  const AdamWParams hp{lr, beta1, beta2, eps, wd, bc1, bc2, 1.0f / bc1, 1.0f / bc2};
  const int full = n / VEC;  // whole vectors; the tail belongs to vector index `full`
  const int first = static_cast<int>(blockIdx.x) * (THREADS * ITEMS) +
                    static_cast<int>(threadIdx.x);
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int vi = first + k * THREADS;
    if (vi < full) {
      auto pl = unpack(reinterpret_cast<const Vec*>(p)[vi]);
      const auto gl = unpack(reinterpret_cast<const Vec*>(g)[vi]);
      auto ml = unpack(reinterpret_cast<const Vec*>(m)[vi]);
      auto vl = unpack(reinterpret_cast<const Vec*>(v)[vi]);
#pragma unroll
      for (int e = 0; e < VEC; ++e) pl.v[e] = adamw_one(pl.v[e], gl.v[e], ml.v[e], vl.v[e], hp);
      reinterpret_cast<Vec*>(p_out)[vi] = pack(pl);
      reinterpret_cast<Vec*>(m_out)[vi] = pack(ml);
      reinterpret_cast<Vec*>(v_out)[vi] = pack(vl);
    } else if (vi == full) {
      for (int i = full * VEC; i < n; ++i) {
        auto mi = m[i], vi2 = v[i];
        p_out[i] = adamw_one(p[i], g[i], mi, vi2, hp);
        m_out[i] = mi;
        v_out[i] = vi2;
      }
    }
  }
}
