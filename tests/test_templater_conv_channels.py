"""Convolutions with a channel loop around the taps (workbench/templater/conv.py).

The window lifts (OUT_Y, OUT_X, USE_SMEM) follow a 2-D window nested with one loop over
channels / planes, kept as written at its depth, so each output sums its taps in the
written order. Checked on benchmarks/corpus_compute_unseen4/conv5_channels (channels
outside, a read-only ``pixel_or_zero`` helper, a flat ``__constant__`` filter) and on three
spellings of our own: channels the innermost loop with a 3-D ``__constant__`` filter, NCHW
reads at ``(c * h + r) * w + q``, ``#ifndef`` block sizes and the check around the work; a
run-time channel count with a pointer filter at ``c * 25``, a ``constexpr`` radius, a
ternary zero padding, ``a = a + w * v`` and ``blockDim`` offsets (its shared tile refused:
a tile per channel needs a compile-time count); channels between the row and the column
loops, a clamped row in a local, a row pointer per channel and ``s = fmaf(v, w, s)`` (kept
fused). Each lifts, and (host run with g++) gives the kernel's outputs exactly, bit for
bit, at the default, the all-ends corners and sampled configs (``host_sample``);
conv5_channels is also compared with its expert template's outputs. A channel loop that
writes memory, an accumulator scaled between channels, and a helper that writes memory are
refused with the line.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from held_back_unseen4 import HOST_EXTRAS, SET, _folder
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


@dataclass(frozen=True)
class Spelling:
    source: str
    block: list[str]
    args: str  # the host call's arguments
    channels: int  # input planes
    constant: str = ""  # a __constant__ filter the host fills
    out_planes: int = 1  # output planes (the grid's z)


SPELLINGS: dict[str, Spelling] = {
    "channels_inner_3d_constant_nchw": Spelling("""
#ifndef TX
#define TX 32
#endif
#ifndef TY
#define TY 8
#endif
#define NC 3
#define KR 1
__constant__ float taps[NC][2 * KR + 1][2 * KR + 1];
extern "C" __global__ void k(float* out, const float* img, int h, int w) {
  const int col = threadIdx.x + blockIdx.x * TX;
  const int row = threadIdx.y + blockIdx.y * TY;
  if (col < w && row < h) {
    float sum = 0.f;
    for (int u = -KR; u <= KR; u++) {
      for (int v = -KR; v <= KR; v++) {
        for (int c = 0; c < NC; c++) {
          const int r = row + u, q = col + v;
          if (r >= 0 && r < h && q >= 0 && q < w) sum += taps[c][u + KR][v + KR] * img[(c * h + r) * w + q];
        }
      }
    }
    out[row * w + col] = sum;
  }
}
""", ["32", "8"], "out.data(), in.data(), h, w", 3, "taps"),
    "channels_outer_runtime_count_pointer_filter": Spelling("""
constexpr int RAD = 2;
extern "C" __global__ void k(float* out, const float* in, const float* filt, int nc, int h,
                             int w) {
  int gx = blockIdx.x * blockDim.x + threadIdx.x;
  int gy = blockIdx.y * blockDim.y + threadIdx.y;
  if (gx >= w || gy >= h) return;
  float a = 0.0f;
  for (int c = 0; c < nc; ++c) {
    const float* src = in + (size_t)c * h * w;
    const float* f = filt + c * 25;
    for (int i = 0; i < 2 * RAD + 1; ++i)
      for (int j = 0; j < 2 * RAD + 1; ++j) {
        int yy = gy + i - RAD;
        int xx = gx + j - RAD;
        a = a + f[i * 5 + j] * ((yy >= 0 && yy < h && xx >= 0 && xx < w) ? src[yy * w + xx] : 0.0f);
      }
  }
  out[gy * w + gx] = a;
}
""", ["16", "16"], "out.data(), in.data(), filt.data(), nc, h, w", 2),
    "channels_middle_clamped_row_pointer": Spelling("""
extern "C" __global__ void k(float* out, const float* in, const float* filt, int h, int w) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 4 + threadIdx.y;
  if (y < h && x < w) {
    float s = 0.0f;
    for (int i = 0; i < 3; ++i) {
      const int r = min(max(y + i - 1, 0), h - 1);
      for (int c = 0; c < 2; ++c) {
        const float* p = in + (c * h + r) * w;
        for (int j = 0; j < 3; ++j)
          s = fmaf(p[min(max(x + j - 1, 0), w - 1)], filt[(i * 2 + c) * 3 + j], s);
      }
    }
    out[y * w + x] = s;
  }
}
""", ["32", "4"], "out.data(), in.data(), filt.data(), h, w", 2),
    "output_channels_on_grid_z": Spelling("""
