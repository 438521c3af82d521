"""SEPARABLE (workbench/templater/apron_separable.py): a thread's OUT_Y output rows of an
apron tile share the window rows' horizontal sums where the window's weights factor exactly
as a row weight times a column weight.

gauss5 (benchmarks/corpus_compute_unseen2, ``w[j] * w[i] * tile[..]`` over a local literal
table) and two spellings of our own: a Sobel-x written as one 2-D ``__constant__`` table that
factors, read with the column loop outside and the tile filled by nested strided loops with
clamped reads; a blur whose weights are a product of two local tables over counters from -2
to 2, parenthesised, the tile read first; tests/test_templater_apron_branches.py's 3 x 3
mean over a tile stored by per-thread branches (its window read from the source at
USE_SMEM 0); integer binomial taps from an int table, the read first, the tile filled with
the column loop outside. A table that does not factor (a Laplacian), a weight that is not a constant
and a table whose name is declared twice are refused with their line. The knob defaults to
0 (the sum as written, bit for bit); at 1 the additions change order, so its outputs are
compared with the kernel as written within gauss5's folder tolerances (rtol = atol = 1e-5)
on the host, at both ends of every range and a mix; ptxas -v at the expert-equivalent pick:
no spills.
box_blur (corpus_compute_unseen: 25 unit weights) is separable too and checked the same way.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    end_configs,
    host_sample,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import _inputs, _run, folder_runs
from test_templater_apron_branches import BRANCHES, lift

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file
from workbench.templater.offline import offline_template

GAUSS5 = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen2" / "gauss5"
#: the expert's pick (TILE_W 64, TILE_H 8, ROWS 8) in the lift's knobs
EXPERT_PICK = {"BLOCK_X": 64, "BLOCK_Y": 8, "OUT_X": 1, "OUT_Y": 8, "PAD": 0,
               "MIN_BLOCKS_PER_SM": 0}
ENV = {"h": 21, "w": 43, "elem_bytes": 4}

KERNELS: dict[str, str] = {
    "sobel_x_constant_table_columns_outer": r"""
#define BW 16
#define BH 16
__constant__ float K3[3][3] = {{0.125f, 0.0f, -0.125f}, {0.25f, 0.0f, -0.25f},
                               {0.125f, 0.0f, -0.125f}};
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[BH + 2][BW + 2];
  for (int py = threadIdx.y; py < BH + 2; py += BH)
    for (int px = threadIdx.x; px < BW + 2; px += BW) {
      int gy = min(max((int)blockIdx.y * BH + py - 1, 0), h - 1);
      int gx = min(max((int)blockIdx.x * BW + px - 1, 0), w - 1);
      t[py][px] = in[gy * w + gx];
    }
  __syncthreads();
  int col = blockIdx.x * BW + threadIdx.x, row = blockIdx.y * BH + threadIdx.y;
  if (col >= w || row >= h) return;
  float g = 0.0f;
  for (int dc = 0; dc < 3; dc++) {
    for (int dr = 0; dr < 3; dr++) {
      g += K3[dr][dc] * t[threadIdx.y + dr][threadIdx.x + dc];
    }
  }
  out[row * w + col] = g;
}
""",
    "blur_product_of_local_tables_signed_counters": r"""
