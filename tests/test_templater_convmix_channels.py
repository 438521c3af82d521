"""Output channels per thread for channel-mixing kernels (workbench/templater/conv_mix.py).

CO_PER_THREAD lifts where a kernel's output channel is a whole grid dimension and its inner
loops accumulate a filter entry picked by the channel (warp-uniform) times thread-varying
data that does not depend on it. Checked on benchmarks/corpus_compute_unseen7/conv1d_mix7
(spent) and on two spellings of our own: a 2-D 3x3 convolution mixing 3 input planes into 8
output planes on grid z, its filter and bias in global memory, a flat pixel index over a 1-D
``#ifndef`` block, an early return, a weight local per tap and ``fmaf``; a channels-last
1-D convolution with ``constexpr`` sizes, the channel on grid y through an ``int`` cast, the
taps outside the input channels, a row pointer per tap and ``continue`` at the edges. Each
gives the kernel's outputs bit for bit on the host (g++) at the default, the all-ends corners
and sampled configs (``host_sample``). What the analysis cannot follow is refused with the
line. ptxas -v on the corners: tests/test_templater_convmix_ptxas.py.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from held_back_unseen7 import SET, _folder
from helpers_templater import (
    COOPERATIVE_BLOCK,
    corner_configs,
    end_configs,
    host_sample,
    lifted_template,
    needs_gxx,
    run_on_host,
)
from test_corpus_unseen3 import (
    _inputs,
    _run,
    host_flags,  # noqa: F401  (session fixture: precompiled headers)
)

from workbench.templater import LiftedSource, lift_kernel, offline_template

KNOB = "CO_PER_THREAD"


@dataclass(frozen=True)
class Spelling:
    source: str
    grid: list[str]
    block: str
    args: str  # the host call's arguments
    in_size: int
    out_size: int
    filt_size: int = 0  # a global filter the host fills
    constant: str = ""  # a __constant__ filter the host fills


N, H, W = 53, 7, 11  # samples of the 1-D spelling; rows and columns of the 2-D one

SPELLINGS: dict[str, Spelling] = {
    "conv2d_nchw_out_planes_on_z_global_filter": Spelling("""
#ifndef BLK
#define BLK 64
#endif
#define CIN 3
#define COUT 8
extern "C" __global__ void k(float* out, const float* in, const float* filt,
                             const float* bias, int h, int w) {
  int p = blockIdx.x * BLK + threadIdx.x;
  int co = blockIdx.z;
  if (p >= h * w) return;
  int y = p / w, x = p - y * w;
  float s = bias[co];
  for (int ci = 0; ci < CIN; ci++)
    for (int ky = 0; ky < 3; ky++)
      for (int kx = 0; kx < 3; kx++) {
        const int yy = y + ky - 1, xx = x + kx - 1;
        const bool inside = yy >= 0 && yy < h && xx >= 0 && xx < w;
        const float v = inside ? in[(ci * h + yy) * w + xx] : 0.0f;
        const float wt = filt[((co * CIN + ci) * 3 + ky) * 3 + kx];
        s = fmaf(wt, v, s);
      }
  out[(co * h + y) * w + x] = s > 0.0f ? s : 0.1f * s;
}
""", ["ceil_div(h * w, 64)", "1", "8"], "64", "out.data(), in.data(), filt.data(), "
        "bias.data(), h, w", 3 * H * W, 8 * H * W, 8 * 3 * 9 + 8),
    "conv1d_channels_last_constexpr_taps_outside": Spelling("""