#define IC 3
#define K 3
__constant__ float wts[2][IC][K][K];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 16 + threadIdx.x;
  const int y = blockIdx.y * 16 + threadIdx.y;
  const int oc = blockIdx.z;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
#pragma unroll
  for (int c = 0; c < IC; ++c) {
#pragma unroll
    for (int ky = 0; ky < K; ++ky)
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const int iy = y + ky - 1, ix = x + kx - 1;
        const float v = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? __ldg(&in[(c * h + iy) * w + ix]) : 0.0f;
        acc += wts[oc][c][ky][kx] * v;
      }
  }
  out[(oc * h + y) * w + x] = acc;
}
""", ["16", "16", "1"], "out.data(), in.data(), h, w", 3, "wts", 2),
}

H, W = 29, 45
ENV = {"h": H, "w": W, "elem_bytes": 4}


def lift(source: str, block: list[str], out_planes: int = 1) -> LiftedSource:
    grid = [f"ceil_div(w, {block[0]})", f"ceil_div(h, {block[1]})"]
    return lift_kernel(source, entry="k", grid=grid + [str(out_planes)] * (len(block) - 2),
                       block=block, scalars={"h": "h", "w": "w"})


def lift_spelling(name: str) -> LiftedSource:
    sp = SPELLINGS[name]
    return lift(sp.source, sp.block, sp.out_planes)


def applied(lifted: LiftedSource, knob: str) -> bool:
    return any(f.transform == knob and f.applied for f in lifted.findings)


# -- what lifts ----------------------------------------------------------------------------


def test_conv5_channels_lifts_outputs_per_thread_and_a_tile_per_channel() -> None:
    result = offline_template(_folder("conv5_channels"))
    lifted = result.lifted
    assert {"OUT_X", "OUT_Y", "USE_SMEM"} <= {p.name for p in lifted.params}, lifted.notes
    assert lifted.grid == ("ceil_div(w, BLOCK_X * OUT_X)", "ceil_div(h, BLOCK_Y * OUT_Y)")
    # four planes' tiles with the 2-pixel apron, in static shared memory
    assert "USE_SMEM != 1 or 4 * 4 * (BLOCK_Y * OUT_Y + 4) * (BLOCK_X * OUT_X + 4) <= 49152" \
        in lifted.constraints
    # or one tile, refilled for each plane
    assert "USE_SMEM != 2 or 4 * (BLOCK_Y * OUT_Y + 4) * (BLOCK_X * OUT_X + 4) <= 49152" \
        in lifted.constraints
    # the channel loop is kept as written around the marched rows
    assert "for (int ch = 0; ch < CH; ch++) {" in lifted.source
    assert "wb_tile[4][(BLOCK_Y * OUT_Y + 4)][(BLOCK_X * OUT_X + 4)]" in lifted.source
    space = result.template.space({"h": 4096, "w": 4096, "elem_bytes": 4})
    tile = {"BLOCK_X": 32, "BLOCK_Y": 8, "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 1,
            "MIN_BLOCKS_PER_SM": 0}
    assert space.rejection(tile) is None  # 4 * 4 * 36 * 68 = 39168 bytes
    assert space.rejection({**tile, "OUT_X": 4}) is not None  # 4 * 4 * 36 * 132 > 48 KiB
    assert space.rejection({**tile, "OUT_X": 4, "USE_SMEM": 2}) is None  # 4 * 36 * 132


def test_the_spellings_lift_the_window_around_their_channel_loop() -> None:
    inner = lift_spelling("channels_inner_3d_constant_nchw")
    assert all(applied(inner, k) for k in ("OUT_X", "OUT_Y", "USE_SMEM")), inner.notes
    assert "wb_tile[3][" in inner.source
    assert inner.block == ("TX", "TY")
    middle = lift_spelling("channels_middle_clamped_row_pointer")
    assert all(applied(middle, k) for k in ("OUT_X", "OUT_Y", "USE_SMEM")), middle.notes
    assert "for (int c = 0; c < 2; ++c) {  // the channels in the written order" in middle.source
    assert "wb_acc[wb_k][wb_q] = fmaf((filt[((i - wb_k) * 2 + c) * 3 + (j - wb_q)]), wb_v, " \
        "wb_acc[wb_k][wb_q])" in middle.source
    runtime = lift_spelling("channels_outer_runtime_count_pointer_filter")
    assert applied(runtime, "OUT_X") and applied(runtime, "OUT_Y"), runtime.notes
    refused = [f for f in runtime.findings if f.transform == "USE_SMEM" and not f.applied]
    assert refused and "known only at run time" in refused[0].reason
    assert refused[0].line == 9
    # one tile refilled per channel needs no compile-time count
    assert applied(runtime, "USE_SMEM=2"), runtime.notes
    assert next(p for p in runtime.params if p.name == "USE_SMEM").spec["values"] == [0, 2]
    assert "const bool wb_live = !(gx >= w || gy >= h);" in runtime.source
    not_outer = [f for f in inner.findings if f.transform == "USE_SMEM=2"]
    assert not_outer and "not the outermost loop" in not_outer[0].reason
    on_z = lift_spelling("output_channels_on_grid_z")
    assert all(applied(on_z, k) for k in ("OUT_X", "OUT_Y", "USE_SMEM")), on_z.notes
    assert on_z.block == ("BLOCK_X", "BLOCK_Y", "1") and on_z.grid[2] == "2"


# name -> (source, the refusal's words, its line)
REFUSED: dict[str, tuple[str, str, int]] = {
    "channel_loop_writes_memory": ("""
