"""First contact with held-back set 21's Sobel (issue 28):
benchmarks/corpus_compute_unseen21/sobel_magdir_tile loads its apron tile with ``int gx =
min(max(..), w - 1);`` inside the load loop and later computes the gradient ``float gx``
in the kernel's body. The families look a local's value up kernel-wide, so the name declared
twice had none: the apron lift refused the load ("`int gx = ...` in the tile load is
assigned again") and nothing was lifted (templater/expert 0.62 on the H200). Now
:mod:`.scoped_names` reads each such inner declaration under a name of its own (the
language's scope rule), and the apron lift reaches the block (BLOCK_X, BLOCK_Y, the
expert's BX, BY), the rows a thread (OUT_Y, the expert's RY; the rows consecutive and read
through a register window), OUT_X, PAD, LOAD_FLAT; and a tile loaded by one nest whose value
reads only arguments the kernel never writes gets USE_SMEM (the expert's SMEM: 0 reads each
value from the source, no barrier), as a tile stored by per-thread branches did.

Host (g++): the folder and a second hand's spelling (constexpr sizes, the load loops
strided by ``blockDim``, the halo's ``row``/``col`` declared again as the output's point,
the stencil's ``r``/``c`` declared again after the load loops' counters, the work under
``if`` instead of a return, ``__ldg``), bit for bit against the kernel as written at the
default and: the folder at the expert's H200 pick in the lift's knobs (64 x 1 threads of
eight rows from the source), the second hand at MIX (staged, loaded flat) and MIX_DIRECT;
under WORKBENCH_FULL_MATRIX=1 every mix and every all-ends config each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen21
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.scoped_names import scoped_names

FOLDER = held_back_unseen21.SET.root / "sobel_magdir_tile"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD", "LOAD_FLAT", "USE_SMEM"}
#: The expert's H200 pick (BX 64, BY 1, RY 8, SMEM 0, PAD 0) in the lift's knobs (its rows
#: consecutive, read through the register window from the source)
EXPERT_PICK = {"BLOCK_X": 64, "BLOCK_Y": 1, "OUT_Y": 8, "USE_SMEM": 0}
#: 8 x 32 threads of four columns and two rows a thread (45 columns over two blocks, the
#: last partly; 37 rows in one block, partly), padded, the tile loaded flat, two blocks an SM
MIX = {"BLOCK_X": 8, "BLOCK_Y": 32, "OUT_X": 4, "OUT_Y": 2, "PAD": 1, "LOAD_FLAT": 1,
       "MIN_BLOCKS_PER_SM": 2}
#: 32 x 2 threads of two columns and four rows a thread, read from the source (45 columns
#: over one block partly; 37 rows over five blocks, the last partly)
MIX_DIRECT = {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 0}

#: Another hand: constexpr sizes, loops strided by blockDim, the halo's clamped row and
#: column named as the output's point later, the stencil's r / c named as the load loops'
#: counters, the work under an `if`.
SECOND = """constexpr int TILE = 16;

