"""Consecutive output rows per thread for 2-D stencils with explicit neighbour terms
(workbench/templater/stencil_rows.py).

Four spellings of our own: a 5-point Jacobi step with a boundary copy (early returns), a
9-point Laplacian with a guarded interior, ``__restrict__`` pointers, ``__ldg`` and a flat
local index, a heat step with macros for the sizes, ``blockDim`` in the indices, zero-padded
edges under ternaries and a clamped row read left as written, and a 5-point stencil launched
1-D with (x, y) from a flat index and a boundary copy.
The corpus's stencil5 is run on the host too. The 2-D ones lift BLOCK_X, BLOCK_Y, OUT_Y and
OUT_X (columns a block apart) with the grid's divisors BLOCK_X * OUT_X and BLOCK_Y * OUT_Y, the
1-D one BLOCK_THREADS and OUT_Y over ceil(h / OUT_Y) * w threads; a host
run (every thread in turn, no contraction) of the rendered kernel at the default, the
all-ends and sampled configs gives the kernel's output bit for bit; nvcc compiles the deepest
walk without spilling; each windowed input value is loaded once per thread.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import FULL_MATRIX, end_configs, host_sample, lifted_template, run_on_host

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file
from workbench.templater import LiftedSource, lift_kernel

# name -> (source, block, grid); every kernel is k(out, in, h, w)
STENCILS: dict[str, tuple[str, list[str], list[str]]] = {
    "jacobi5_boundary_copy": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 8 + threadIdx.y;
  if (x >= w || y >= h) return;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { out[y * w + x] = in[y * w + x]; return; }
  out[y * w + x] = 0.5f * in[y * w + x] +
      0.125f * (in[(y - 1) * w + x] + in[(y + 1) * w + x] + in[y * w + x - 1] + in[y * w + x + 1]);
}
""", ["32", "8"], ["ceil_div(w, 32)", "ceil_div(h, 8)"]),
    "laplace9_guarded_interior_restrict_ldg": ("""
extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ in,
                             int h, int w) {
  const int row = threadIdx.y + blockIdx.y * blockDim.y;
  const int col = threadIdx.x + blockIdx.x * blockDim.x;
  const int i = row * w + col;
  if (col > 0 && col < w - 1 && row > 0 && row < h - 1) {
    float s = -8.0f * __ldg(&in[i]);
    s += in[i - w - 1] + in[i - w] + in[i - w + 1];
    s += in[i - 1] + in[i + 1];
    s += __ldg(&in[i + w - 1]) + in[i + w] + in[i + w + 1];
    out[i] = s * 0.25f;
  }
}
""", ["64", "4"], ["ceil_div(w, 64)", "ceil_div(h, 4)"]),
    "heat_macros_zero_pad_clamped_row": ("""
#define WIDTH 45
#define HEIGHT 19
#define ALPHA 0.2f
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  unsigned gy = blockDim.y * blockIdx.y + threadIdx.y;
  unsigned gx = blockDim.x * blockIdx.x + threadIdx.x;
  if (gx < WIDTH && gy < HEIGHT) {
    float c = in[gy * WIDTH + gx];
    float n = gy > 0 ? in[(gy - 1) * WIDTH + gx] : 0.0f;
    float s = gy + 1 < HEIGHT ? in[(gy + 1) * WIDTH + gx] : 0.0f;
    float e = gx + 1 < WIDTH ? in[gy * WIDTH + gx + 1] : 0.0f;
    float west = gx > 0 ? in[gy * WIDTH + gx - 1] : 0.0f;
    unsigned far = gy + 2 < HEIGHT ? gy + 2 : HEIGHT - 1;
    out[gy * WIDTH + gx] = c + ALPHA * (n + s + e + west - 4.0f * c) + 0.01f * in[far * WIDTH + gx];
  }
}
""", ["16", "16"], ["ceil_div(w, 16)", "ceil_div(h, 16)"]),
    "jacobi5_flat_index_1d_launch": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= h * w) return;
  int r = t / w;
  int c = t % w;
  if (r == 0 || c == 0 || r == h - 1 || c == w - 1) { out[t] = in[t]; return; }
  out[t] = 0.25f * (in[t - w] + in[t + w] + in[t - 1] + in[t + 1]);
}
""", ["128"], ["ceil_div(h * w, 128)"]),
}

REFUSED: dict[str, tuple[str, str]] = {
    "output_read": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 4 + threadIdx.y;
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  out[y * w + x] = out[y * w + x] + in[(y - 1) * w + x] + in[(y + 1) * w + x];
}
""", "the output `out` is read"),
    "flat_index_unbounded": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int r = t / w;
  if (r > 0 && r < h - 1 && t % w > 0 && t % w < w - 1)
    out[t] = 0.25f * (in[t - w] + in[t + w] + in[t - 1] + in[t + 1]);
}
""", "does not start with `if (t >= H * W) return;`"),
    "block_row_read": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 4 + threadIdx.y;
  if (x >= w || y < 1 || y >= h - 1) return;
  out[y * w + x] = in[(y - 1) * w + x] + in[(y + 1) * w + x] * (float)threadIdx.y;
}
""", "`threadIdx.y` is read outside the row's declaration"),
}

