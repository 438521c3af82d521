"""Apron tiles loaded by per-thread branches (workbench/templater/apron_branches.py).

The spent wave2d_o4 (a 9-point star of radius 2: every thread stores its point, the first
two columns / rows of threads the halos through ``load_or_zero``, no corners) and two
spellings of our own (a 5-point star with ``threadIdx.y == 0`` / ``== TILE - 1`` halo
stores and clamped reads through a helper, the work under an ``if``; a 3 x 3 mean over a
32 x 8 block whose branches store the corners too, zero padding through a helper
with an early return) lift BLOCK_X, BLOCK_Y, OUT_X, OUT_Y with the tile filled by one nest strided by
the block; a host run (threads as coroutines, barriers as switches, no contraction) at the
default, every all-ends config and sampled configs gives the kernel's output bit for bit;
nvcc compiles wave2d's deepest config without spilling; branch stores of two functions, or
under a condition on the block, are refused with the line.
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
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    end_configs,
    host_sample,
    lifted_template,
    run_on_host,
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file
from workbench.templater import LiftedSource, lift_kernel

WAVE = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen5" / "wave2d_o4"

# name -> (source, block); every kernel is k(out, in, h, w)
BRANCHES: dict[str, tuple[str, list[str]]] = {
    "five_point_edges_by_equality_clamped_helper": ("""
#define TILE 16
__device__ __forceinline__ float at_clamped(const float* a, int r, int c, int h, int w) {
  r = r < 0 ? 0 : (r >= h ? h - 1 : r);
  c = c < 0 ? 0 : (c >= w ? w - 1 : c);
  return a[r * w + c];
}
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[TILE + 2][TILE + 2];
  int col = blockIdx.x * TILE + threadIdx.x;
  int row = blockIdx.y * TILE + threadIdx.y;
  t[threadIdx.y + 1][threadIdx.x + 1] = at_clamped(in, row, col, h, w);
  if (threadIdx.y == 0) t[0][threadIdx.x + 1] = at_clamped(in, row - 1, col, h, w);
  if (threadIdx.y == TILE - 1) t[TILE + 1][threadIdx.x + 1] = at_clamped(in, row + 1, col, h, w);
  if (threadIdx.x == 0) t[threadIdx.y + 1][0] = at_clamped(in, row, col - 1, h, w);
  if (threadIdx.x == TILE - 1) t[threadIdx.y + 1][TILE + 1] = at_clamped(in, row, col + 1, h, w);
  __syncthreads();
  if (col < w && row < h) {
    const int i = threadIdx.y + 1, j = threadIdx.x + 1;
    out[row * w + col] = 0.5f * t[i][j] + 0.125f * (t[i - 1][j] + t[i + 1][j] + t[i][j - 1] +
                                                     t[i][j + 1]);
  }
}
""", ["16", "16"]),
    "mean3x3_with_corner_stores_zero_padded": ("""
