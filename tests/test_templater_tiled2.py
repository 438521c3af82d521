"""The templater's z-marching of 3-D stencils (issue 28, build item 1; stencil.py).

A 7-point stencil written the ways different people write it (literal block sizes and an
early return; ``#ifndef`` macros, ``blockDim`` offsets and an ``if (... && z < nz) {...}``
around the work with the index written inline; other names and ``size_t``): each lifts to
Z_ITEMS consecutive planes per thread with the grid's z divisor tied to BLOCK_Z * Z_ITEMS,
compiles with nvcc at its default and corners, and (slow) a host run of the rendered kernel
at sampled configs gives the baseline's output. Kernels whose bounds check is not monotone
in z, or that store to two arrays, are refused with the reason and the line.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import corner_configs, host_sample, lifted_template, run_on_host

from workbench.templater import LiftedSource, lift_kernel

STENCILS: dict[str, str] = {
    "corpus_literals_early_return": """
extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 4 + threadIdx.y;
  int z = blockIdx.z * 4 + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  long long plane = (long long)nx * ny;
  long long i = z * plane + (long long)y * nx + x;
  if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
    out[i] = in[i];
  } else {
    out[i] = 0.4f * in[i] + 0.1f * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] +
                                    in[i - plane] + in[i + plane]);
  }
}
""",
    "ifndef_blockdim_inline_index": """#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 4
#endif
#define BZ 4
extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * BY + threadIdx.y;
  const int z = blockIdx.z * BZ + threadIdx.z;
  if (x < nx && y < ny && z < nz) {
    float c = in[(z * ny + y) * nx + x];
    float v = c;
    if (x > 0 && y > 0 && z > 0 && x < nx - 1 && y < ny - 1 && z < nz - 1)
      v = 0.4f * c + 0.1f * (in[(z * ny + y) * nx + x - 1] + in[(z * ny + y) * nx + x + 1] +
                             in[(z * ny + y - 1) * nx + x] + in[(z * ny + y + 1) * nx + x] +
                             in[((z - 1) * ny + y) * nx + x] + in[((z + 1) * ny + y) * nx + x]);
    out[(z * ny + y) * nx + x] = v;
  }
}
""",
    "other_names_size_t": """
extern "C" __global__ void k(float* dst, const float* __restrict__ src, int nx, int ny, int nz) {
  int gz = threadIdx.z + blockIdx.z * 4;
  int gx = threadIdx.x + blockIdx.x * 32;
  int gy = threadIdx.y + blockIdx.y * 4;
  if (gz >= nz || gx >= nx || gy >= ny) { return; }
  size_t sxy = (size_t)nx * ny;
  size_t at = gx + nx * (size_t)gy + sxy * gz;
  float up = gz + 1 < nz ? src[at + sxy] : 0.0f;
  float down = gz > 0 ? src[at - sxy] : 0.0f;
  float e = gx + 1 < nx ? src[at + 1] : 0.0f;
  float w = gx > 0 ? src[at - 1] : 0.0f;
  float n = gy + 1 < ny ? src[at + nx] : 0.0f;
  float s = gy > 0 ? src[at - nx] : 0.0f;
  dst[at] = 0.4f * src[at] + 0.1f * (up + down + e + w + n + s);
}
""",
}


def lift_stencil(source: str) -> LiftedSource:
    return lift_kernel(source, entry="k",
                       grid=["ceil_div(nx, 32)", "ceil_div(ny, 4)", "ceil_div(nz, 4)"],
                       block=["32", "4", "4"], scalars={"nx": "nx", "ny": "ny", "nz": "nz"})


ENV = {"nx": 45, "ny": 19, "nz": 23, "elem_bytes": 4}


@pytest.mark.parametrize("name", sorted(STENCILS))
def test_every_stencil_spelling_marches_z_with_a_tied_grid(name: str) -> None:
    lifted = lift_stencil(STENCILS[name])
    applied = [f for f in lifted.findings if f.transform == "Z_ITEMS" and f.applied]
    assert applied, lifted.notes
    assert {"BLOCK_X", "BLOCK_Y", "BLOCK_Z", "Z_ITEMS"} <= {p.name for p in lifted.params}
    assert lifted.block == ("BLOCK_X", "BLOCK_Y", "BLOCK_Z")
    assert lifted.grid == ("ceil_div(nx, BLOCK_X)", "ceil_div(ny, BLOCK_Y)",
                           "ceil_div(nz, BLOCK_Z * Z_ITEMS)")
    template = lifted_template(lifted)
    default = template.default_config()
    assert (default["BLOCK_X"], default["BLOCK_Y"], default["BLOCK_Z"], default["Z_ITEMS"]) \
        == (32, 4, 4, 1)
    assert list(template.launch_for(default, ENV).grid) == [2, 5, 6]  # as written
    body = lifted.source[lifted.source.index('extern "C"'):]
    # the neighbour planes come from registers: one load of the plane above per point
    assert "wb_above" in body and body.count("__ldg") == 3
    for config in template.space(ENV):
        c = {k: int(v) for k, v in config.items()}
        assert 32 <= c["BLOCK_X"] * c["BLOCK_Y"] * c["BLOCK_Z"] <= 1024


def _refusal(source: str) -> tuple[str, int]:
    lifted = lift_stencil(source)
    found = [f for f in lifted.findings if f.transform == "Z_ITEMS"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert "Z_ITEMS" not in {p.name for p in lifted.params}
    return found[0].reason, found[0].line


BASE = STENCILS["corpus_literals_early_return"]


@pytest.mark.parametrize("edit,reason,line", [
    (("z >= nz) return;", "z >= nz || z < 1) return;"), "does not bound z from above only", 6),
    (("    out[i] = in[i];\n", "    out[i] = in[i];\n    out[0] = 1.0f;\n"),
     "stored at more than one index", 10),
    (("    out[i] = in[i];\n", "    out[i] = in[i];\n    ((float*)in)[i] = 0.0f;\n"),
     "one output array is modelled", 11),
    # a second exit after the bounds check is read with it as one check (inline_exits,
    # 0954725): one on z alone is refused where the check is (an exit on x is every plane's
    # of a thread, below)
    (("  long long plane", "  if (z == 5) return;\n  long long plane"),
     "does not bound z from above only", 6),
])
def test_stencils_the_analysis_cannot_follow_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in BASE
    got, at = _refusal(BASE.replace(edit[0], edit[1], 1))
    assert reason in got
    assert at == line


def test_an_exit_on_x_after_the_check_skips_every_plane_of_its_thread() -> None:
    """``if (x == 3) return;`` after the bounds check joins it (0954725): the same for every
    plane a thread walks, so the march applies and its planes' loads are guarded by it."""
    lifted = lift_stencil(BASE.replace("  long long plane", "  if (x == 3) return;\n  long long plane",
                                       1))
    assert "Z_ITEMS" in {p.name for p in lifted.params}
    body = lifted.source[lifted.source.index('extern "C"'):]
    assert "if ((x >= nx || y >= ny || z >= nz) || (x == 3)) continue;" in body
    assert "!((x >= nx || y >= ny || (z + 1) >= nz) || (x == 3))" in body