#define RAD 2
#define TX 32
#define TY 4
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float s[TY + 2 * RAD][TX + 2 * RAD];
  const int bx = blockIdx.x * TX, by = blockIdx.y * TY;
  for (int e = threadIdx.y * TX + threadIdx.x; e < (TY + 2 * RAD) * (TX + 2 * RAD);
       e += TX * TY) {
    const int r = e / (TX + 2 * RAD), c = e % (TX + 2 * RAD);
    const int gr = by + r - RAD, gc = bx + c - RAD;
    s[r][c] = (gr >= 0 && gr < h && gc >= 0 && gc < w) ? in[gr * w + gc] : 0.0f;
  }
  __syncthreads();
  const int x = bx + threadIdx.x, y = by + threadIdx.y;
  if (x < w && y < h) {
    const float down[2 * RAD + 1] = {0.5f, 0.25f, 0.125f, 0.0625f, 0.0625f};
    const float across[2 * RAD + 1] = {3.0f, -1.0f, 2.0f, 0.5f, -1.5f};
    float sum = 0.0f;
    for (int dy = -RAD; dy <= RAD; ++dy)
      for (int dx = -RAD; dx <= RAD; ++dx)
        sum += s[threadIdx.y + RAD + dy][threadIdx.x + RAD + dx] *
               (down[dy + RAD] * across[RAD + dx]);
    out[y * w + x] = sum;
  }
}
""",
    # integer binomial taps (an int table: the products are ints, converted to float) over
    # 0-based counters, the weights multiplied after the read, the scale after the sum
    "binomial_int_table_read_first": r"""
