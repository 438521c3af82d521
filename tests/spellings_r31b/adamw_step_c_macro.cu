/* One AdamW step, out of place, written in C style: #define block size, every expression
 * spelled out in the kernel, the work inside the bounds test.
 *   m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2,
 *   p' = p - lr (m' / bc1 / (sqrt(v' / bc2) + eps) + wd p)
 * Launch: grid = ((n + 255) / 256), block = (256).
 */
#define ADAMW_BLOCK 256

extern "C" __global__ void adamw_step(float *p_out, float *m_out, float *v_out,
                                      const float *p, const float *g, const float *m,
                                      const float *v, int n, float lr, float beta1,
                                      float beta2, float eps, float wd, float bc1, float bc2)
{
    int i = blockIdx.x * ADAMW_BLOCK + threadIdx.x;
    if (i < n) {
        float gi = g[i];
        float pi = p[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * (gi * gi);
        float mh = mi / bc1;
        float vh = vi / bc2;
        p_out[i] = pi - lr * (mh / (sqrtf(vh) + eps) + wd * pi);
        m_out[i] = mi;
        v_out[i] = vi;
    }
}