constexpr int CI = 4;
constexpr int CO = 4;
constexpr int KW = 5;
__constant__ float wk[CO][KW][CI];
extern "C" __global__ void k(float* y, const float* x, int n) {
  const int t = threadIdx.x + 96 * blockIdx.x;
  const int oc = (int)blockIdx.y;
  if (t < n) {
    float a = 0.0f;
    for (int j = 0; j < KW; ++j) {
      const int src = t + j - KW / 2;
      if (src < 0 || src >= n) continue;
      const float* row = x + (size_t)src * CI;
      for (int c = 0; c < CI; ++c) a = a + wk[oc][j][c] * row[c];
    }
    y[(size_t)t * CO + oc] = a;
  }
}
""", ["ceil_div(n, 96)", "4"], "96", "y.data(), x.data(), n", N * 4, N * 4,
        constant="wk"),
}

SCALARS = {"conv2d_nchw_out_planes_on_z_global_filter": {"h": "h", "w": "w"},
           "conv1d_channels_last_constexpr_taps_outside": {"n": "n"}}
ENVS = {"conv2d_nchw_out_planes_on_z_global_filter": {"h": H, "w": W, "elem_bytes": 4},
        "conv1d_channels_last_constexpr_taps_outside": {"n": N, "elem_bytes": 4}}


def lift_spelling(name: str) -> LiftedSource:
    sp = SPELLINGS[name]
    return lift_kernel(sp.source, entry="k", grid=sp.grid, block=[sp.block],
                       scalars=SCALARS[name])


def applied(lifted: LiftedSource, knob: str) -> bool:
    return any(f.transform == knob and f.applied for f in lifted.findings)


# -- what lifts ----------------------------------------------------------------------------


def test_conv1d_mix7_lifts_output_channels_per_thread_with_its_register_cap() -> None:
    lifted = offline_template(_folder("conv1d_mix7")).lifted
    assert applied(lifted, KNOB), lifted.notes
    spec = next(p.spec for p in lifted.params if p.name == KNOB)
    assert spec["values"] == [1, 2, 4, 8, 16] and spec["default"] == 1
    assert lifted.grid[1] == "16 // CO_PER_THREAD"
    # one accumulator per channel and item, the items' tap offsets and their input window
    # (tests/test_templater_convmix_window.py): a register cap that leaves 24 more
    assert "MIN_BLOCKS_PER_SM == 0 or (BLOCK_THREADS * MIN_BLOCKS_PER_SM + 127) // 128 * " \
        "128 * (CO_PER_THREAD * T_ITEMS + T_ITEMS + 2 * (T_ITEMS + 6) + 2 * CO_PER_THREAD " \
        "+ 24) <= 65536" in lifted.constraints
    # the channel loop's unroll; at 8 trips or more, with a cap of 128 registers or more
    assert next(p.spec["values"] for p in lifted.params if p.name == "MIX_UNROLL") == \
        [0, 1, 2, 4, 8, 16]
    assert "MIX_UNROLL < 8 or (MIN_BLOCKS_PER_SM > 0 and BLOCK_THREADS * " \
        "MIN_BLOCKS_PER_SM <= 512)" in lifted.constraints
    assert "#pragma unroll (wb_mix_unroll)\n#endif\nfor (int c = 0; c < CH; ++c)" in \
        lifted.source
    # the tap loop inside it, the window's: unrolled whole in every config (no knob)
    assert "\n#pragma unroll\nfor (int k = 0; k < TAPS; ++k)" in lifted.source
    assert "TAP_UNROLL" not in {p.name for p in lifted.params}
    # all 16 channels in one thread: the first channel is the constant 0
    assert "const int o = (CO_PER_THREAD == 16 ? 0 : blockIdx.y * CO_PER_THREAD);" in \
        lifted.source
    # the input sample is loaded once (into the items' window) for every channel
    assert "acc[wb_q][wb_u] += weights[((o + wb_q) * CH + c) * TAPS + k] * " \
        "wb_win[wb_u + (k) - (0)];" in lifted.source


def test_the_spellings_lift_the_channels_on_their_grid_dimension() -> None:
    planes = lift_spelling("conv2d_nchw_out_planes_on_z_global_filter")
    assert applied(planes, KNOB), planes.notes
    assert planes.grid[2] == "8 // CO_PER_THREAD" and planes.grid[1] == "1"
    # the weight local of each tap becomes one per channel; the input value stays one
    assert "float wt[CO_PER_THREAD];" in planes.source
    assert "const float v = inside ?" in planes.source
    last = lift_spelling("conv1d_channels_last_constexpr_taps_outside")
    assert applied(last, KNOB), last.notes
    assert last.grid[1] == "4 // CO_PER_THREAD"
    assert next(p.spec["values"] for p in last.params if p.name == KNOB) == [1, 2, 4]
    assert "const auto wb_v0 = row[c];" in last.source


def test_a_spatial_axis_on_the_grid_is_not_taken_for_channels() -> None:
    """Rows on grid y: the data read follows the row and the filter does not: no lift, no
    finding (it is not the family)."""
    source = """
