"""First contact with held-back set 21's transposed convolution (issue 28):
benchmarks/corpus_compute_unseen21/upconv4x4_s2 picks a pixel's taps by its parity, ``ky =
(oy + 1) & 1; while (ky < TAPS) { ..; ky += 2; }``: two trips whatever the parity, but a
run-time start, so nvcc kept the row loop a loop inside the channel loop (each tap's 64-bit
addresses rebuilt a trip); the expert writes the four taps out and was 1.98x where the lift
was 0.99x (at KO 1, UNROLL 1: the straight taps, not its knobs). Now
:mod:`.residue_taps` bounds such a loop's trips by its start's range and offers TAP_UNROLL
(``#pragma unroll`` on it: the channel loop holds the four taps straight).

Spellings: the folder (C89 while loops, ``& 1`` and ``>> 1``) and a second hand's (constexpr
taps, the parity as ``1 - (oy & 1)`` in a local and ``(ox & 1) ? 0 : 1``, ``<=`` bounds,
``/ 2``, the edges in one test). Each lifts TAP_UNROLL; at 1 its sm_90 PTX holds all four
taps' loads (8) where at 0 it holds fewer (a loop); on the host (g++) each runs bit for bit
as written at the default and one mix (the folder at the expert's H200 pick in the lift's
knobs), under WORKBENCH_FULL_MATRIX=1 at both mixes and every all-ends config. A start of
no known range keeps its loop as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen21
import pytest
from held_back_harness import respelled, same_as_written
from helpers_nvcc import needs_nvcc, ptx_of
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

FOLDER = held_back_unseen21.SET.root / "upconv4x4_s2"
#: The expert's H200 pick (BX 32, BY 4, KO 1, UNROLL 1) in the lift's knobs.
EXPERT_PICK = {"BLOCK_X": 32, "BLOCK_Y": 4, "TAP_UNROLL": 1}
#: 16 x 32 threads (18 columns over two blocks, the second partly; 14 rows in one, partly),
#: four output channels a block (5 over two layers, the last partly), two blocks an SM
MIX = {"BLOCK_X": 16, "BLOCK_Y": 32, "Z_ITEMS": 4, "TAP_UNROLL": 1, "MIN_BLOCKS_PER_SM": 2}

SECOND = """constexpr int KS = 4;

extern "C" __global__ void upconv4x4_s2(float* out, const float* in, const float* w,
                                        int C, int K, int H, int W)
{
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    const int k = blockIdx.z;
    if (ox < 2 * W && oy < 2 * H) {
        const int ry = 1 - (oy & 1);
        float sum = 0.f;
        for (int c = 0; c < C; ++c) {
            for (int ky = ry; ky <= KS - 1; ky += 2) {
                const int iy = (oy + 1 - ky) / 2;
                for (int kx = (ox & 1) ? 0 : 1; kx <= KS - 1; kx += 2) {
                    const int ix = (ox + 1 - kx) / 2;
                    if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                        sum += in[(c * H + iy) * W + ix] * w[((c * K + k) * KS + ky) * KS + kx];
                }
            }
        }
        out[(k * 2 * H + oy) * 2 * W + ox] = sum;
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
def test_tap_loops_unrolled_by_their_start_range(spelling: str, tmp_path: Path) -> None:
    kf = _kernel(spelling, tmp_path)
    result = offline_template(kf)
    assert {p.name for p in result.lifted.params} >= {"BLOCK_X", "BLOCK_Y", "TAP_UNROLL"}
    taps = [n for n in result.notes if n.startswith("TAP_UNROLL: applied")]
    assert len(taps) == 2 and all("in 0..1: 2 to 2 trips" in n for n in taps), result.notes
    space = result.template.space(kf.env(kf.check_shape, "fp32"))
    for config in (EXPERT_PICK, MIX):
        full = {**dict(result.template.default_config()), **config}
        assert space.rejection(full) is None, (config, space.rejection(full))


@needs_nvcc
@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_unrolled_channel_loop_loads_every_tap(spelling: str, tmp_path: Path) -> None:
    """At TAP_UNROLL 1 the PTX holds the four taps' input and weight loads (no row loop);
    at 0 the row loop stays, its body one row's loads."""
    template = offline_template(_kernel(spelling, tmp_path)).template
    loads = {u: ptx_of(template, {**dict(template.default_config()), **EXPERT_PICK,
                                  "TAP_UNROLL": u}, "fp32").count("ld.global.f32")
             for u in (0, 1)}
    assert loads[1] == 8 and loads[0] < 8, loads


def test_start_of_no_known_range_keeps_its_loop() -> None:
    source = """
extern "C" __global__ void k(float* out, const float* in, const int* first, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.f;
  for (int t = first[i]; t < 4; t += 2) s += in[i * 4 + t];
  for (int u = i & 3; u < 4 * n; u += 2) s += in[u];
  out[i] = s;
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "TAP_UNROLL" not in {p.name for p in lifted.params}, lifted.notes


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _kernel(spelling, tmp_path / "src")
    template = offline_template(kf).template
    configs = _configs(kf, spelling)
    ran = same_as_written(kf, template, configs, held_back_unseen21.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)
