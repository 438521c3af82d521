"""The interior copy of the loop around a sliding window's taps
(workbench/templater/conv_mix_interior.py, emitted with T_ITEMS and the channels of
conv_mix.py): a thread whose whole window passes the loads' checks runs the accumulation
without the per-item and per-tap tests.

Checked on benchmarks/corpus_compute_unseen7/conv1d_mix7 (spent; its host runs, every one
through both copies, are tests/test_templater_convmix_window.py's and _channels.py's) and on
two spellings of our own: a 'valid' convolution (no padding test: the interior is every item
live) with the input channels a kernel argument, the filter in global memory, a channel
row pointer and the index ``blockDim.x * blockIdx.x + threadIdx.x``; and a 'same' one whose
read lies on the false side of ``(src < 0 || src >= len) ? 0.0f : in[...]``, a
``__constant__`` 3-D filter, ``#define`` and ``constexpr`` sizes, an early return, the
author's ``#pragma unroll`` on the channel loop (it goes with each copy) and the output
channel on grid z. Each gives the kernel's outputs bit for bit on the host (g++) at
the default, the all-ends corners and a sampled config, with the number of threads that took
the interior copy counted and compared with the count the window's extent gives; ptxas -v at
the corners: no spills. Conditions the thread cannot test before the loop are refused with
the line (the general copy alone is written, still correct).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from held_back_unseen7 import _folder
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    end_configs,
    host_sample,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import (
    NVCC,
    _ptxas_log,
    host_flags,  # noqa: F401  (session fixture: precompiled headers)
)
from test_templater_convmix_channels import needs_gxx

from workbench.templater import LiftedSource, lift_kernel, offline_template

NOTE = "INTERIOR"
N = 203  # samples: no multiple of any block's span


@dataclass(frozen=True)
class Spelling:
    source: str
    grid: list[str]
    block: str
    scalars: dict[str, str]
    env: dict[str, int]
    args: str  # the host call's arguments
    out_size: int
    in_size: int
    filt: str  # the filter the host fills: "filt" (an argument) or the __constant__'s name
    interior: Any  # (first item, items a thread) -> whether its window lies inside


VALID = """
extern "C" __global__ void k(float* y, const float* x, const float* w, int cin, int n,
                             int nout) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  const int oc = blockIdx.y;
  if (i < nout) {
    float acc = 0.0f;
    for (int c = 0; c < cin; ++c) {
      const float* xc = x + c * n;
      for (int j = 0; j < 4; ++j) acc += w[(oc * cin + c) * 4 + j] * xc[i + j];
    }
    y[oc * nout + i] = acc;
  }
}
"""

SAME = """
#define IN_CH 2
constexpr int KS = 5;
constexpr int HALF = KS / 2;
__constant__ float coef[4][IN_CH][KS];
extern "C" __global__ void k(float* out, const float* in, int len) {
  int pos = blockIdx.x * blockDim.x + threadIdx.x;
  int och = blockIdx.z;
  if (pos >= len) return;
  float total = 0.25f;
#pragma unroll
  for (int ic = 0; ic < IN_CH; ic++) {
    for (int tap = 0; tap < KS; tap++) {
      int src = pos - HALF + tap;
      float v = (src < 0 || src >= len) ? 0.0f : in[ic * len + src];
      total += coef[och][ic][tap] * v;
    }
  }
  out[och * len + pos] = total;
}
"""

CIN = 3
SPELLINGS: dict[str, Spelling] = {
    "valid_channels_argument_global_filter": Spelling(
        VALID, ["ceil_div(nout, 64)", "6"], "64", {"cin": "cin", "n": "n", "nout": "nout"},
        {"cin": CIN, "n": N, "nout": N - 3}, "out.data(), in.data(), filt.data(), 3, n, n - 3",
        6 * (N - 3), CIN * N, "filt",
        lambda t0, items: t0 + items - 1 < N - 3),
    "same_false_side_constant_filter_z": Spelling(
        SAME, ["ceil_div(len, 96)", "1", "4"], "96", {"len": "len"}, {"len": N},
        "out.data(), in.data(), n", 4 * N, 2 * N, "coef",
        lambda t0, items: t0 - 2 >= 0 and t0 + items - 1 + 2 < N),
}


def lift_spelling(name: str) -> LiftedSource:
    sp = SPELLINGS[name]
    return lift_kernel(sp.source, entry="k", grid=sp.grid, block=[sp.block], scalars=sp.scalars)


def finding(lifted: LiftedSource, transform: str) -> Any:
    return next(f for f in lifted.findings if f.transform == transform)


# -- what lifts ----------------------------------------------------------------------------


def test_conv1d_mix7_has_an_interior_copy_without_the_tests() -> None:
    lifted = offline_template(_folder("conv1d_mix7")).lifted
    assert finding(lifted, NOTE).applied, lifted.notes
    src = lifted.source
    head, rest = src.split("  if (wb_full) {\n", 1)
    fast, general = rest.split("  } else {\n", 1)
    # the thread's test: every slot under the window loads' own checks; on the device
    # the warp's vote (a uniform branch), on the host (no warps) the lane's own
    assert "wb_full = wb_full && ((t * T_ITEMS + wb_ur) < (size_t)T) && " in head
    assert head.endswith("#ifdef __CUDA_ARCH__\n  wb_full = __all_sync(__activemask(), "
                         "wb_full);\n#endif\n")
    # the interior copy: slots loaded unconditionally, no item check, the padding test
    # known true; the knob's unroll on its channel loop
    assert "wb_win[wb_j] = src[(size_t)c * T + " in fast
    assert "(size_t)T)) {" not in fast and "if ((true || (s[wb_u] >= 0 && s[wb_u] < T)))" \
        in fast
    assert "#pragma unroll (wb_mix_unroll)\n#endif\nfor (int c = 0; c < CH; ++c)" in fast
    # the general copy as lifted before, its channel loop not unrolled
    assert "if (s[wb_u] >= 0 && s[wb_u] < T) {" in general
    assert "wb_win[wb_j] = (float)0;" in general
    assert "\n#pragma unroll 1\nfor (int c = 0; c < CH; ++c)" in general


def test_the_spellings_lift_an_interior_copy() -> None:
    valid = lift_spelling("valid_channels_argument_global_filter")
    assert finding(valid, NOTE).applied and finding(valid, "T_ITEMS").applied, valid.notes
    # no padding test: the interior is every item live
    assert "wb_full = wb_full && ((i * T_ITEMS + wb_ur) < nout);" in valid.source
    same = lift_spelling("same_false_side_constant_filter_z")
    assert finding(same, NOTE).applied and finding(same, "T_ITEMS").applied, same.notes
    # the read on the false side: the condition known false in the interior copy
    assert "(false && ((src[wb_u] < 0 || src[wb_u] >= len))) ? 0.0f : wb_win[" in same.source
    assert "&& !((((int)((pos * T_ITEMS + wb_ur) - HALF + tap)) < 0 || " in same.source
    # the author's pragma on the channel loop stays with it in each copy
    assert same.source.count("#pragma unroll\n  for (int ic = 0; ic < IN_CH; ic++)") == 2


_ONE = """
extern "C" __global__ void k(float* out, const float* in, const float* f, const int* on,
                             int n) {
  int t = blockIdx.x * 128 + threadIdx.x;
  int o = blockIdx.y;
  %s
}
"""

# name -> (body, the refusal's words, its line)
REFUSED: dict[str, tuple[str, str, int]] = {
    "a_mask_read_in_the_condition": ("""if (t < n) {
    float acc = 0.0f;
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 3; ++k) {
        const int s = t + k - 1;
        if (s >= 0 && s < n && on[c]) acc += f[(o * 4 + c) * 3 + k] * in[c * n + s];
      }
    out[o * n + t] = acc;
  }""", "`on[c]` reads memory", 11),
    "a_bound_declared_in_the_channel_loop": ("""if (t < n) {
    float acc = 0.0f;
    for (int c = 0; c < 4; ++c) {
      const int hi = n - c;
      for (int k = 0; k < 3; ++k) {
        const int s = t + k - 1;
        if (s >= 0 && s < hi) acc += f[(o * 4 + c) * 3 + k] * in[c * n + s];
      }
    }
    out[o * n + t] = acc;
  }""", "`hi` (read by `s >= 0 && s < hi`) is declared or assigned inside the loop", 12),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_conditions_the_thread_cannot_test_first_are_refused_with_the_line(name: str) -> None:
    body, reason, row = REFUSED[name]
    lifted = lift_kernel(_ONE % body, entry="k", grid=["ceil_div(n, 128)", "8"],
                         block=["128"], scalars={"n": "n"})
    refusal = finding(lifted, NOTE)
    assert not refusal.applied and reason in refusal.reason, refusal.reason
    assert refusal.line == row
    # the window and the channels still lift, with the general copy alone
    assert finding(lifted, "T_ITEMS").applied, lifted.notes
    assert "wb_full" not in lifted.source and "#pragma unroll 1\n" not in lifted.source


# -- host runs -----------------------------------------------------------------------------

_MAIN = r"""
int main() {
  const int n = %(n)d;
  std::vector<float> in(%(in_size)d), out(%(out_size)d, -12345.5f), filt(256);
  // values that are not short binary fractions: a changed summation order shows
  for (int i = 0; i < %(in_size)d; ++i) in[i] = (float)((i * 37) %% 101 - 50) / 7.0f;
  for (int i = 0; i < 256; ++i) filt[i] = (float)((i * 13) %% 23 - 11) / 9.0f;
  for (size_t i = 0; i < sizeof(coef) / sizeof(float); ++i)
    ((float*)coef)[i] = (float)((i * 7) %% 17 - 8) / 3.0f;
  wb_launch({%(gx)d, %(gy)d, %(gz)d}, {%(bx)d, 1, 1}, [&] { k(%(args)s); });
  std::printf("%%ld\n", wb_interior);
  for (float v : out) std::printf("%%.9g\n", v);
  return 0;
}
"""

FLAG_TEST = "  if (wb_full) {"


def host_run(name: str, source: str, grid: list[int], block: int, work: Path,
             flags: tuple[str, ...]) -> tuple[int, list[float]]:
    """(threads that took the interior copy, the outputs)."""
    sp = SPELLINGS[name]
    grid = [*grid, 1, 1][:3]
    extra = "static float coef[1];\n" if sp.filt != "coef" else ""
    main = _MAIN % {"n": N, "in_size": sp.in_size, "out_size": sp.out_size, "gx": grid[0],
                    "gy": grid[1], "gz": grid[2], "bx": block, "args": sp.args}
    counted = source.replace(FLAG_TEST, "  if (wb_full) { ++wb_interior;")
    program = COOPERATIVE_BLOCK + "#define __constant__\nstatic long wb_interior = 0;\n" + \
        extra + counted + main
    # x86-64 g++ without -march has no fused multiply-add: any other order shows in the bits
    lines = run_on_host(work, "host", program, flags=flags).split()
    return int(lines[0]), [float(v) for v in lines[1:]]


def interior_threads(name: str, config: dict[str, Any], grid: list[int], block: int) -> int:
    """Threads (over the launch) whose window the interior test accepts, by the kernel's
    own extent: live and inside the signal at every item and tap."""
    sp = SPELLINGS[name]
    items = int(config["T_ITEMS"])
    bound = N - 3 if "nout" in sp.env else N
    threads = sum(1 for t in range(grid[0] * block)
                  if t * items < bound and sp.interior(t * items, items))
    return threads * grid[1] * ([*grid, 1][2])


def spelling_configs(name: str) -> list[dict[str, Any]]:
    template = lifted_template(lift_spelling(name))
    env = SPELLINGS[name].env
    default = dict(template.default_config())
    # the default run: the default and four items of two channels over 32 threads (both
    # copies in every block); the full matrix adds the all-ends corners
    return [default, *end_configs(template, env),
            {**default, "T_ITEMS": 4, "CO_PER_THREAD": 2, "BLOCK_THREADS": 32}]


@pytest.mark.timeout(300)
@needs_gxx
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_interior_spellings_give_the_kernels_output_bit_for_bit_through_both_copies(
        name: str, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    sp = SPELLINGS[name]
    template = lifted_template(lift_spelling(name))
    with tempfile.TemporaryDirectory() as tmp:
        written = template.launch_for(template.default_config(), sp.env)
        _, want = host_run(name, sp.source, list(written.grid), int(sp.block), Path(tmp),
                           host_flags)
        assert len(want) == sp.out_size and -12345.5 not in want
        for config in host_sample(spelling_configs(name)):
            assert template.space(sp.env).rejection(config) is None, config
            launch = template.launch_for(config, sp.env)
            grid = [int(g) for g in launch.grid]
            count, got = host_run(name, template.render(config, "fp32").source, grid,
                                  launch.block[0], Path(tmp), host_flags)
            assert got == want, config
            expected = interior_threads(name, config, grid, launch.block[0])
            assert count == expected > 0, (config, count, expected)


# -- ptxas ---------------------------------------------------------------------------------

_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_interior_spellings_corners_compile_without_spills(name: str, tmp_path: Path) -> None:
    template = lifted_template(lift_spelling(name))
    ends = end_configs(template, SPELLINGS[name].env)
    # the default run: the last corner (every knob at its far end the space admits)
    for i, config in enumerate(ends if FULL_MATRIX else ends[-1:]):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"end{i}")
        assert _SPILLS.findall(log) == [("0", "0")], f"{config}:\n{log}"
