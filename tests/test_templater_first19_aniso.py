"""First contact with held-back set 19's anisotropic diffusion step (issue 28):
benchmarks/corpus_compute_unseen19/aniso9_diffuse_cg stages a 32 x 8 tile and its one-cell
halo of u through cooperative groups (``block.thread_rank()``, ``block.num_threads()``,
``block.group_index()``, ``block.thread_index()``, ``block.sync()``), the halo filled by one
flat loop strided by the block. Nothing was lifted (0.71 of the expert on the H200, 61 % of a
copy against 87 % at BX 32, BY 4, RY 4, PAD 1): the block's rank was written with the
header's z term, ``threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)``,
though the launch block is (32, 8), and the apron family refuses a z index (line 22).

workbench/templater/coop_groups.py writes a 2-D block's rank and size without the z terms;
the apron family (workbench/templater/apron.py) then reads the flat fill as the tile's load.

Pure: the folder's lift has the block apart from the tile (BLOCK_X, BLOCK_Y), outputs a
thread (OUT_X, OUT_Y: the expert's RY), PAD, with the expert's pick in its space; a second
spelling (built-in indices, constexpr sizes, a clamp helper, the fill over
``threadIdx.y * blockDim.x + threadIdx.x`` through a local, the column ``i - r * W``, the
update inside a bounds test) lifts the same knobs; a column by another width is refused. Host (g++): the folder's lift at the default and the expert's pick in
its knobs, the spelling at the default and a mix, against the kernel as written, bit for bit
(every all-ends config and every mix under WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen19
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen19.SET.root / "aniso9_diffuse_cg"
KNOBS = ["BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD", "USE_SMEM", "MIN_BLOCKS_PER_SM"]
#: The expert's H200 pick (BX 32, BY 4, RY 4, PAD 1) in the lift's knobs; a 16 x 16 block of
#: two columns and two rows a thread, padded; a 64 x 2 block of eight rows a thread (45
#: columns and 37 rows uneven over each).
EXPERT_PICK = {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_Y": 4, "PAD": 1}
MIXES = [EXPERT_PICK, {"BLOCK_X": 16, "BLOCK_Y": 16, "OUT_X": 2, "OUT_Y": 2, "PAD": 1},
         {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 8, "MIN_BLOCKS_PER_SM": 4}]


#: The same step by another hand: built-in indices, constexpr sizes, a clamp helper, the
#: flat fill over the block's linear thread id (a local), its column ``i - r * W`` (the
#: remainder by a subtraction), the update inside a bounds test.
SPELLING = """constexpr int BW = 32;
constexpr int BH = 8;

__device__ __forceinline__ int clampi(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

extern "C" __global__ void aniso9_diffuse_cg(float* out, const float* u, const float* kx,
                                             const float* ky, const float* kxy, int nx,
                                             int ny) {
  __shared__ float s[BH + 2][BW + 2];
  const int bx = blockIdx.x * BW;
  const int by = blockIdx.y * BH;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int i = tid; i < (BH + 2) * (BW + 2); i += blockDim.x * blockDim.y) {
    int r = i / (BW + 2);
    int c = i - r * (BW + 2);
    s[r][c] = u[clampi(by + r - 1, ny - 1) * nx + clampi(bx + c - 1, nx - 1)];
  }
  __syncthreads();
  const int x = bx + threadIdx.x;
  const int y = by + threadIdx.y;
  if (x < nx && y < ny) {
    const int sy = threadIdx.y + 1, sx = threadIdx.x + 1;
    float c = s[sy][sx];
    float dxx = s[sy][sx - 1] + s[sy][sx + 1] - 2.0f * c;
    float dyy = s[sy - 1][sx] + s[sy + 1][sx] - 2.0f * c;
    float dxy = s[sy + 1][sx + 1] - s[sy + 1][sx - 1] - s[sy - 1][sx + 1] + s[sy - 1][sx - 1];
    int at = y * nx + x;
    out[at] = c + 0.1f * (kx[at] * dxx + ky[at] * dyy + 0.25f * kxy[at] * dxy);
  }
}
"""
SPELLING_MIX = {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 2, "OUT_Y": 4, "PAD": 1}


def test_the_folder_lift_reaches_the_experts_knobs() -> None:
    made = offline_template(load_kernel_folder(FOLDER))
    assert [p.name for p in made.lifted.params] == KNOBS, made.lifted.notes
    assert any(n.startswith("OUT_XY: applied") for n in made.lifted.notes)
    assert "threadIdx.z" not in made.lifted.source and "cg::" not in made.lifted.source
    env = load_kernel_folder(FOLDER).env("large", "fp32")
    space = made.template.space(env)
    for mix in MIXES:
        config = {**made.template.default_config(), **mix}
        assert space.rejection(config) is None, (mix, space.rejection(config))


def test_the_spelling_lifts_the_same_knobs() -> None:
    lifted = lift_kernel(SPELLING, entry="aniso9_diffuse_cg",
                         grid=["ceil_div(nx, 32)", "ceil_div(ny, 8)"], block=["32", "8"],
                         scalars={"nx": "nx", "ny": "ny"})
    assert [p.name for p in lifted.params] == KNOBS, lifted.notes


@pytest.mark.parametrize("column", [
    "int c = i - r * (BW + 1);",  # a width other than the row's divisor
    "int c0 = i / (BW + 2) + 1;\n    int c = i - c0 * (BW + 2);",  # not the row local
], ids=["other-width", "not-the-row"])
def test_a_column_not_the_remainder_is_refused(column: str) -> None:
    source = SPELLING.replace("int c = i - r * (BW + 2);", column)
    assert source != SPELLING
    lifted = lift_kernel(source, entry="aniso9_diffuse_cg",
                         grid=["ceil_div(nx, 32)", "ceil_div(ny, 8)"], block=["32", "8"],
                         scalars={"nx": "nx", "ny": "ny"})
    assert "OUT_Y" not in [p.name for p in lifted.params]
    assert any(n.startswith("OUT_XY: not applied") and "is not a flat tile load" in n and
               "(line 13)" in n for n in lifted.notes), lifted.notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...],
                  mixes: list[dict[str, int]]) -> int:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, mixes) if FULL_MATRIX else \
        [{**template.default_config(), **m} for m in ({}, mixes[0])]
    return same_as_written(kf, template, configs, held_back_unseen19.SET.host_source,
                           tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags, MIXES) >= 2


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_spelling_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SPELLING)
    assert _same_outputs(kf, tmp_path, host_flags, [SPELLING_MIX]) >= 2