def test_a_3d_kernel_without_neighbour_planes_is_not_marched() -> None:
    copy = BASE.replace("in[i - plane] + in[i + plane]", "in[i] + in[i]")
    lifted = lift_stencil(copy)
    assert "Z_ITEMS" not in {p.name for p in lifted.params}
    assert any(f.transform == "Z_ITEMS" and "no input is read at the planes" in f.reason
               for f in lifted.findings)


@pytest.mark.parametrize("name", sorted(STENCILS))
def test_stencil_templates_compile_at_default_and_corners(name: str, compiler: Any) -> None:
    template = lifted_template(lift_stencil(STENCILS[name]))
    for config in host_sample(corner_configs(template, ENV)):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{config}: {result.error_summary}\n{result.log[-1500:]}"


# -- host run of the rendered kernel (no barriers: threads run one after another) ----------

_HOST = r"""
#include <cstdio>
#include <vector>
struct wb_dim3 { unsigned x, y, z; };
static wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __launch_bounds__(...)
template <class T> static T __ldg(const T* p) { return *p; }
"""

_MAIN = r"""
int main() {
  const int nx = %(nx)d, ny = %(ny)d, nz = %(nz)d;
  std::vector<float> in(nx * ny * nz), out(nx * ny * nz, -7.0f);
  for (int i = 0; i < nx * ny * nz; ++i) in[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  gridDim = {%(gx)d, %(gy)d, %(gz)d};
  blockDim = {%(bx)d, %(by)d, %(bz)d};
  for (unsigned bz = 0; bz < gridDim.z; ++bz) for (unsigned by = 0; by < gridDim.y; ++by)
  for (unsigned bx = 0; bx < gridDim.x; ++bx) for (unsigned tz = 0; tz < blockDim.z; ++tz)
  for (unsigned ty = 0; ty < blockDim.y; ++ty) for (unsigned tx = 0; tx < blockDim.x; ++tx) {
    blockIdx = {bx, by, bz};
    threadIdx = {tx, ty, tz};
    k(out.data(), in.data(), nx, ny, nz);
  }
  for (float v : out) std::printf("%%.9g\n", v);
  return 0;
}
"""


def host_run(source: str, grid: list[int], block: list[int], work: Path) -> list[float]:
    main = _MAIN % {**ENV, "gx": grid[0], "gy": grid[1], "gz": grid[2], "bx": block[0],
                    "by": block[1], "bz": block[2]}
    return [float(v) for v in run_on_host(work, "host", _HOST + source + main).split()]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(STENCILS))
def test_sampled_stencil_configs_give_the_baselines_output(name: str) -> None:
    template = lifted_template(lift_stencil(STENCILS[name]))
    space = list(template.space(ENV))
    rng = random.Random(28)
    configs = [*corner_configs(template, ENV)[1:], *(dict(c) for c in rng.sample(space, 3))]
    configs += [{**template.default_config(), "Z_ITEMS": z} for z in (2, 8, 32)]
    with tempfile.TemporaryDirectory() as tmp:
        want = host_run(STENCILS[name], [2, 5, 6], [32, 4, 4], Path(tmp))
        assert -7.0 not in want
        for config in host_sample(configs):
            launch = template.launch_for(config, ENV)
            got = host_run(template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), Path(tmp))
            assert got == want, config