extern "C" __global__ void sobel_magdir_tile(float* mag, float* dir, const float* img,
                                             int w, int h)
{
    __shared__ float s[TILE + 2][TILE + 2];
    for (int r = threadIdx.y; r < TILE + 2; r += blockDim.y) {
        for (int c = threadIdx.x; c < TILE + 2; c += blockDim.x) {
            const int row = max(0, min(h - 1, (int)(blockIdx.y * TILE) + r - 1));
            const int col = max(0, min(w - 1, (int)(blockIdx.x * TILE) + c - 1));
            s[r][c] = __ldg(&img[row * w + col]);
        }
    }
    __syncthreads();
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int row = blockIdx.y * TILE + threadIdx.y;
    if (col < w && row < h) {
        const int r = threadIdx.y + 1;
        const int c = threadIdx.x + 1;
        const float dx = (s[r - 1][c + 1] - s[r - 1][c - 1]) + 2.0f * (s[r][c + 1] - s[r][c - 1])
                       + (s[r + 1][c + 1] - s[r + 1][c - 1]);
        const float dy = (s[r + 1][c - 1] - s[r - 1][c - 1]) + 2.0f * (s[r + 1][c] - s[r - 1][c])
                       + (s[r + 1][c + 1] - s[r - 1][c + 1]);
        mag[row * w + col] = sqrtf(dx * dx + dy * dy);
        dir[row * w + col] = atan2f(dy, dx);
    }
}
"""


def _kernel(spelling: str, root: Path) -> KernelFolder:
    return load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, root, SECOND)


def _configs(kf: KernelFolder, spelling: str) -> list[dict[str, Any]]:
    """The default and the mixes a spelling (the folder at the expert's pick, the second
    hand at MIX and MIX_DIRECT); under WORKBENCH_FULL_MATRIX=1 every mix and every all-ends
    config."""
    template = offline_template(kf).template
    default = dict(template.default_config())
    mixes = [EXPERT_PICK, MIX, MIX_DIRECT] if FULL_MATRIX else \
        [EXPERT_PICK] if spelling == "folder" else [MIX, MIX_DIRECT]
    picked = [default, *({**default, **m} for m in mixes)]
    if FULL_MATRIX:
        picked += end_configs(template, kf.env(kf.check_shape, "fp32"))
    return picked


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_apron_lifted_through_the_reused_names(spelling: str, tmp_path: Path) -> None:
    kf = _kernel(spelling, tmp_path)
    result = offline_template(kf)
    knobs = {p.name for p in result.lifted.params}
    assert knobs >= KNOBS, result.notes
    assert any(n.startswith("OUT_XY: applied") for n in result.notes), result.notes
    space = result.template.space(kf.env(kf.check_shape, "fp32"))
    for config in (EXPERT_PICK, MIX, MIX_DIRECT):
        full = {**dict(result.template.default_config()), **config}
        assert space.rejection(full) is None, (config, space.rejection(full))


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _kernel(spelling, tmp_path / "src")
    template = offline_template(kf).template
    configs = _configs(kf, spelling)
    ran = same_as_written(kf, template, configs, held_back_unseen21.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)


def _renamed(source: str) -> str:
    return scoped_names(InlinedSource(source, "k.cu"), "k").text


def test_inner_declarations_read_under_names_of_their_own() -> None:
    """The outermost declaration keeps its name; each other one with a value, and the uses
    it reaches, get a fresh one; a nested block's own declaration shadows it there."""
    source = ("__global__ void k(float* a, int n) {\n"
              "  for (int i = 0; i < n; ++i) { int t = i * 2; a[t] = 1.0f;\n"
              "    { int t = 5; a[t] = 2.0f; } a[t + 1] = 3.0f; }\n"
              "  float t = a[0];\n  int t_2 = 0;\n  a[1] = t + t_2;\n}\n")
    assert _renamed(source) == source.replace(
        "int t = i * 2; a[t] = 1.0f;", "int t_3 = i * 2; a[t_3] = 1.0f;").replace(
        "{ int t = 5; a[t] = 2.0f; } a[t + 1]", "{ int t_4 = 5; a[t_4] = 2.0f; } a[t_3 + 1]")


@pytest.mark.parametrize("use", [
    "t += 1",  # a compound assignment
    "++t",  # a step
    "g(&t)",  # its address taken
    "(t) = 2",  # assigned through parentheses
])
def test_a_declaration_written_keeps_its_name(use: str) -> None:
    """A declaration whose uses write the name keeps it (even nested), the other one with a
    value is renamed; where both are written nothing changes."""
    source = ("__device__ void g(int* p) {}\n__global__ void k(int* a) {\n"
              "  if (a[0] > 0) { int t = a[1]; " + use + "; a[2] = t; }\n"
              "  int t = a[3];\n  a[4] = t;\n}\n")
    assert _renamed(source) == source.replace("int t = a[3];\n  a[4] = t;",
                                              "int t_2 = a[3];\n  a[4] = t_2;")
    both = source.replace("a[4] = t;", "a[4] = t--;")
    assert _renamed(both) == both


def test_a_name_a_macro_reads_stays() -> None:
    """``AT(d)`` reads ``t`` where it is expanded: which declaration that is stays open."""
    source = ("#define AT(d) a[t + (d)]\n__global__ void k(int* a) {\n"
              "  { int t = 1; AT(0) = 2; }\n  int t = 3;\n  a[t] = 4;\n}\n")
    assert _renamed(source) == source


@pytest.mark.parametrize(("change", "why"), [
    # the kernel writes the source: a read after the barrier could see a new value
    ("    mag[row * w + col] = sqrtf(dx * dx + dy * dy);",
     "    mag[row * w + col] = sqrtf(dx * dx + dy * dy);\n        ((float*)img)[0] = 0.0f;"),
    # the source read through pointer arithmetic the analysis does not follow
    ("s[r][c] = __ldg(&img[row * w + col]);", "s[r][c] = __ldg(img + row * w + col);"),
])
def test_a_source_the_kernel_may_change_keeps_the_tile(change: str, why: str,
                                                       tmp_path: Path) -> None:
    """USE_SMEM only where reading the source later gives the value the tile held."""
    assert change in SECOND
    kf = respelled(FOLDER, tmp_path, SECOND.replace(change, why))
    result = offline_template(kf)
    knobs = {p.name for p in result.lifted.params}
    assert "OUT_Y" in knobs and "USE_SMEM" not in knobs, result.notes
