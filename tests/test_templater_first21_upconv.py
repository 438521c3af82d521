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
``/ 2``, the edges in one test), and a third's that visits every tap and skips the other
parity by a test on the counter (:mod:`.residue_skips`: at TAP_UNROLL 1 the loop starts at
its first passing trip and steps by 2). Each lifts TAP_UNROLL; at 1 its sm_90 PTX holds
all four taps' loads (8) once each, where at 0 the first two hold fewer (a loop) and the
third more compares; on the host (g++) each runs bit for bit as written at the default and
one mix (the folder at the expert's H200 pick in the lift's knobs), under
WORKBENCH_FULL_MATRIX=1 at both mixes and every all-ends config. The first passing trip is
checked on the host for strides 2 to 4; a start of no known range keeps its loop as
written; ITEMS_X/ITEMS_Y (the general path) keep the unroll.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen21
import pytest
from held_back_harness import respelled, same_as_written
from helpers_nvcc import needs_nvcc, ptx_of
from helpers_templater import FULL_MATRIX, end_configs, run_on_host
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.cuda_source import parse_cuda
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template
from workbench.templater.analysis import walk
from workbench.templater.residue_skips import skip_loop

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


#: A third hand: every tap visited, the other parity's skipped by a test on the counter (a
#: local's `& 1` and `continue`; the work under `(kx + ox + 1) % 2 == 0`: the counter added,
#: not subtracted), the edges skipped by `continue`.
THIRD = """#define KT 4

extern "C" __global__ void upconv4x4_s2(float *out, const float *in, const float *w, int C,
                                        int K, int H, int W)
{
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= 2 * W || oy >= 2 * H) return;
    int k = blockIdx.z;
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        for (int ky = 0; ky < KT; ++ky) {
            int ty = oy + 1 - ky;
            if (ty & 1) continue;
            int iy = ty / 2;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < KT; kx++) {
                if ((kx + ox + 1) % 2 == 0) {
                    int ix = (ox + 1 - kx) / 2;
                    if (ix >= 0 && ix < W)
                        acc += in[(c * H + iy) * W + ix] * w[((c * K + k) * KT + ky) * KT + kx];
                }
            }
        }
    }
    out[((long)k * 2 * H + oy) * 2 * W + ox] = acc;
}
"""
SPELLINGS = {"second": SECOND, "third": THIRD}


def _kernel(spelling: str, root: Path) -> KernelFolder:
    return load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, root, SPELLINGS[spelling])


def _configs(kf: KernelFolder, spelling: str) -> list[dict[str, Any]]:
    """The default and one mix a spelling (the folder at the expert's pick, the second hand
    and the third at MIX); under WORKBENCH_FULL_MATRIX=1 both mixes and every all-ends config."""
    template = offline_template(kf).template
    default = dict(template.default_config())
    mixes = [EXPERT_PICK, MIX] if FULL_MATRIX else [EXPERT_PICK if spelling == "folder" else MIX]
    picked = [default, *({**default, **m} for m in mixes)]
    if FULL_MATRIX:
        picked += end_configs(template, kf.env(kf.check_shape, "fp32"))
    return picked


@pytest.mark.parametrize("spelling", ["folder", "second", "third"])
def test_tap_loops_unrolled_by_their_start_range(spelling: str, tmp_path: Path) -> None:
    kf = _kernel(spelling, tmp_path)
    result = offline_template(kf)
    assert {p.name for p in result.lifted.params} >= {"BLOCK_X", "BLOCK_Y", "TAP_UNROLL"}
    taps = [n for n in result.notes if n.startswith("TAP_UNROLL: applied")]
    said = "of its 4 trips" if spelling == "third" else "in 0..1: 2 to 2 trips"
    assert len(taps) == 2 and all(said in n for n in taps), result.notes
    space = result.template.space(kf.env(kf.check_shape, "fp32"))
    for config in (EXPERT_PICK, MIX):
        full = {**dict(result.template.default_config()), **config}
        assert space.rejection(full) is None, (config, space.rejection(full))