static __device__ float pix(const float* a, int r, int c, int h, int w) {
  if (r < 0 || c < 0 || r >= h || c >= w) return 0.0f;
  return a[(long)r * w + c];
}
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float sm[10][34];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * 32 + tx, y = blockIdx.y * 8 + ty;
  sm[ty + 1][tx + 1] = pix(in, y, x, h, w);
  if (tx == 0) {
    sm[ty + 1][0] = pix(in, y, x - 1, h, w);
    if (ty == 0) sm[0][0] = pix(in, y - 1, x - 1, h, w);
    if (ty == 7) sm[9][0] = pix(in, y + 1, x - 1, h, w);
  }
  if (tx == 31) {
    sm[ty + 1][33] = pix(in, y, x + 1, h, w);
    if (ty == 0) sm[0][33] = pix(in, y - 1, x + 1, h, w);
    if (ty == 7) sm[9][33] = pix(in, y + 1, x + 1, h, w);
  }
  if (ty == 0) sm[0][tx + 1] = pix(in, y - 1, x, h, w);
  if (ty == 7) sm[9][tx + 1] = pix(in, y + 1, x, h, w);
  __syncthreads();
  if (x >= w || y >= h) return;
  float s = 0.0f;
  for (int dy = 0; dy < 3; ++dy)
    for (int dx = 0; dx < 3; ++dx) s += sm[ty + dy][tx + dx];
  out[y * w + x] = s / 9.0f;
}
""", ["32", "8"]),
}

REFUSED: dict[str, tuple[str, str, int]] = {
    # the right halo clamps, the centre does not: two functions of the position
    "two_functions": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[16][18];
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  t[threadIdx.y][threadIdx.x] = in[min(y, h - 1) * w + x];
  if (threadIdx.x < 2) t[threadIdx.y][threadIdx.x + 16] = in[min(y, h - 1) * w + min(x + 16, w - 1)];
  __syncthreads();
  if (x < w && y < h) out[y * w + x] = t[threadIdx.y][threadIdx.x + 2];
}
""", "stores another function of the global position", 6),
    # which threads store the halo depends on where the block is
    "halo_under_a_block_condition": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[16][17];
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  t[threadIdx.y][threadIdx.x] = in[min(y, h - 1) * w + min(x, w - 1)];
  if (threadIdx.x == 15 && x + 1 < w) t[threadIdx.y][16] = in[min(y, h - 1) * w + min(x + 1, w - 1)];
  __syncthreads();
  if (x + 1 < w && y < h) out[y * w + x] = t[threadIdx.y][threadIdx.x] + t[threadIdx.y][threadIdx.x + 1];
}
""", "reads more than the thread index", 6),
}

ENV = {"h": 21, "w": 43, "elem_bytes": 4}


def lift(source: str, block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=[f"ceil_div(w, {block[0]})",
                                                f"ceil_div(h, {block[1]})"],
                       block=block, scalars={"h": "h", "w": "w"})


def wave() -> tuple[str, list[str]]:
    folder = load_kernel_folder(WAVE)
    # the entry renamed k and its sizes named h, w (the harness's)
    source = folder.baseline.source.replace("wave2d_o4(", "k(")
    return source, list(folder.baseline.launch.to_dict()["block"])


def cases() -> dict[str, tuple[str, list[str]]]:
    return {**BRANCHES, "wave2d_o4": wave()}


def lift_case(name: str) -> LiftedSource:
    source, block = cases()[name]
    if name == "wave2d_o4":
        return lift_kernel(source, entry="k", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                           block=block, scalars={"ny": "h", "nx": "w", "c2": "0.2"})
    return lift(source, block)


@pytest.mark.parametrize("name", sorted([*BRANCHES, "wave2d_o4"]))
def test_branch_loaded_tiles_lift_outputs_per_thread_with_the_tile(name: str) -> None:
    lifted = lift_case(name)
    names = {p.name for p in lifted.params}
    assert {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM"} <= names, lifted.notes
    assert any(n.startswith("OUT_XY: applied") for n in lifted.notes), lifted.notes
    assert "wb_py < BLOCK_Y * OUT_Y + " in lifted.source
    template = lifted_template(lifted)
    block = [int(b) for b in cases()[name][1]]
    launch = template.launch_for(template.default_config(), ENV)
    assert list(launch.block)[:2] == block
    assert list(launch.grid)[:2] == [-(-ENV["w"] // block[0]), -(-ENV["h"] // block[1])]
    # a star's corners are never stored as written, so the nest leaves them alone
    assert ("? 1 : 2" in lifted.source) == (name != "mean3x3_with_corner_stores_zero_padded")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_branch_loads_the_analysis_cannot_follow_are_refused_with_the_line(name: str) -> None:
    source, reason, row = REFUSED[name]
    lifted = lift(source, ["16", "16"])
    refusals = [f for f in lifted.findings if f.transform == "OUT_XY" and not f.applied]
    assert refusals and reason in refusals[0].reason, lifted.notes
    assert refusals[0].line == row, refusals[0]
    assert not {"OUT_X", "OUT_Y"} & {p.name for p in lifted.params}


# -- host run: all configs of one kernel in one program, threads as coroutines -------------

_VARIANT = r"""
%(defines)s
namespace v%(n)d {
%(source)s
static std::vector<float> run() {
  std::vector<float> out(h * w, -7.0f);
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1}, [&] { k(%(args)s); });
  return out;
}
}
%(undefs)s
"""

_MAIN = r"""
int main() {
  for (int i = 0; i < h * w; ++i) in_[i] = (float)((i * 37) %% 17 - 8) / 7.0f;
  for (int i = 0; i < h * w; ++i) prev_[i] = (float)((i * 11) %% 13 - 6) / 5.0f;
  std::vector<float> want = v0::run();
  int bad = 0;
  for (float v : want) bad += v == -7.0f;
  std::printf("unwritten %%d\n", bad);
%(checks)s
  return 0;
}
"""


def _variant(n: int, name: str, source: str, config: dict[str, Any],
             launch: tuple[list[int], list[int]]) -> str:
    grid, block = launch
    args = "out.data(), in_.data(), prev_.data(), 0.2f, h, w" if name == "wave2d_o4" \
        else "out.data(), in_.data(), h, w"
    return _VARIANT % {
        "defines": "\n".join(f"#define {k_} {v}" for k_, v in config.items()),
        "undefs": "\n".join(f"#undef {k_}" for k_ in config) + "\n#undef R\n#undef BS\n"
        "#undef TILE", "n": n, "source": source.replace('extern "C" ', ""),
        "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1], "args": args}


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    space = list(template.space(ENV))
    rng = random.Random(28)
    default = dict(template.default_config())
    # bit for bit: a separable window's row sums (SEPARABLE 1, another order of the float
    # additions) are checked within tolerances in tests/test_templater_separable.py
    ends = [c for c in end_configs(template, ENV) if not c.get("SEPARABLE")]
    # every all-ends config under WORKBENCH_FULL_MATRIX=1, else the first and the last
    return [default, *host_sample(ends),
            *({**c, "SEPARABLE": 0} if "SEPARABLE" in c else dict(c)
              for c in rng.sample(space, 3 if FULL_MATRIX else 1)),
            {**default, "BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 4},
            # read straight from the source: with the row window, and one output a thread
            {**default, "BLOCK_X": 32, "BLOCK_Y": 2, "OUT_Y": 4, "USE_SMEM": 0},
            {**default, "BLOCK_X": 16, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 1, "USE_SMEM": 0}]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted([*BRANCHES, "wave2d_o4"]))
def test_default_all_ends_and_sampled_configs_give_the_kernels_output(name: str) -> None:
    source, block = cases()[name]
    template = lifted_template(lift_case(name))
    b = [int(v) for v in block]
    parts = [_variant(0, name, source, {}, ([-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])], b))]
    configs = _configs(template)
    for n, config in enumerate(configs, start=1):
        assert template.space(ENV).rejection(config) is None, config
        launch = template.launch_for(config, ENV)
        parts.append(_variant(n, name, template.render(config, "fp32").source, config,
                              (list(launch.grid), list(launch.block))))
    checks = "\n".join(f'  std::printf("%d %d\\n", {n}, (int)(v{n}::run() == want));'
                       for n in range(1, len(configs) + 1))
    prelude = COOPERATIVE_BLOCK + "#define __constant__ static\n" + \
        f"static const int h = {ENV['h']}, w = {ENV['w']};\n" + \
        "static std::vector<float> in_(h * w), prev_(h * w);\n"
    program = prelude + "".join(parts) + _MAIN % {"checks": checks}
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "branches", program, flags=("-ffp-contract=off",))
    lines = printed.split("\n")
    assert lines[0] == "unwritten 0"
    same = dict(line.split() for line in lines[1:] if line)
    wrong = [configs[int(n) - 1] for n, ok in same.items() if ok != "1"]
    assert len(same) == len(configs) and not wrong, wrong


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_deepest_wave_config_compiles_without_spilling() -> None:
    template = lifted_template(lift_case("wave2d_o4"))
    config = {**template.default_config(), "BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 2,
              "OUT_Y": 8}
    assert template.space(ENV).rejection(config) is None
    with tempfile.TemporaryDirectory() as tmp:
        cu = write_file(Path(tmp), Path(tmp) / "k.cu", template.render(config, "fp32").source,
                        overwrite=True)
        done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                               str(Path(tmp) / "k.cubin"), str(cu)], check=True,
                              capture_output=True, text=True, timeout=300)
    log = done.stderr + done.stdout
    assert "Used" in log and not re.search(r"[1-9]\d* bytes spill", log), log