#define CH 3
__constant__ float wt[CH * 9];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int c = 0; c < CH; ++c) {
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        if (y + i < h && x + j < w) acc += wt[c * 9 + i * 3 + j] * in[(c * h + y + i) * w + x + j];
    out[(c + 1) * h * w + y * w + x] = acc;
  }
  out[y * w + x] = acc;
}
""", "the fold writes `out[(c + 1) * h * w + y * w + x]`: it may write only locals", 13),
    "accumulator_scaled_between_channels": ("""
#define CH 3
__constant__ float wt[CH * 9];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int c = 0; c < CH; ++c) {
    acc *= 0.5f;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        if (y + i < h && x + j < w) acc += wt[c * 9 + i * 3 + j] * in[(c * h + y + i) * w + x + j];
  }
  out[y * w + x] = acc;
}
""", "is neither a declaration nor the inner window loop", 10),
    "helper_writes_memory": ("""
#define CH 2
__constant__ float wt[CH * 9];
__device__ float tap(const float* p, float* seen, int y, int x, int h, int w) {
  if (y >= h || x >= w) return 0.0f;
  seen[0] = 1.0f;
  return p[y * w + x];
}
extern "C" __global__ void k(float* out, const float* in, float* seen, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int c = 0; c < CH; ++c)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        acc += wt[c * 9 + i * 3 + j] * tap(in + c * h * w, seen, y + i, x + j, h, w);
  out[y * w + x] = acc;
}
""", "not read-only: `seen[0] = 1.0f` writes memory (line 6)", 17),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_channel_loops_the_analysis_cannot_follow_are_refused_with_the_line(name: str) -> None:
    source, reason, row = REFUSED[name]
    lifted = lift(source, ["16", "16"])
    refusals = [f for f in lifted.findings if f.transform == "OUT_Y" and not f.applied]
    assert refusals, lifted.notes
    assert reason in refusals[0].reason, refusals[0].reason
    assert refusals[0].line == row
    assert not {"OUT_Y", "OUT_X", "USE_SMEM"} & {p.name for p in lifted.params}


def test_a_tile_is_not_offered_where_the_value_reads_a_local_of_the_threads_own_point() -> None:
    """A row offset the thread computed from its own point before the loops would be the
    wrong one where the block fills a tile for its first point: no USE_SMEM (either mode),
    the outputs per thread stay."""
    source = """
