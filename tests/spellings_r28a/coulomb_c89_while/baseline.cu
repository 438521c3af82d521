/* Softened Coulomb potential at each probe, C89: plain floats, declarations first, the
   charge walk a while loop, the work under an if-block. */
extern "C" __global__ void coulomb_pot_tiles(float *out, const float *probe_data,
                                             const float *charge_data, int n, int m)
{
    int id, j;
    float px, py, pz, dx, dy, dz, phi;

    id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) {
        px = probe_data[3 * id];
        py = probe_data[3 * id + 1];
        pz = probe_data[3 * id + 2];
        phi = 0.0f;
        j = 0;
        while (j < m) {
            dx = px - charge_data[4 * j];
            dy = py - charge_data[4 * j + 1];
            dz = pz - charge_data[4 * j + 2];
            phi += charge_data[4 * j + 3] * rsqrtf(dx * dx + dy * dy + dz * dz + 0.01f);
            j++;
        }
        out[id] = phi;
    }
}
