"""Consecutive outputs along the sliding axis per thread, their input windows read once
(T_ITEMS, workbench/templater/conv_mix_window.py, emitted with the channels of conv_mix.py).

Checked on benchmarks/corpus_compute_unseen7/conv1d_mix7 (spent) and two spellings of our
own: a 3-channel FIR into 4 output channels on grid z with its filter in global memory, the
index ``threadIdx.x + blockDim.x * blockIdx.x``, an early return, taps ``-R .. R`` with
``constexpr`` sizes, the padding as a ternary and ``fmaf``; and 4 -> 4 channels on grid y
through an ``unsigned`` local, ``#define`` sizes, a ``long`` index with casts, the channel
loop a ``while``, the tap counter named ``t`` stepping ``+= 1`` and the padding as two nested
``if``s. Each gives the kernel's outputs bit for bit on the host (g++) at the default, the
all-ends corners and a sampled config (``host_sample``). Kernels whose reads or checks the
window cannot keep exactly are refused with the line; ptxas -v at the corners: no spills, and
the configs the register constraint drops do spill.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from held_back_unseen7 import SET, _folder
from helpers_templater import (
    COOPERATIVE_BLOCK,
    end_configs,
    host_sample,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import (
    NVCC,
    _inputs,
    _ptxas_log,
    _run,
    host_flags,  # noqa: F401  (session fixture: precompiled headers)
)
from test_templater_convmix_channels import needs_gxx

from workbench.templater import LiftedSource, lift_kernel, offline_template

KNOB = "T_ITEMS"
N = 300  # samples: no multiple of any block's span, two blocks at 32 threads x 8 items

FIR_Z = """
constexpr int CIN = 3;
constexpr int R = 2;
extern "C" __global__ void k(float* y, const float* x, const float* h, int n) {
  int i = threadIdx.x + blockDim.x * blockIdx.x;
  int oc = blockIdx.z;
  if (i >= n) return;
  float sum = 0.0f;
  for (int c = 0; c < CIN; c++) {
    for (int j = -R; j <= R; j++) {
      int p = i + j;
      float v = (p >= 0 && p < n) ? x[c * n + p] : 0.0f;
      sum = fmaf(h[(oc * CIN + c) * (2 * R + 1) + j + R], v, sum);
    }
  }
  y[oc * n + i] = sum;
}
"""

MIX_Y = """
#define NCH 4
#define KW 5
#define BS 64
__constant__ float taps[NCH * NCH * KW];
extern "C" __global__ void k(float* dst, const float* src, int len) {
  const unsigned int out_ch = blockIdx.y;
  const long pos = (long)blockIdx.x * BS + (long)threadIdx.x;
  if (pos < (long)len) {
    float a = 0.5f;
    int ic = 0;
    while (ic < NCH) {
      for (int t = 0; t < KW; t += 1) {
        const long at = pos - KW / 2 + t;
        if (at >= 0)
          if (at < len) a += taps[(out_ch * NCH + ic) * KW + t] * src[ic * (long)len + at];
      }
      ++ic;
    }
    dst[out_ch * (long)len + pos] = a;
  }
}
"""

# name -> (source, grid, block, host call, output and input sizes, the filter to fill)
SPELLINGS: dict[str, tuple[str, list[str], str, str, int, int, str]] = {
    "fir_z_early_return_global_filter": (
        FIR_Z, ["ceil_div(n, 64)", "1", "4"], "64", "out.data(), in.data(), filt.data(), n",
        4 * N, 3 * N, "filt"),
    "mix_y_nested_ifs_while_channels": (
        MIX_Y, ["ceil_div(len, 64)", "4"], "64", "out.data(), in.data(), n", 4 * N, 4 * N,
        "taps"),
}


def lift_spelling(name: str) -> LiftedSource:
    source, grid, block, *_ = SPELLINGS[name]
    scalar = "n" if "int n)" in source else "len"
    return lift_kernel(source, entry="k", grid=grid, block=[block], scalars={scalar: scalar})


def applied(lifted: LiftedSource, knob: str) -> bool:
    return any(f.transform == knob and f.applied for f in lifted.findings)


def env_of(name: str) -> dict[str, Any]:
    return {"n" if "int n)" in SPELLINGS[name][0] else "len": N, "elem_bytes": 4}


# -- what lifts ----------------------------------------------------------------------------


def test_conv1d_mix7_lifts_consecutive_items_with_a_window_and_the_grid_follows() -> None:
    lifted = offline_template(_folder("conv1d_mix7")).lifted
    assert applied(lifted, KNOB), lifted.notes
    spec = next(p.spec for p in lifted.params if p.name == KNOB)
    assert spec["values"] == [1, 2, 4, 8] and spec["default"] == 1
    assert lifted.grid[0] == "ceil_div(T, BLOCK_THREADS * T_ITEMS)"
    # block-spaced items along the same axis are not lifted beside it
    assert "ITEMS_PER_THREAD" not in {p.name for p in lifted.params}
    # 7 + T_ITEMS - 1 loads per input channel, each where the first item reading it is
    # live and inside the signal (the kernel's own checks at that item and tap)
    assert "float wb_win[T_ITEMS + 6];" in lifted.source
    assert "if (((t * T_ITEMS + wb_ur) < (size_t)T) && " in lifted.source
    assert "acc[wb_q][wb_u] += weights[((o + wb_q) * CH + c) * TAPS + k] * " \
        "wb_win[wb_u + (k) - (0)];" in lifted.source
    # the bounds check at the thread's first item, each item's store under its own
    assert "if ((t * T_ITEMS) < (size_t)T) {" in lifted.source
    assert "out[(b * CH + (o + wb_q)) * (size_t)T + (t * T_ITEMS + wb_u)] = " \
        "acc[wb_q][wb_u];" in lifted.source


def test_the_spellings_lift_items_with_their_windows() -> None:
    fir = lift_spelling("fir_z_early_return_global_filter")
    assert applied(fir, KNOB) and applied(fir, "CO_PER_THREAD"), fir.notes
    assert fir.grid[0] == "ceil_div(n, BLOCK_THREADS * T_ITEMS)"
    assert "if ((i * T_ITEMS) >= n) return;" in fir.source
    assert "wb_win[wb_u + (j) - (-R)]" in fir.source
    mix = lift_spelling("mix_y_nested_ifs_while_channels")
    assert applied(mix, KNOB) and applied(mix, "CO_PER_THREAD"), mix.notes
    assert "wb_win[wb_u + (t) - (0)]" in mix.source


_ONE = """
extern "C" __global__ void k(float* out, const float* in, const float* f, int n) {
  int t = blockIdx.x * 128 + threadIdx.x;
  int o = blockIdx.y;
  %s
}
"""

# name -> (body, the refusal's words, its line)
REFUSED: dict[str, tuple[str, str, int]] = {
    "stride_two_taps": ("""if (t < n) {
    float acc = 0.0f;
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 3; ++k) acc += f[(o * 4 + c) * 3 + k] * in[c * n + 2 * t + k];
    out[o * n + t] = acc;
  }""", "other than through `t + k`", 8),
    "a_check_on_the_tap_alone": ("""if (t < n) {
    float acc = 0.0f;
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 3; ++k)
        if (k != 1 && t + k < n) acc += f[(o * 4 + c) * 3 + k] * in[c * n + t + k];
    out[o * n + t] = acc;
  }""", "other than through `t + k`", 9),
    "a_bound_from_below": ("""if (t > 2 && t < n) {
    float acc = 0.0f;
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 3; ++k) acc += f[(o * 4 + c) * 3 + k] * in[c * n + t + k - 2];
    out[o * n + t] = acc;
  }""", "does not bound `t` from above only", 5),
    "a_skip_at_the_edges": ("""if (t < n) {
    float acc = 0.0f;
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 3; ++k) {
        const int s = t + k - 1;
        if (s < 0 || s >= n) continue;
        acc += f[(o * 4 + c) * 3 + k] * in[c * n + s];
      }
    out[o * n + t] = acc;
  }""", "`continue;` under the item's statement would leave the loop over its items", 10),
    "a_bound_the_grid_does_not_follow": ("""if (t < n / 2) {
    float acc = 0.0f;
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 3; ++k) acc += f[(o * 4 + c) * 3 + k] * in[c * n + t + k];
    out[o * n + t] = acc;
  }""", "items past the check's bound would be written", 5),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_windows_the_analysis_cannot_keep_exactly_are_refused_with_the_line(name: str) -> None:
    body, reason, row = REFUSED[name]
    lifted = lift_kernel(_ONE % body, entry="k", grid=["ceil_div(n, 128)", "8"],
                         block=["128"], scalars={"n": "n"})
    refusals = [f for f in lifted.findings if f.transform == KNOB and not f.applied]
    assert refusals, lifted.notes
    assert reason in refusals[0].reason, refusals[0].reason
    assert refusals[0].line == row
    assert KNOB not in {p.name for p in lifted.params}
    assert applied(lifted, "CO_PER_THREAD"), lifted.notes  # the channels still lift


# -- host runs -----------------------------------------------------------------------------

_MAIN = r"""
int main() {
  const int n = %(n)d;
  std::vector<float> in(%(in_size)d), out(%(out_size)d, -7.0f), filt(64);
  // values that are not short binary fractions: a changed summation order shows
  for (int i = 0; i < %(in_size)d; ++i) in[i] = (float)((i * 37) %% 101 - 50) / 7.0f;
  for (int i = 0; i < 64; ++i) filt[i] = (float)((i * 13) %% 23 - 11) / 9.0f;
  for (size_t i = 0; i < sizeof(taps) / sizeof(float); ++i)
    ((float*)taps)[i] = (float)((i * 7) %% 17 - 8) / 3.0f;
  wb_launch({%(gx)d, %(gy)d, %(gz)d}, {%(bx)d, 1, 1}, [&] { k(%(args)s); });
  for (float v : out) std::printf("%%.9g\n", v);
  return 0;
}
"""


def host_run(name: str, source: str, grid: list[int], block: int, work: Path,
             flags: tuple[str, ...]) -> list[float]:
    _src, _grid, _block, args, out_size, in_size, filt = SPELLINGS[name]
    grid = [*grid, 1, 1][:3]
    # the FIR's filter is a kernel argument: a file-scope `taps` for the fill to find
    extra = "static float taps[1];\n" if filt != "taps" else ""
    main = _MAIN % {"n": N, "in_size": in_size, "out_size": out_size, "gx": grid[0],
                    "gy": grid[1], "gz": grid[2], "bx": block, "args": args}
    program = COOPERATIVE_BLOCK + "#define __constant__\n" + extra + source + main
    # x86-64 g++ without -march has no fused multiply-add: each product is rounded as the
    # kernel as written rounds it, so any other summation order would show in the bits
    return [float(v) for v in run_on_host(work, "host", program, flags=flags).split()]


@pytest.mark.timeout(300)
@needs_gxx
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_window_spellings_give_the_kernels_output_bit_for_bit(
        name: str, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    source, _grid, block, *_ = SPELLINGS[name]
    template = lifted_template(lift_spelling(name))
    env = env_of(name)
    default = template.default_config()
    with tempfile.TemporaryDirectory() as tmp:
        written = template.launch_for(default, env)
        want = host_run(name, source, list(written.grid), int(block), Path(tmp), host_flags)
        assert len(want) == SPELLINGS[name][4] and -7.0 not in want
        # the default run: the all-ends corner with the most items and channels (eight
        # items a thread: the register constraint keeps them to smaller blocks) and four
        # items of two channels over 32 threads (two blocks)
        ends = end_configs(template, env)
        widest = max((c for c in ends if c[KNOB] == 8), key=lambda c: c["CO_PER_THREAD"])
        configs = [widest, *ends, {**default, KNOB: 4, "CO_PER_THREAD": 2, "BLOCK_THREADS": 32}]
        for config in host_sample(configs):
            assert template.space(env).rejection(config) is None, config
            launch = template.launch_for(config, env)
            got = host_run(name, template.render(config, "fp32").source, list(launch.grid),
                           launch.block[0], Path(tmp), host_flags)
            assert got == want, config


@pytest.mark.timeout(300)
@needs_gxx
def test_conv1d_mix7_items_match_the_kernel_bit_for_bit(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    plain = _folder("conv1d_mix7")
    template = offline_template(plain).template
    env = plain.env(plain.check_shape, "fp32")
    want = SET.plain_outputs("conv1d_mix7", tmp_path / "plain", host_flags)
    default = template.default_config()
    # T = 61: eight items over 32 threads leave most of the block's span past the end
    configs = [{**default, KNOB: 8, "CO_PER_THREAD": 4, "BLOCK_THREADS": 32,
                "MIX_UNROLL": 2},
               {**default, KNOB: 2, "CO_PER_THREAD": 16, "BLOCK_THREADS": 64},
               *(c for c in end_configs(template, env) if c[KNOB] == 4)]
    inputs = _inputs(plain)
    for i, config in enumerate(host_sample(configs)):
        assert template.space(env).rejection(config) is None, config
        got = _run(plain, SET.host_source(template.render(config, "fp32").source),
                   template.launch_for(config, env), inputs, tmp_path / f"lift{i}", host_flags)
        assert np.array_equal(got["out"], want["out"]), config


# -- ptxas ---------------------------------------------------------------------------------

_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.timeout(300)
def test_conv1d_mix7_widest_items_compile_without_spills_and_the_cap_drops_spilling_ones(
        tmp_path: Path) -> None:
    plain = _folder("conv1d_mix7")
    template = offline_template(plain).template
    space = template.space(plain.env("large", "fp32"))
    default = template.default_config()
    # the most accumulators (16 channels x 8 items) at the most threads the constraint
    # admits, and eight items of one channel at 1024 threads' worth of admitted registers
    widest = {**default, KNOB: 8, "CO_PER_THREAD": 16, "BLOCK_THREADS": 256}
    for label, config in (("widest", widest),):
        assert space.rejection(config) is None, config
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, label)
        assert _SPILLS.findall(log) == [("0", "0")], f"{config}:\n{log}"
    # eight items of one channel over 1024 threads (64 registers a thread): ptxas spills,
    # and the register constraint keeps the config out of the space
    dropped = {**default, KNOB: 8, "BLOCK_THREADS": 1024}
    assert space.rejection(dropped) is not None, dropped
    log = _ptxas_log(template.render(dropped, "fp32").source, tmp_path, "dropped")
    assert any(s != ("0", "0") for s in _SPILLS.findall(log)), log
