"""Session 35: a dilated window's walk a row at a time (:func:`.conv_dilate.row_accumulate`).

At set 28's dil2_conv5_valid the H200 tune kept USE_SMEM 0 (0.77 of the expert). Compiled
with nvcc 13.0 at the expert's pick (BLOCK 32 x 8, OUT_Y 8, OUT_X 2, USE_SMEM 1), the
template's walk over the 16 input rows was not unrolled (``.pragma "nounroll"``): one tap
test per output and input column inside the column walk left the row body too large, so
the tests ran at run time, the taps were read from constant memory by address and half
the FFMAs sat behind branches (958 SASS instructions, 320 FFMA in a loop, 40 LDS; the
expert's template: 835, 400 FFMA, 80 LDS). The walk now reads the row's values once into
registers, then adds them into every output row whose tap row it is, each output column
its taps by index (``wb_c = wb_q + D * wb_tc``: no test inside): unrolled at every OUT_Y x
OUT_X (400 FFMA, 80 LDS, 32 registers at the expert's pick), each output's taps in the
written order. The shared tile's fill splits its never-negative row and column unsigned
(``(unsigned)wb_pr / 2u``, ``% 2u``: a shift and a mask, not a signed division's rounding
fix): 42 instructions an element in its unrolled loop (47 before; the expert's 28, its
guard a predicated load where the template's still branches).

Kernels: the corpus folder and two respellings under tests/spellings_s35_dil2/
(dil2_constexpr_2d: constexpr sizes, a 2-D __constant__ filter, int offsets, the body
under an ``if``; dil4_conv3_helper: a 3 x 3 filter at dilation 4, macros, the pixel read by
a helper taking row and column, fmaf). A row pointer walked at a dilated column
(``p[D * j]``, ``p = in + (y + D * i) * W + x`` declared in the row loop) walks the same way;
gap asserted: dil2_constexpr_2d read through such a row pointer (its body under an ``if``)
lifts OUT_Y only (OUT_X noted).
Host (g++): bit for bit against the kernels as written at the default, mixes and ends.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import held_back_unseen28
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

FOLDER = held_back_unseen28.SET.root / "dil2_conv5_valid"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_dil2"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM", "MIN_BLOCKS_PER_SM"}
#: name ("" the corpus kernel as written) -> the mixes its host check runs
CASES: dict[str, list[dict[str, int]]] = {
    "": [
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 1},  # the expert's pick
        {"OUT_Y": 16, "OUT_X": 1, "USE_SMEM": 1, "BLOCK_X": 32, "BLOCK_Y": 2},
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 0, "BLOCK_X": 8, "BLOCK_Y": 4},
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 0, "BLOCK_X": 16, "BLOCK_Y": 2},
        {"OUT_Y": 2, "OUT_X": 1, "USE_SMEM": 1, "BLOCK_X": 256, "BLOCK_Y": 1}],
    "dil2_constexpr_2d": [
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 1},
        {"OUT_Y": 16, "OUT_X": 1, "USE_SMEM": 0, "BLOCK_X": 16, "BLOCK_Y": 4},
        {"OUT_Y": 1, "OUT_X": 4, "USE_SMEM": 1, "BLOCK_X": 8, "BLOCK_Y": 8}],
    "dil4_conv3_helper": [
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 16, "BLOCK_Y": 4},
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 0},
        {"OUT_Y": 2, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 64, "BLOCK_Y": 2}],
}


def _folder(name: str, root: Path) -> KernelFolder:
    if not name:
        return load_kernel_folder(FOLDER)
    return respelled(FOLDER, root, (SPELLINGS / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_dilated_walk_goes_a_row_at_a_time(name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    assert {p.name for p in result.lifted.params} == KNOBS, result.lifted.notes
    source = result.template.source
    assert "wb_row[wb_c] = " in source and "const int wb_c = wb_q + " in source, source
    # no tap test per output column inside the walk
    assert "(wb_c - wb_q) >= 0" not in source, source


_ROW_POINTER = """
__constant__ float taps[25];
extern "C" __global__ void k(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W - 8 || y >= H - 8) return;
    float acc = 0.0f;
    for (int i = 0; i < 5; ++i) {
        const float *p = in + (y + 2 * i) * W + x;
        for (int j = 0; j < 5; ++j)
            acc += taps[i * 5 + j] * p[2 * j];
    }
    out[y * (W - 8) + x] = acc;
}
"""


def test_a_row_pointer_at_a_dilated_column_walks_a_row_at_a_time() -> None:
    lifted = lift_kernel(_ROW_POINTER, entry="k",
                         grid=["ceil_div(W - 8, 32)", "ceil_div(H - 8, 8)"],
                         block=["32", "8"], scalars={"W": "W", "H": "H"})
    assert {"OUT_Y", "OUT_X", "USE_SMEM"} <= {p.name for p in lifted.params}, lifted.notes
    assert "const int wb_c = wb_q + 2 * wb_tc;" in lifted.source, lifted.source


def test_a_row_pointer_in_the_body_under_an_if_is_a_gap() -> None:
    """Gap: dil2_constexpr_2d with its tap read through a row pointer (``const float *p =
    img + (y + DIL * i) * W + x;`` in the row loop, ``p[DIL * j]``; the body under ``if (x <
    ow && y < oh)``) lifts OUT_Y, no OUT_X (noted)."""
    src = (SPELLINGS / "dil2_constexpr_2d.cu").read_text()
    loop = ("            for (int j = 0; j < K; j++)\n"
            "                acc += taps[i][j] * img[(y + DIL * i) * W + x + DIL * j];")
    assert loop in src
    src = src.replace(loop, "            const float *p = img + (y + DIL * i) * W + x;\n"
                      "            for (int j = 0; j < K; j++)\n"
                      "                acc += taps[i][j] * p[DIL * j];")
    lifted = lift_kernel(src, entry="dil2_conv5_valid",
                         grid=["ceil_div(W - 8, 32)", "ceil_div(H - 8, 8)", "images"],
                         block=["32", "8"], scalars={"W": "W", "H": "H"})
    names = {p.name for p in lifted.params}
    assert "OUT_Y" in names and "OUT_X" not in names, lifted.notes
    assert any(n.startswith("OUT_X: not applied: `p` depends on x and j other than through")
               for n in lifted.notes), lifted.notes


_NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.mark.skipif(not Path(_NVCC).exists(), reason="no nvcc")
@pytest.mark.timeout(600)
@pytest.mark.parametrize("knobs", [(8, 2, 1), (16, 1, 0), (4, 4, 1)])
def test_nvcc_unrolls_the_walk(knobs: tuple[int, int, int], tmp_path: Path) -> None:
    """At OUT_Y x OUT_X = 16 every one of the 400 multiply-adds is unrolled, the taps
    read at compile-time offsets (no constant read by address)."""
    oy, ox, smem = knobs
    source = offline_template(_folder("", tmp_path)).template.source
    cu = tmp_path / "t.cu"
    cu.write_text(f"#define OUT_Y {oy}\n#define OUT_X {ox}\n#define USE_SMEM {smem}\n" + source)
    ptx = tmp_path / "t.ptx"
    subprocess.run([_NVCC, "-arch=sm_90", "-O3", "-ptx", "-o", str(ptx), str(cu)],
                   check=True, capture_output=True)
    lines = ptx.read_text().splitlines()
    assert sum("fma.rn.f32" in t for t in lines) == 400
    assert not any("ld.const.f32" in t and "[%rd" in t for t in lines)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_row_walk_computes_as_written(name: str, tmp_path: Path,
                                          host_flags: tuple[str, ...]  # noqa: F811
                                          ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), CASES[name])
    if not FULL_MATRIX:
        configs = configs[:len(CASES[name]) + 1] + configs[-1:]
    assert same_as_written(kf, template, configs, held_back_unseen28.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)