#define T 3
#define N 16
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float buf[N + T - 1][N + T - 1];
  const int ox = blockIdx.x * N - 1, oy = blockIdx.y * N - 1;
  for (int q = threadIdx.x; q < N + T - 1; q += N)
    for (int p = threadIdx.y; p < N + T - 1; p += N) {
      const int gy = oy + p, gx = ox + q;
      buf[p][q] = (gy < 0 || gx < 0 || gy >= h || gx >= w) ? 0.0f : in[gy * w + gx];
    }
  __syncthreads();
  const int cx = blockIdx.x * N + threadIdx.x, cy = blockIdx.y * N + threadIdx.y;
  if (cx < w && cy < h) {
    const int b[T] = {1, 2, 1};
    float acc = 0.0f;
    for (int r = 0; r < T; r++)
      for (int c = 0; c < T; c++) acc += buf[threadIdx.y + r][threadIdx.x + c] * (b[r] * b[c]);
    out[cy * w + cx] = acc * 0.0625f;
  }
}
""",
}

# name -> (source, the refused statement's text): the sum as written stays
REFUSED: dict[str, tuple[str, str]] = {
    "laplacian_table_does_not_factor": (
        KERNELS["sobel_x_constant_table_columns_outer"].replace(
            "{{0.125f, 0.0f, -0.125f}, {0.25f, 0.0f, -0.25f},\n"
            "                               {0.125f, 0.0f, -0.125f}}",
            "{{0.0f, 1.0f, 0.0f}, {1.0f, -4.0f, 1.0f}, {0.0f, 1.0f, 0.0f}}"),
        "g += K3[dr][dc] * t[threadIdx.y + dr][threadIdx.x + dc];"),
    "weight_of_a_runtime_scalar": (
        KERNELS["blur_product_of_local_tables_signed_counters"].replace(
            "(down[dy + RAD] * across[RAD + dx])", "(down[dy + RAD] * (float)h)"),
        "(float)h"),
    # a file-level table of the name a kernel-local one shadows: which one is read is not
    # followed
    "table_shadowed_by_a_local": (
        "__constant__ float across[5] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};\n" +
        KERNELS["blur_product_of_local_tables_signed_counters"],
        "(down[dy + RAD] * across[RAD + dx])"),
}
# a mean over a tile stored by per-thread branches (USE_SMEM 0 reads the window from the
# source): unit weights
MEAN3X3 = "mean3x3_with_corner_stores_zero_padded"
KERNELS[MEAN3X3] = BRANCHES[MEAN3X3][0]
BLOCKS = {"sobel_x_constant_table_columns_outer": ["16", "16"],
          "blur_product_of_local_tables_signed_counters": ["32", "4"], MEAN3X3: ["32", "8"],
          "binomial_int_table_read_first": ["16", "16"]}
# name -> a mix of the knobs (at SEPARABLE 1 and 0)
MIXES = {"sobel_x_constant_table_columns_outer":
         {"BLOCK_X": 16, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4, "LOAD_FLAT": 1},
         "blur_product_of_local_tables_signed_counters":
         {"BLOCK_X": 8, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 2, "PAD": 1},
         MEAN3X3: {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 0},
         "binomial_int_table_read_first": {"BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 8}}


def _line(source: str, needle: str) -> int:
    return next(n for n, text in enumerate(source.splitlines(), start=1) if needle in text)


def test_gauss5_lifts_separable_as_a_knob_off_by_default() -> None:
    lifted = offline_template(load_kernel_folder(GAUSS5)).lifted
    spec = next(dict(p.spec) for p in lifted.params if p.name == "SEPARABLE")
    assert spec["values"] == [0, 1] and spec["default"] == 0
    assert "SEPARABLE == 0 or (OUT_Y > 1 and (OUT_Y + 4) * 5 <= 256)" in lifted.constraints
    note = next(n for n in lifted.notes if n.startswith("SEPARABLE: applied"))
    assert "(1 4 6 4 1) (rows) times (1 4 6 4 1) (columns)" in note, note
    assert "const float wb_sx[5] = {1.0f, 4.0f, 6.0f, 4.0f, 1.0f};" in lifted.source


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_other_spellings_factor_their_weights(name: str) -> None:
    lifted = lift(KERNELS[name], BLOCKS[name])
    assert "SEPARABLE" in {p.name for p in lifted.params}, lifted.notes
    note = next(n for n in lifted.notes if n.startswith("SEPARABLE: applied"))
    want = {"sobel_x_constant_table_columns_outer": "(1 2 1) (rows) times (1/8 0 -1/8)",
            "blur_product_of_local_tables_signed_counters":
                "(1 1/2 1/4 1/8 1/8) (rows) times (3/2 -1/2 1 1/4 -3/4)",
            MEAN3X3: "(1 1 1) (rows) times (1 1 1) (columns)",
            "binomial_int_table_read_first": "(1 2 1) (rows) times (1 2 1) (columns)"}[name]
    assert want in note, note


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_weights_that_do_not_factor_are_refused_with_the_line(name: str) -> None:
    source, needle = REFUSED[name]
    block = BLOCKS["sobel_x_constant_table_columns_outer" if "laplacian" in name else
                   "blur_product_of_local_tables_signed_counters"]
    lifted = lift(source, block)
    assert "SEPARABLE" not in {p.name for p in lifted.params}
    assert any(n.startswith("ROW_REUSE: applied") for n in lifted.notes), lifted.notes
    note = next(n for n in lifted.notes if n.startswith("SEPARABLE: not applied"))
    assert note.endswith(f"(line {_line(source, needle)})"), note
    assert ("do not factor" in note) == ("laplacian" in name), note
    assert ("declared 2 times" in note) == ("shadowed" in name), note


def _configs(template: KernelTemplate, env: dict[str, Any],
             mix: dict[str, int]) -> list[dict[str, Any]]:
    """The default, the all-ends configs at SEPARABLE 1 (first and last; all of them under
    WORKBENCH_FULL_MATRIX=1), a mix at SEPARABLE 1 and the same at 0."""
    default = dict(template.default_config())
    ends = [c for c in end_configs(template, env) if c["SEPARABLE"] == 1]
    assert ends
    mixed = {**default, **mix, "SEPARABLE": 1}
    configs = [default, *host_sample(ends), mixed, {**mixed, "SEPARABLE": 0}]
    space = template.space(env)
    for c in configs:
        assert space.rejection(c) is None, c
    return configs


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
static void check(int n, const std::vector<float>& got, const std::vector<float>& want) {
  int same = 1, near = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    same &= got[i] == want[i];
    near &= std::fabs(got[i] - want[i]) <= 1e-5f + 1e-5f * std::fabs(want[i]);
  }
  std::printf("%%d %%d %%d\n", n, same, near);
}
int main() {
  for (int i = 0; i < h * w; ++i) in_[i] = (float)((i * 37) %% 17 - 8) / 7.0f;
  std::vector<float> want = v0::run();
%(checks)s
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_end_and_a_mix_match_the_kernel_on_the_host(name: str) -> None:
    source = KERNELS[name]
    template = lifted_template(lift(source, BLOCKS[name]))
    b = [int(v) for v in BLOCKS[name]]
    configs = _configs(template, ENV, MIXES[name])
    parts: list[tuple[int, str, dict[str, Any], tuple[list[int], list[int]]]] = [
        (0, source, {}, ([-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])], b))]
    for n, config in enumerate(configs, start=1):
        launch = template.launch_for(config, ENV)
        parts.append((n, template.render(config, "fp32").source, config,
                      (list(launch.grid), list(launch.block))))
    program = (COOPERATIVE_BLOCK + "#define __constant__ static\n"
               f"static const int h = {ENV['h']}, w = {ENV['w']};\n"
               "static std::vector<float> in_(h * w);\n")
    for n, text, config, (grid, block) in parts:
        program += _VARIANT % {
            "defines": "\n".join(f"#define {k} {v}" for k, v in config.items()),
            "undefs": "\n".join(f"#undef {k}" for k in config) +
            "\n#undef BW\n#undef BH\n#undef RAD\n#undef TX\n#undef TY\n#undef T\n#undef N",
            "n": n, "source": text.replace('extern "C" ', ""),
            "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1]}
    checks = "\n".join(f"  check({n}, v{n}::run(), want);" for n in range(1, len(configs) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "separable", program + _MAIN % {"checks": checks},
                              flags=("-ffp-contract=off",))
    rows = [line.split() for line in printed.split("\n") if line]
    assert len(rows) == len(configs)
    for (_, same, near), config in zip(rows, configs, strict=True):
        # as written bit for bit; summed by rows within the tolerances
        assert (same if config["SEPARABLE"] == 0 else near) == "1", config


# corpus folders whose lift gets SEPARABLE -> a mix of the other knobs; gauss5 also at the
# expert's pick (box_blur: 25 unit weights, (1 1 1 1 1) times (1 1 1 1 1))
FOLDERS = {GAUSS5: {"BLOCK_X": 8, "BLOCK_Y": 16, "OUT_X": 4, "OUT_Y": 2, "PAD": 1},
           GAUSS5.parents[1] / "corpus_compute_unseen" / "box_blur":
               {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 8, "LOAD_FLAT": 1}}


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("folder", sorted(FOLDERS), ids=lambda f: f.name)
def test_corpus_configs_match_the_kernel_within_its_tolerances(folder: Path,
                                                               tmp_path: Path) -> None:
    kf = load_kernel_folder(folder)
    template = lifted_template(offline_template(kf).lifted, kf.baseline.entry)
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    configs = _configs(template, env, FOLDERS[folder])
    if folder == GAUSS5:
        configs.append({**default, **EXPERT_PICK, "SEPARABLE": 1})
        if FULL_MATRIX:
            configs.append({**default, **EXPERT_PICK, "SEPARABLE": 0})
    inputs = _inputs(kf)
    want = _run(kf, kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env),
                inputs, tmp_path / "plain")
    runs = [(template.render(c, "fp32").source, template.launch_for(c, env)) for c in configs]
    tol = kf.tolerances["fp32"]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        for name, values in want.items():
            if config["SEPARABLE"] == 0:
                assert (got[name] == values).all(), config
            else:
                np.testing.assert_allclose(got[name], values, rtol=tol.rtol, atol=tol.atol,
                                           err_msg=str(config))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_gauss5_at_the_expert_pick_compiles_without_spills() -> None:
    template = lifted_template(offline_template(load_kernel_folder(GAUSS5)).lifted, "gauss5")
    config = {**template.default_config(), **EXPERT_PICK, "SEPARABLE": 1}
    with tempfile.TemporaryDirectory() as tmp:
        cu = write_file(Path(tmp), Path(tmp) / "k.cu", template.render(config, "fp32").source,
                        overwrite=True)
        done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                               str(Path(tmp) / "k.cubin"), str(cu)], check=True,
                              capture_output=True, text=True, timeout=300)
    log = done.stderr + done.stdout
    assert "Used" in log and not re.search(r"[1-9]\d* bytes spill", log), log