ENV = {"h": 19, "w": 45, "elem_bytes": 4}
CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus"


def stencil5() -> tuple[str, list[str], list[str]]:
    """The seen corpus's stencil5 (a boundary copy under if/else, a flat local index), its
    entry renamed k as the other spellings' (the host harness calls k)."""
    folder = load_kernel_folder(CORPUS / "stencil5")
    rules = folder.baseline.launch.to_dict()
    return (folder.baseline.source.replace("stencil5(", "k("), list(rules["block"]),
            list(rules["grid"]))


def lift(source: str, block: list[str], grid: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars={"h": "h", "w": "w"})


TWO_D = sorted(n for n in STENCILS if "1d" not in n)


@pytest.mark.parametrize("name", TWO_D)
def test_every_2d_stencil_lifts_rows_per_thread_with_a_tied_grid(name: str) -> None:
    source, block, grid = STENCILS[name]
    lifted = lift(source, block, grid)
    names = [p.name for p in lifted.params]
    assert names[:3] == ["BLOCK_X", "BLOCK_Y", "OUT_Y"], lifted.notes
    assert lifted.block == ("BLOCK_X", "BLOCK_Y")
    assert names[3] == "OUT_X", lifted.notes
    assert lifted.grid == ("ceil_div(w, BLOCK_X * OUT_X)", "ceil_div(h, BLOCK_Y * OUT_Y)")
    template = lifted_template(lifted)
    assert template.default_config()["OUT_Y"] == 1
    assert lifted.params[2].spec["values"] == [1, 2, 4, 8]
    launch = template.launch_for(template.default_config(), ENV)
    b = [int(v) for v in block]
    assert list(launch.block)[:2] == b
    assert list(launch.grid)[:2] == [-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])]


