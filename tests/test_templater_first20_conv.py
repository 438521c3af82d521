"""First contact with held-back set 20's stride-2 filter (issue 28):
benchmarks/corpus_compute_unseen20/conv3x3_s2_sat keeps its output point in a CUDA vector
local (``const int2 o = make_int2(blockIdx.x * blockDim.x + threadIdx.x, ...)``) and reads
``o.x`` / ``o.y``. Every family reads the point from scalar locals, so nothing found it:
no items along x or y (``no top-level T i = blockIdx.x * B + threadIdx.x``), and the
``__constant__`` weights' index looked unknown (``the field c.y the analysis does not
follow``); only the block was lifted (templater/expert 0.79 on the H200, the expert's gain
from several output rows a thread in wide blocks). Now :mod:`.point_split` reads such a
local as one scalar local per component, so the items family lifts ITEMS_X and ITEMS_Y
(ITEMS_Y the expert's RY: output rows a thread, a block's height apart), and
:mod:`.const_lanes` follows the weights' index to the filter loops' counters: a
``continue`` under the thread's bounds test skips the rest of a tap, never a ``for``
header's step, so the counters are one value a warp and the weights stay in constant memory
(no CONST_VIA knob); a ``break`` there still decides the step (the copy stays offered).

Host (g++): the folder and a second hand's spelling (``auto p = make_int2(...)``, the bounds
test around the rest instead of a return, the taps counted from 0, two skips, the image
read in place), each at the default and one mix (the folder at the expert's H200 pick in the
lift's knobs, 64 x 2 threads of four rows; the second hand at MIX), bit for bit against the
kernel as written; under WORKBENCH_FULL_MATRIX=1 at both mixes and every all-ends config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen20
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import split_points

FOLDER = held_back_unseen20.SET.root / "conv3x3_s2_sat"
KNOBS = {"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y"}
#: The expert's H200 pick (BX 64, BY 2, RY 4, SMEM 0) in the lift's knobs.
EXPERT_PICK = {"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_Y": 4}
#: 8 x 16 threads of two columns and eight rows a thread (22 output columns over two blocks,
#: the last partly; 18 rows in one block, mostly past), four blocks an SM at least
MIX = {"BLOCK_X": 8, "BLOCK_Y": 16, "ITEMS_X": 2, "ITEMS_Y": 8, "MIN_BLOCKS_PER_SM": 4}

#: Another hand: ``auto`` and make_int2 with the thread index first, the bounds test around
#: the rest, taps counted from 0, the row's two bounds as two skips, the image read in place.
SECOND = """__constant__ float c_weights[9];

