// Bicubic Bezier patches sampled on a res x res grid of (u, v) = (col, row) / (res - 1):
//   S(u, v) = sum_{i,j} B_i(u) B_j(v) P[i][j],  B the cubic Bernstein basis
//   (B_0 = (1-t)^3, B_1 = 3t(1-t)^2, B_2 = 3t^2(1-t), B_3 = t^3),
//   N(u, v) = normalize(dS/du x dS/dv), the partials from the basis' derivatives.
// The 16 control points of each of the 8 patches live in __constant__ memory (48 floats a
// patch, point (i, j) at (4 i + j) * 3); blockIdx.y is the patch, so a warp's constant
// reads are broadcasts. Each thread evaluates one sample: the position and the unit normal
// (float triples, patch-major, then row, then column).
// Launch: grid = ((res * res + 127) / 128, 8), block = (128).

#define NUM_PATCHES 8
#define BLOCK 128

__constant__ float ctrl[NUM_PATCHES * 48];

struct Vec3 {
    float x, y, z;
};

struct Basis {
    float b[4];   // B_i(t)
    float db[4];  // dB_i/dt
};

__device__ Basis bernstein3(float t)
{
    const float s = 1.0f - t;
    Basis out;
    out.b[0] = s * s * s;
    out.b[1] = 3.0f * t * s * s;
    out.b[2] = 3.0f * t * t * s;
    out.b[3] = t * t * t;
    out.db[0] = -3.0f * s * s;
    out.db[1] = 3.0f * s * s - 6.0f * t * s;
    out.db[2] = 6.0f * t * s - 3.0f * t * t;
    out.db[3] = 3.0f * t * t;
    return out;
}

__device__ Vec3 axpy(float a, Vec3 x, Vec3 y)
{
    Vec3 r = {a * x.x + y.x, a * x.y + y.y, a * x.z + y.z};
    return r;
}

__device__ Vec3 cross(Vec3 a, Vec3 b)
{
    Vec3 r = {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
    return r;
}

extern "C" __global__ void bezier_patch_eval(float* pos, float* nrm, int res)
{
    const int patch = blockIdx.y;
    const int sample = blockIdx.x * BLOCK + threadIdx.x;
    if (sample >= res * res)
        return;
    const int row = sample / res;
    const int col = sample - row * res;
    const float u = (float)col / (float)(res - 1);
    const float v = (float)row / (float)(res - 1);

    const Basis bu = bernstein3(u);
    const Basis bv = bernstein3(v);
    const float* P = ctrl + patch * 48;

    Vec3 S = {0.0f, 0.0f, 0.0f}, Su = {0.0f, 0.0f, 0.0f}, Sv = {0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            const Vec3 p = {P[(4 * i + j) * 3], P[(4 * i + j) * 3 + 1], P[(4 * i + j) * 3 + 2]};
            S = axpy(bu.b[i] * bv.b[j], p, S);
            Su = axpy(bu.db[i] * bv.b[j], p, Su);
            Sv = axpy(bu.b[i] * bv.db[j], p, Sv);
        }
    }
    const Vec3 c = cross(Su, Sv);
    const float inv_len = 1.0f / sqrtf(c.x * c.x + c.y * c.y + c.z * c.z);

    const size_t at = ((size_t)patch * res * res + sample) * 3;
    pos[at] = S.x;
    pos[at + 1] = S.y;
    pos[at + 2] = S.z;
    nrm[at] = c.x * inv_len;
    nrm[at + 1] = c.y * inv_len;
    nrm[at + 2] = c.z * inv_len;
}