def test_a_stencil_launched_1d_from_a_flat_index_walks_rows_per_thread() -> None:
    source, block, grid = STENCILS["jacobi5_flat_index_1d_launch"]
    lifted = lift(source, block, grid)
    assert [p.name for p in lifted.params][:2] == ["BLOCK_THREADS", "OUT_Y"], lifted.notes
    assert lifted.grid == ("ceil_div(ceil_div(h, OUT_Y) * (w), BLOCK_THREADS)",)
    template = lifted_template(lifted)
    launch = template.launch_for({**template.default_config(), "OUT_Y": 4}, ENV)
    assert list(launch.grid)[:1] == [-(-(-(-ENV["h"] // 4) * ENV["w"]) // 128)]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_stencils_the_analysis_cannot_follow_are_refused_with_the_line(name: str) -> None:
    source, why = REFUSED[name]
    flat = "flat" in name
    lifted = lift(source, ["128"] if flat else ["32", "4"],
                  ["ceil_div(h * w, 128)"] if flat else ["ceil_div(w, 32)", "ceil_div(h, 4)"])
    assert "OUT_Y" not in {p.name for p in lifted.params}
    notes = [n for n in lifted.notes if n.startswith("OUT_Y: not applied") and why in n]
    assert notes and re.search(r"\(line \d+\)$", notes[0]), lifted.notes


# -- host run: every thread in turn (no barriers here), all configs in one program ---------

_PRELUDE = r"""
#include <algorithm>
#include <cstdio>
#include <vector>
struct wb_dim3 { unsigned x, y, z; };
static wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
template <class T> static T __ldg(const T* p) { return *p; }
template <class F> static void wb_launch(wb_dim3 g, wb_dim3 b, F body) {
  gridDim = g; blockDim = b;
  for (unsigned by = 0; by < g.y; ++by) for (unsigned bx = 0; bx < g.x; ++bx)
    for (unsigned ty = 0; ty < b.y; ++ty) for (unsigned tx = 0; tx < b.x; ++tx) {
      blockIdx = {bx, by, 0}; threadIdx = {tx, ty, 0}; body();
    }
}
static const int h = %(h)d, w = %(w)d;
static std::vector<float> in_(h * w);
"""

_VARIANT = r"""
%(defines)s
namespace v%(n)d {
%(source)s
static std::vector<float> run() {
  std::vector<float> out(h * w, -7.0f);
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1}, [&] { k(out.data(), in_.data(), h, w); });
  return out;
}
}
%(undefs)s
"""

_MAIN = r"""
int main() {
  for (int i = 0; i < h * w; ++i) in_[i] = (float)((i * 37) %% 17 - 8) / 7.0f;
  std::vector<float> want = v0::run();
  int bad = 0;
  for (float v : want) bad += v != -7.0f;
  std::printf("written %%d\n", bad);
%(checks)s
  return 0;
}
"""


def _written_launch(block: list[str]) -> tuple[list[int], list[int]]:
    b = [int(v) for v in block]
    if len(b) == 1:
        return [-(-ENV["h"] * ENV["w"] // b[0]), 1], [b[0], 1]
    return [-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])], b


def _variant(n: int, source: str, config: dict[str, Any], launch: tuple[list[int], list[int]]
             ) -> str:
    grid, block = launch
    return _VARIANT % {
        "defines": "\n".join(f"#define {k_} {v}" for k_, v in config.items()),
        "undefs": "\n".join(f"#undef {k_}" for k_ in config) +
        "\n#undef WIDTH\n#undef HEIGHT\n#undef ALPHA",
        "n": n, "source": source.replace('extern "C" ', ""), "gx": grid[0],
        "gy": [*grid, 1][1], "bx": block[0], "by": [*block, 1][1]}


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    space = list(template.space(ENV))
    rng = random.Random(28)
    default = dict(template.default_config())
    return [default, *host_sample(end_configs(template, ENV)),
            *(dict(c) for c in rng.sample(space, 6 if FULL_MATRIX else 3)),
            {**default, "OUT_Y": 8}, {**default, "OUT_Y": 4},
            {**default, **({"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_X": 2} if "BLOCK_X" in default
                           else {"BLOCK_THREADS": 64}), "OUT_Y": 8}]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted([*STENCILS, "stencil5"]))
def test_default_all_ends_and_sampled_configs_give_the_kernels_output(name: str) -> None:
    source, block, grid = STENCILS[name] if name in STENCILS else stencil5()
    template = lifted_template(lift(source, block, grid))
    assert "OUT_Y" in template.param_names
    parts = [_variant(0, source, {}, _written_launch(block))]
    configs = _configs(template)
    for n, config in enumerate(configs, start=1):
        launch = template.launch_for(config, ENV)
        parts.append(_variant(n, template.render(config, "fp32").source, config,
                              (list(launch.grid), list(launch.block))))
    checks = "\n".join(f'  std::printf("%d %d\\n", {n}, (int)(v{n}::run() == want));'
                       for n in range(1, len(configs) + 1))
    program = _PRELUDE % ENV + "".join(parts) + _MAIN % {"checks": checks}
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "stencil2d", program, flags=("-ffp-contract=off",))
    lines = printed.split("\n")
    assert lines[0] != "written 0"  # the kernel as written writes the points it owns
    same = dict(line.split() for line in lines[1:] if line)
    wrong = [configs[int(n) - 1] for n, ok in same.items() if ok != "1"]
    assert len(same) == len(configs) and not wrong, wrong


def _ptxas(source: str, config: dict[str, Any], tmp: Path, *flags: str) -> str:
    cu = write_file(tmp, tmp / "k.cu", source, overwrite=True)
    done = subprocess.run(["nvcc", "-arch=sm_90", *flags, "-o", str(tmp / "k.out"), str(cu)],
                          check=True, capture_output=True, text=True, timeout=300)
    return done.stderr + done.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["jacobi5_flat_index_1d_launch",
                                  "laplace9_guarded_interior_restrict_ldg"])
def test_the_corners_compile_without_spilling(name: str) -> None:
    source, block, grid = STENCILS[name]
    template = lifted_template(lift(source, block, grid))
    space = [dict(c) for c in template.space(ENV)]

    def outputs(c: dict[str, Any]) -> int:
        return int(c["OUT_Y"]) * int(c.get("OUT_X", 1))

    def threads(c: dict[str, Any]) -> int:
        return int(c.get("BLOCK_THREADS", 1)) * int(c.get("BLOCK_X", 1)) * \
            int(c.get("BLOCK_Y", 1))
    # the deepest walk under the tightest register cap the constraints admit
    deepest = max(space, key=lambda c: (outputs(c), int(c["MIN_BLOCKS_PER_SM"]) * threads(c)))
    corners = [deepest, *host_sample(end_configs(template, ENV))]
    with tempfile.TemporaryDirectory() as tmp:
        for config in corners:
            log = _ptxas(template.render(config, "fp32").source, config, Path(tmp),
                         "-cubin", "-Xptxas", "-v")
            assert "Used" in log and not re.search(r"[1-9]\d* bytes (spill|stack)", log), \
                (config, log)


def _jacobi_rows_read(oy: int) -> int:
    """Distinct (column, row) values of the centre column each thread of the Jacobi step
    reads: its point on the boundary, the rows above, at and below inside."""
    h, w = ENV["h"], ENV["w"]
    total = 0
    for x in range(w):
        for y0 in range(0, h, oy):
            rows: set[int] = set()
            for y in range(y0, min(y0 + oy, h)):
                inside = 0 < x < w - 1 and 0 < y < h - 1
                rows |= {y - 1, y, y + 1} if inside else {y}
            total += len(rows)
    return total


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
def test_each_windowed_input_value_is_loaded_once_per_thread() -> None:
    source, block, grid = STENCILS["jacobi5_boundary_copy"]
    template = lifted_template(lift(source, block, grid))
    parts, configs = [], [{**template.default_config(), "OUT_Y": oy} for oy in (1, 4, 8)]
    for n, config in enumerate(configs, start=1):
        launch = template.launch_for(config, ENV)
        counted = template.render(config, "fp32").source.replace(
            "have = true; }", "have = true; ++wb_loads; }")
        assert "++wb_loads" in counted
        parts.append(_variant(n, counted, config, (list(launch.grid), list(launch.block))))
    base = _variant(0, source, {}, _written_launch(block))
    checks = "\n".join(f'  wb_loads = 0; v{n}::run(); std::printf("%ld\\n", wb_loads);'
                       for n in range(1, len(configs) + 1))
    program = (_PRELUDE % ENV + "static long wb_loads = 0;\n" + base + "".join(parts) +
               _MAIN % {"checks": checks})
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "stencil2d_loads", program)
    loads = [int(v) for v in printed.split("\n")[1:] if v]
    # OUT_Y = 1 reads each point's three rows; deeper walks share the rows between outputs
    assert loads == [_jacobi_rows_read(oy) for oy in (1, 4, 8)], loads
    assert loads[0] > loads[1] > loads[2]