extern "C" __global__ void conv3x3_s2_sat(float* dst, const float* src, int W, int H)
{
    const int ow = W / 2;
    const int oh = H / 2;
    auto p = make_int2(threadIdx.x + blockDim.x * blockIdx.x,
                       threadIdx.y + blockDim.y * blockIdx.y);
    if (p.x < ow && p.y < oh) {
        float sum = 0.f;
        for (int ky = 0; ky < 3; ky++) {
            const int sy = 2 * p.y - 1 + ky;
            if (sy < 0) continue;
            if (sy >= H) continue;
            for (int kx = 0; kx < 3; kx++) {
                const int sx = 2 * p.x + kx - 1;
                if (sx >= 0 && sx < W)
                    sum = fmaf(src[sy * W + sx], c_weights[3 * ky + kx], sum);
            }
        }
        dst[p.y * ow + p.x] = __saturatef(fmaf(sum, 1.25f, -0.1f));
    }
}
"""


def _kernel(spelling: str, root: Path) -> KernelFolder:
    return load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, root, SECOND)


def _configs(kf: KernelFolder, spelling: str) -> list[dict[str, Any]]:
    """The default and one mix a spelling (the folder at the expert's pick, the second hand
    at MIX); under WORKBENCH_FULL_MATRIX=1 both mixes and every all-ends config."""
    template = offline_template(kf).template
    default = dict(template.default_config())
    mixes = [EXPERT_PICK, MIX] if FULL_MATRIX else [EXPERT_PICK if spelling == "folder" else MIX]
    picked = [default, *({**default, **m} for m in mixes)]
    if FULL_MATRIX:
        picked += end_configs(template, kf.env(kf.check_shape, "fp32"))
    return picked


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_rows_a_thread_lifted_through_the_vector_point(spelling: str, tmp_path: Path) -> None:
    kf = _kernel(spelling, tmp_path)
    result = offline_template(kf)
    knobs = {p.name for p in result.lifted.params}
    assert knobs >= KNOBS, result.notes
    # the weights' index is one value a warp: left in constant memory, no copy offered
    assert "CONST_VIA" not in knobs, result.notes
    assert any(n.startswith("CONST_VIA: not applied: c_weights is read at a warp-uniform")
               for n in result.notes), result.notes
    space = result.template.space(kf.env(kf.check_shape, "fp32"))
    for config in (EXPERT_PICK, MIX):
        full = {**dict(result.template.default_config()), **config}
        assert space.rejection(full) is None, (config, space.rejection(full))


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _kernel(spelling, tmp_path / "src")
    template = offline_template(kf).template
    configs = _configs(kf, spelling)
    ran = same_as_written(kf, template, configs, held_back_unseen20.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)


def test_vector_local_read_as_one_local_per_component() -> None:
    """Each component a statement of its own, each ``o.f`` its local; the lines after it
    keep their places in the kernel as written (the two-line declaration stays two)."""
    source = FOLDER.joinpath("baseline.cu").read_text()
    split = split_points(InlinedSource(source, "k.cu"), "conv3x3_s2_sat")
    lines = split.text.splitlines()
    assert "    const int o_x = blockIdx.x * blockDim.x + threadIdx.x;" in lines
    assert "    const int o_y = blockIdx.y * blockDim.y + threadIdx.y;" in lines
    assert "    const int c_y = 2 * o_y;" in lines
    assert "dst[o_y * dims_x + o_x]" in split.text
    assert "int2" not in split.text
    assert len(lines) == len(source.splitlines()) + 2  # dims and c: one line each more
    at = next(n for n, t in enumerate(lines, 1) if "const float* line" in t)
    assert split.baseline_line(at) == 21


@pytest.mark.parametrize("use", [
    "g(o)",  # the whole value passed on
    "o.x += 1",  # a component written
    "*(&o.y) = 0",  # a component's address taken
    "o = make_int2(0, 0)",  # the whole value written
])
def test_vector_local_used_whole_or_written_stays(use: str) -> None:
    source = ("__device__ void g(int2 v) {}\n__global__ void k(int* a) {\n"
              "  int2 o = make_int2(threadIdx.x, threadIdx.y);\n  " + use + ";\n"
              "  a[o.y * 8 + o.x] = 1;\n}\n")
    current = InlinedSource(source, "k.cu")
    assert split_points(current, "k") == current


def test_vector_local_a_macro_names_stays() -> None:
    """``AT(dy)`` reads ``o.x`` where the macro is expanded: the local must stay."""
    source = ("#define AT(d) a[(o.y + (d)) * 8 + o.x]\n__global__ void k(int* a) {\n"
              "  const int2 o = make_int2(threadIdx.x, threadIdx.y);\n  AT(0) = o.x;\n}\n")
    current = InlinedSource(source, "k.cu")
    assert split_points(current, "k") == current


def test_vector_values_with_effects_stay() -> None:
    """``make_int2(i++, i)``: its values as two statements would be another order."""
    source = ("__global__ void k(int* a, int i) {\n"
              "  const int2 o = make_int2(i++, i);\n  a[o.x] = o.y;\n}\n")
    current = InlinedSource(source, "k.cu")
    assert split_points(current, "k") == current


_FILTER = """__constant__ float w[9];
extern "C" __global__ void k(float* y, const float* x, int n) {
  int i = blockIdx.x * 16 + threadIdx.x;
  int j = blockIdx.y * 16 + threadIdx.y;
  if (i >= n || j >= n) return;
  float s = 0.0f;
  for (int a = 0; a < 3; ++a) {
    if (j + a >= n) SKIP;
    for (int b = 0; b < 3; ++b) {
      if (i + b >= n) continue;
      s += x[(j + a) * n + i + b] * w[a * 3 + b];
    }
  }
  y[j * n + i] = s;
}
"""


@pytest.mark.parametrize(("skip", "staged"), [("continue", False), ("break", True)])
def test_a_skip_keeps_the_counter_one_value_a_warp(skip: str, staged: bool) -> None:
    """A ``continue`` under a lane's test ends that lane's iteration at the ``for`` header's
    step, so ``a`` is one value a warp (the inner loop's ``continue`` leaves the outer
    iteration alone); a ``break`` there decides how often the step runs: CONST_VIA stays
    offered."""
    lifted = lift_kernel(_FILTER.replace("SKIP", skip), entry="k",
                         grid=["ceil_div(n, 16)", "ceil_div(n, 16)"], block=["16", "16"],
                         scalars={"n": "n"})
    assert ("CONST_VIA" in {p.name for p in lifted.params}) == staged, lifted.notes