extern "C" __global__ void k(float* out, const float* in, const float* f, int w) {
  int x = blockIdx.x * 128 + threadIdx.x;
  int r = blockIdx.y;
  if (x >= w) return;
  float acc = 0.0f;
  for (int i = 0; i < 3; ++i) acc += f[i] * in[(r + i) * w + x];
  out[r * w + x] = acc;
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(w, 128)", "16"], block=["128"],
                         scalars={"w": "w"})
    assert not [f for f in lifted.findings if f.transform == KNOB], lifted.notes


_MIX = """
__constant__ float wt[8 * 4];
extern "C" __global__ void k(float* out, const float* in, int n) {
  int t = blockIdx.x * 128 + threadIdx.x;
  int o = blockIdx.y;
  if (t >= n) return;
  float acc = 0.0f;
%s
}
"""

# name -> (body, the refusal's words, its line)
REFUSED: dict[str, tuple[str, str, int]] = {
    "loop_bound_follows_the_channel": ("""  for (int c = 0; c < 4; ++c)
    acc += wt[o * 4 + c] * in[c * n + t];
  for (int r = 0; r < o % 3; ++r) acc *= 0.5f;
  out[o * n + t] = acc;""", "the loop's condition `r < o % 3` depends on the channel", 10),
    "write_at_a_place_without_the_channel": ("""  for (int c = 0; c < 4; ++c)
    acc += wt[o * 4 + c] * in[c * n + t];
  out[o * n + t] = acc;
  if (o == 0) out[8 * n + t] = 1.0f;""", "is written at a place that does not depend on the "
                                        "channel", 11),
    "reads_what_it_writes": ("""  for (int c = 0; c < 4; ++c)
    acc += wt[o * 4 + c] * in[c * n + t];
  out[o * n + t] = acc + out[t];""", "reads memory the kernel writes", 10),
    "grid_extent_known_at_run_time": ("""  for (int c = 0; c < 4; ++c)
    acc += wt[o * 4 + c] * in[c * n + t];
  out[o * n + t] = acc;""", "is no literal", 5),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_channel_kernels_the_analysis_cannot_follow_are_refused_with_the_line(name: str) -> None:
    body, reason, row = REFUSED[name]
    grid_y = "n" if name == "grid_extent_known_at_run_time" else "8"
    lifted = lift_kernel(_MIX % body, entry="k", grid=["ceil_div(n, 128)", grid_y],
                         block=["128"], scalars={"n": "n"})
    refusals = [f for f in lifted.findings if f.transform == KNOB and not f.applied]
    assert refusals, lifted.notes
    assert reason in refusals[0].reason, refusals[0].reason
    assert refusals[0].line == row
    assert KNOB not in {p.name for p in lifted.params}


# -- host runs -----------------------------------------------------------------------------

_MAIN = r"""
int main() {
  const int n = %(n)d, h = %(h)d, w = %(w)d;
  (void)n; (void)h; (void)w;
  std::vector<float> in(%(in_size)d), x(%(in_size)d), out(%(out_size)d, -7.0f),
      y(%(out_size)d, -7.0f), filt(%(filt_size)d + 1), bias(8);
  // values that are not short binary fractions: a changed summation order shows
  for (int i = 0; i < %(in_size)d; ++i) in[i] = x[i] = (float)((i * 37) %% 101 - 50) / 7.0f;
  for (int i = 0; i < %(filt_size)d; ++i) filt[i] = (float)((i * 13) %% 23 - 11) / 9.0f;
  for (int i = 0; i < 8; ++i) bias[i] = (float)(i - 3) / 5.0f;
  %(fill)s
  wb_launch({%(gx)d, %(gy)d, %(gz)d}, {%(bx)d, 1, 1}, [&] { k(%(args)s); });
  for (float v : %(result)s) std::printf("%%.9g\n", v);
  return 0;
}
"""

_FILL = ("for (size_t i = 0; i < sizeof(%(c)s) / sizeof(float); ++i) "
         "((float*)%(c)s)[i] = (float)((i * 7) %% 17 - 8) / 3.0f;")


def host_run(name: str, source: str, grid: list[int], block: int, work: Path,
             flags: tuple[str, ...]) -> list[float]:
    sp = SPELLINGS[name]
    grid = [*grid, 1, 1][:3]
    main = _MAIN % {"n": N, "h": H, "w": W, "in_size": sp.in_size, "out_size": sp.out_size,
                    "filt_size": sp.filt_size, "gx": grid[0], "gy": grid[1], "gz": grid[2],
                    "bx": block, "args": sp.args, "result": sp.args.split(".")[0],
                    "fill": _FILL % {"c": sp.constant} if sp.constant else ""}
    program = COOPERATIVE_BLOCK + "#define __constant__\n" + source + main
    # x86-64 g++ without -march has no fused multiply-add: each product is rounded as the
    # kernel as written rounds it, so any other summation order would show in the bits
    printed = run_on_host(work, "host", program, flags=flags)
    return [float(v) for v in printed.split()]


def spelling_configs(name: str) -> list[dict[str, Any]]:
    template = lifted_template(lift_spelling(name))
    default = template.default_config()
    # the default run checks the mixed config and the last all-ends corner (the most
    # channels a thread)
    default_first, *ends = corner_configs(template, ENVS[name])
    return [default_first, {**default, KNOB: 2}, *ends]


@pytest.mark.timeout(300)
@needs_gxx
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_channel_spellings_give_the_kernels_output_bit_for_bit(
        name: str, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    sp = SPELLINGS[name]
    template = lifted_template(lift_spelling(name))
    env = ENVS[name]
    with tempfile.TemporaryDirectory() as tmp:
        plain = lift_kernel(sp.source, entry="k", grid=sp.grid, block=[sp.block],
                            scalars=SCALARS[name])
        written = template.launch_for(template.default_config(), env)
        want = host_run(name, sp.source, list(written.grid), int(sp.block), Path(tmp),
                        host_flags)
        assert plain.params and len(want) == sp.out_size and -7.0 not in want
        for config in host_sample(spelling_configs(name)[1:]):
            assert template.space(env).rejection(config) is None, config
            launch = template.launch_for(config, env)
            got = host_run(name, template.render(config, "fp32").source, list(launch.grid),
                           launch.block[0], Path(tmp), host_flags)
            assert got == want, config


#: conv1d_mix7's configs beyond the corners: two channels a thread over 96 threads, two
#: consecutive items; eight channels over 160 threads with a register cap of two blocks and
#: the channel loop unrolled eight times.
MIX7_EXTRAS = [{"BLOCK_THREADS": 96, "CO_PER_THREAD": 2, "T_ITEMS": 2},
               {"BLOCK_THREADS": 160, "CO_PER_THREAD": 8, "MIN_BLOCKS_PER_SM": 2,
                "MIX_UNROLL": 8}]


@pytest.mark.timeout(300)
@needs_gxx
def test_conv1d_mix7_lift_matches_the_kernel_bit_for_bit(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    plain = _folder("conv1d_mix7")
    template = offline_template(plain).template
    env = plain.env(plain.check_shape, "fp32")
    want = SET.plain_outputs("conv1d_mix7", tmp_path / "plain", host_flags)
    default = template.default_config()
    # the default run: the first extra and the last all-ends corner (16 channels a thread)
    configs = [*({**default, **e} for e in MIX7_EXTRAS), *end_configs(template, env)]
    inputs = _inputs(plain)
    for i, config in enumerate(host_sample(configs)):
        assert template.space(env).rejection(config) is None, config
        got = _run(plain, SET.host_source(template.render(config, "fp32").source),
                   template.launch_for(config, env), inputs, tmp_path / f"lift{i}", host_flags)
        # the same taps in the same order per output: the same bits
        assert np.array_equal(got["out"], want["out"]), config