@needs_nvcc
@pytest.mark.parametrize("spelling", ["folder", "second", "third"])
def test_unrolled_channel_loop_loads_every_tap(spelling: str, tmp_path: Path) -> None:
    """At TAP_UNROLL 1 the PTX holds the four taps' input and weight loads once each (no row
    loop); at 0 the folder's and the second hand's row loop stays, its body one row's loads.
    The third hand's loops step by 2 from the pixel's parity at 1: fewer compares (at 0 its
    4-trip loops test every tap)."""
    template = offline_template(_kernel(spelling, tmp_path)).template
    ptx = {u: ptx_of(template, {**dict(template.default_config()), **EXPERT_PICK,
                                "TAP_UNROLL": u}, "fp32") for u in (0, 1)}
    loads = {u: p.count("ld.global.f32") for u, p in ptx.items()}
    assert loads[1] == 8, loads
    if spelling == "third":  # the skipped trips' parity tests are gone (sm_90: 21 -> 13)
        tests = {u: p.count("setp.") for u, p in ptx.items()}
        assert tests[1] < tests[0], tests
    else:
        assert loads[0] < 8, loads


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


@pytest.mark.parametrize("spelling", ["folder", "second", "third"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _kernel(spelling, tmp_path / "src")
    template = offline_template(kf).template
    configs = _configs(kf, spelling)
    ran = same_as_written(kf, template, configs, held_back_unseen21.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)


#: (the test, the tap loop's header): strides 2, 3 and 4, the counter added and subtracted,
#: a remainder and a mask, a start past 0
SKIPS = [("(e - k) % 3 != 0", "for (int k = 1; k < 9; ++k)"),
         ("(k + e) % 3", "for (int k = 0; k < 7; k++)"),
         ("(e + 5 - k) & 3", "for (int k = 2; k < 11; ++k)"),
         ("((k - e) & 1) != 0", "for (int k = 0; k < 4; ++k)")]


def test_first_passing_trip_on_the_host(tmp_path: Path) -> None:
    """The strided loop (:mod:`.residue_skips`) visits exactly the trips the test lets run, in
    order, for every e in -20..20 (C's remainder and mask on negative values included)."""
    bodies = []
    for test, header in SKIPS:
        source = f"__global__ void k(int e, int* out) {{ {header} {{ if ({test}) continue; " \
                 "out[k] = 1; } }"
        loop = next(n for n in walk(parse_cuda(source, "k.cu").tree.root_node)
                    if n.type == "for_statement")
        found = skip_loop(loop)
        assert found is not None, test
        init, rest = header.removeprefix("for (int k = ").split(";", 1)
        bound = rest.split(";")[0]
        bodies.append(f"""
  for (int e = -20; e <= 20; ++e) {{
    std::vector<int> want, got;
    for (int k = {init};{bound}; ++k) if (!({test})) want.push_back(k);
    for (int k = {found.first};{bound}; k += {found.stride}) got.push_back(k);
    std::printf("%s\\n", want == got ? "same" : "differs");
  }}""")
    program = "#include <cstdio>\n#include <vector>\nint main() {" + "".join(bodies) + \
        "\n  return 0;\n}\n"
    printed = run_on_host(tmp_path, "first_trip", program).split()
    assert printed == ["same"] * (41 * len(SKIPS)), printed


def test_items_per_thread_keep_the_tap_unroll() -> None:
    """A 2-D launch of one output channel (no grid z: the general path, ITEMS_X/ITEMS_Y
    rename the pixel in each item's copy of the loops) keeps TAP_UNROLL on its taps; ``(oy +
    1) % 2`` of a value of unknown sign starts in -1..1 (two or three trips)."""
    source = """
extern "C" __global__ void up1(float* out, const float* in, const float* w, int C, int H,
                               int W) {
  int ox = blockIdx.x * blockDim.x + threadIdx.x;
  int oy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ox >= 2 * W || oy >= 2 * H) return;
  float acc = 0.0f;
  for (int c = 0; c < C; ++c)
    for (int ky = (oy + 1) % 2; ky < 4; ky += 2)
      for (int kx = (ox + 1) % 2; kx < 4; kx += 2) {
        int iy = (oy + 1 - ky) / 2, ix = (ox + 1 - kx) / 2;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W)
          acc += in[(c * H + iy) * W + ix] * w[c * 16 + ky * 4 + kx];
      }
  out[oy * 2 * W + ox] = acc;
}
"""
    lifted = lift_kernel(source, entry="up1", grid=["ceil_div(2 * W, 16)", "ceil_div(2 * H, 16)"],
                         block=["16", "16"], scalars={"C": "C", "H": "H", "W": "W"})
    assert {p.name for p in lifted.params} >= {"ITEMS_X", "ITEMS_Y", "TAP_UNROLL"}, lifted.notes
    taps = [n for n in lifted.notes if n.startswith("TAP_UNROLL: applied")]
    assert len(taps) == 2 and all("in -1..1: 2 to 3 trips" in n for n in taps), lifted.notes