#define CH 2
__constant__ float wt[CH * 9];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 16 + threadIdx.x;
  const int y = blockIdx.y * 16 + threadIdx.y;
  const int top = y - 1;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int c = 0; c < CH; ++c)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const int r = top + i, q = x + j - 1;
        if (r >= 0 && r < h && q >= 0 && q < w) acc += wt[c * 9 + i * 3 + j] * in[(c * h + r) * w + q];
      }
  out[y * w + x] = acc;
}
"""
    lifted = lift(source, ["16", "16"])
    assert applied(lifted, "OUT_X") and applied(lifted, "OUT_Y"), lifted.notes
    assert "USE_SMEM" not in {p.name for p in lifted.params}
    for knob, row in (("USE_SMEM", 8), ("USE_SMEM=2", 10)):
        refused = [f for f in lifted.findings if f.transform == knob and not f.applied]
        assert refused and "reads top, derived from the thread's own point" in \
            refused[0].reason, lifted.notes
        assert refused[0].line == row


# -- host runs -----------------------------------------------------------------------------

_MAIN = r"""
int main() {
  const int h = %(h)d, w = %(w)d, nc = %(nc)d;
  std::vector<float> in(nc * h * w), out(%(planes)d * h * w, -7.0f), filt(nc * 25);
  // values that are not short binary fractions: a changed summation order shows
  for (int i = 0; i < nc * h * w; ++i) in[i] = (float)((i * 37) %% 101 - 50) / 7.0f;
  for (int i = 0; i < nc * 25; ++i) filt[i] = (float)((i * 13) %% 23 - 11) / 9.0f;
  %(fill)s
  wb_launch({%(gx)d, %(gy)d, %(planes)d}, {%(bx)d, %(by)d, 1}, [&] { k(%(args)s); });
  for (float v : out) std::printf("%%.9g\n", v);
  return 0;
}
"""

#: a __constant__ filter's values, whatever its shape (filled as flat floats)
_FILL = ("for (size_t i = 0; i < sizeof(%(c)s) / sizeof(float); ++i) "
         "((float*)%(c)s)[i] = (float)((i * 7) %% 17 - 8) / 3.0f;")


def host_run(name: str, source: str, grid: list[int], block: list[int], work: Path,
             flags: tuple[str, ...]) -> list[float]:
    sp = SPELLINGS[name]
    main = _MAIN % {"h": H, "w": W, "nc": sp.channels, "planes": sp.out_planes,
                    "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1],
                    "args": sp.args, "fill": _FILL % {"c": sp.constant} if sp.constant else ""}
    program = COOPERATIVE_BLOCK + "#define __constant__\n" + source + main
    # x86-64 g++ without -march has no fused multiply-add: each product is rounded as the
    # kernel as written rounds it, so any other summation order would show in the bits
    printed = run_on_host(work, "host", program, flags=flags)
    return [float(v) for v in printed.split()]


def spelling_configs(name: str) -> list[dict[str, Any]]:
    template = lifted_template(lift_spelling(name))
    default = template.default_config()
    smem = {"USE_SMEM": next(p.values()[-1] for p in template.params if p.name == "USE_SMEM")} \
        if "USE_SMEM" in template.param_names else {}
    return [*corner_configs(template, ENV), {**default, "OUT_X": 4, "OUT_Y": 2},
            {**default, "OUT_X": 2, "OUT_Y": 4, **smem}]


@pytest.mark.timeout(300)
@needs_gxx
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_channel_spellings_give_the_kernels_output_bit_for_bit(
        name: str, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    sp = SPELLINGS[name]
    template = lifted_template(lift_spelling(name))
    b = [int(v) for v in sp.block[:2]]
    with tempfile.TemporaryDirectory() as tmp:
        want = host_run(name, sp.source, [-(-W // b[0]), -(-H // b[1])], b, Path(tmp),
                        host_flags)
        assert len(want) == sp.out_planes * H * W and -7.0 not in want
        for config in host_sample(spelling_configs(name)[1:]):
            assert template.space(ENV).rejection(config) is None, config
            launch = template.launch_for(config, ENV)
            got = host_run(name, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), Path(tmp), host_flags)
            assert got == want, config


#: conv5_channels' configs beyond the corners: four columns and two rows from global
#: memory; the four tiles with two columns and four rows a thread; one tile refilled per
#: channel, four columns and four rows a thread.
CONV5_EXTRAS = [{"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 2, "USE_SMEM": 0},
                {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 1},
                {"BLOCK_X": 8, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 4, "USE_SMEM": 2}]


@pytest.mark.timeout(300)
@needs_gxx
def test_conv5_channels_lift_matches_the_kernel_and_its_expert(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    plain = _folder("conv5_channels")
    template = offline_template(plain).template
    env = plain.env(plain.check_shape, "fp32")
    inputs = _inputs(plain)
    want = SET.plain_outputs("conv5_channels", tmp_path / "plain", host_flags)
    expert = _folder("conv5_channels", expert=True)
    expert_config = {**expert.template.default_config(), "BLOCK_X": 32, "BLOCK_Y": 4,
                     "ITEMS_X": 2, "ITEMS_Y": 4, "USE_SMEM": 1}
    got = _run(expert, HOST_EXTRAS + expert.template.render(expert_config, "fp32").source,
               expert.template.launch_for(expert_config, env), inputs, tmp_path / "expert",
               host_flags)
    np.testing.assert_allclose(got["out"], want["out"], rtol=1e-5, atol=1e-6)
    default = template.default_config()
    configs = [*end_configs(template, env), *({**default, **e} for e in CONV5_EXTRAS)]
    for i, config in enumerate(host_sample(configs)):
        assert template.space(env).rejection(config) is None, config
        got = _run(plain, HOST_EXTRAS + template.render(config, "fp32").source,
                   template.launch_for(config, env), inputs, tmp_path / f"lift{i}", host_flags)
        # the same taps in the same order per output: the same bits
        assert np.array_equal(got["out"], want["out"]), config
