"""Set 13's conv3x3_c16_nchw (issue 28): a helper whose value a compound assignment takes
(``acc += tap_sum(..)``) is inlined, the body first and then ``acc += s`` (the right side of
a compound assignment is sequenced before the left, so the order is the call's).

The folder's kernel and a second spelling (``-=`` of a scaled helper value inside a while
loop, a 1-D block) are inlined; the second computes on the host what it computes as written
at its default and its all-ends configs; a value used as an operand of a comparison is
still refused with the line. CO_PER_THREAD (:mod:`.conv_mix`) takes the output channel
along the grid's z on a 2-D block of threads (a one-image 3 x 3 channel mix, bit for bit on
the host at the default, every all-ends config and a sample), and where the grid's z
carries the image too (``b = z / C``, ``co = z % C``, grid z ``nb * 16``): the folder's
kernel (CO_PER_THREAD 1..16, grid z ``(nb * 16) // CO_PER_THREAD``, bit for bit on the host
at the expert's pick in the lift's knobs and a mix) and a second hand's (the index named
first, a constexpr modulus, the grid's z ``8 * B``), also with the channel spelled as the
index less its image's channels (``z - n * C``, ``z - (z / C) * C``, ``z - C * n``); a
grid's z not a multiple of C is refused with the line, and an index split by two moduli,
read whole or assigned, or less another quotient's channels, takes no channels."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import held_back_unseen13
import numpy as np
import pytest
from helpers_templater import FULL_MATRIX, host_configs, lifted_template
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_inline_calls import Spelling, host_outputs, listed_configs, needs_gxx

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import LiftedSource, lift_kernel, offline_template

FOLDER = held_back_unseen13.ROOT / "conv3x3_c16_nchw"
#: Mixes over the default (of the knobs the lift has): the expert's pick in the lift's knobs
#: (64 x 8 threads, all 16 channels a thread), and items along both axes on a flat and a
#: tall block with 4 and 2 channels a thread (capped registers, the channel loop unrolled
#: whole), the 19 x 21 check shape uneven over each; the last only under FULL_MATRIX.
MIXES = [{"BLOCK_X": 64, "BLOCK_Y": 8, "CO_PER_THREAD": 16},
         {"BLOCK_X": 32, "BLOCK_Y": 2, "ITEMS_X": 2, "ITEMS_Y": 8, "CO_PER_THREAD": 4,
          "MIX_UNROLL": 16, "MIN_BLOCKS_PER_SM": 1},
         *([{"BLOCK_X": 8, "BLOCK_Y": 64, "ITEMS_X": 4, "ITEMS_Y": 2, "CO_PER_THREAD": 2,
             "MIN_BLOCKS_PER_SM": 2}] if FULL_MATRIX else [])]

# a 1-D block from a macro, the helper's value scaled and subtracted in a while loop, an
# early exit in the helper's own loop
DECAY = Spelling("""
#define THREADS 64
__device__ float window_energy(const float* v, int n, int at, int width) {
  float e = 0.0f;
  for (int j = 0; j < width; j++) {
    if (at + j >= n) break;
    e += v[at + j] * v[at + j];
  }
  return e;
}

extern "C" __global__ void decay(float* out, const float* v, int n, int rounds) {
  const int i = blockIdx.x * THREADS + threadIdx.x;
  if (i >= n) return;
  float level = 1.0f;
  int r = 0;
  while (r < rounds) {
    level -= 0.125f * window_energy(v, n, i + r, 4);
    r++;
  }
  out[i] = level;
}
""", "decay", ("ceil_div(N, 64)",), ("64",), {"n": "N", "rounds": "R"},
    {"out": ("N", True), "v": ("N", False)}, "decay(out, v, N, R)", {"N": 203, "R": 5},
    frozenset({"BLOCK_THREADS"}))


def lift(s: Spelling) -> LiftedSource:
    return lift_kernel(s.source, entry=s.entry, grid=list(s.grid), block=list(s.block),
                       scalars=dict(s.scalars))


def inline_findings(lifted: LiftedSource) -> list[tuple[bool, int | None, str]]:
    return [(f.applied, f.line, f.reason) for f in lifted.findings if f.transform == "INLINE"]


def test_the_folders_tap_sum_is_inlined_into_its_compound_assignment() -> None:
    made = offline_template(load_kernel_folder(FOLDER))
    assert inline_findings(made.lifted) == [
        (True, 39, "tap_sum inlined into conv3x3_c16_nchw")], made.notes
    source = made.lifted.source
    assert "__device__ float tap_sum" not in source and "= tap_sum(" not in source
    # the body's value, combined after the body ran (a sum a channel: CO_PER_THREAD)
    assert "{ acc[wb_q] += s[wb_q]; }" in source


def test_a_scaled_value_subtracted_in_a_while_loop_is_inlined() -> None:
    lifted = lift(DECAY)
    assert inline_findings(lifted)[0][:2] == (True, 18), lifted.notes
    assert "level -= 0.125f * ((float)(e));" in lifted.source
    assert DECAY.lifts <= {p.name for p in lifted.params}, lifted.notes


def test_a_value_compared_is_still_refused_with_the_line() -> None:
    source = DECAY.source.replace("level -= 0.125f * window_energy(v, n, i + r, 4);",
                                  "if (window_energy(v, n, i + r, 4) > 1.0f) level -= 0.125f;")
    (applied, at, reason), = inline_findings(lift(Spelling(source, *[
        getattr(DECAY, f) for f in ("entry", "grid", "block", "scalars", "buffers", "call",
                                     "env", "lifts")])))
    assert not applied and at == 18
    assert "its result is used in an expression" in reason


@needs_gxx
@pytest.mark.timeout(240)
def test_the_second_spelling_computes_what_it_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """The default, every all-ends config and a sampled one, bit for bit (one order of the
    same float operations)."""
    s = DECAY
    env = dict(s.env)
    want = host_outputs(s, s.source, [-(-env["N"] // 64)], [64], tmp_path / "plain", host_flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(s), s.entry)
    for i, config in enumerate(listed_configs(template, {**env, "elem_bytes": 4})):
        launch = template.launch_for(config, {**env, "elem_bytes": 4})
        got = host_outputs(s, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), tmp_path / f"c{i}", host_flags)
        np.testing.assert_array_equal(got, want, err_msg=str(config))


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = template.default_config()
    configs = host_configs(template, env, [{k: v for k, v in m.items() if k in default}
                                              for m in MIXES])
    assert len(configs) >= 4, configs
    inputs = _inputs(kf)
    host = held_back_unseen13.host_source
    want = _run(kf, host(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        for name, values in want.items():
            assert (got[name] == values).all(), f"{kf.name} at {config}: {name} differs"


# -- output channels a thread on a 2-D block (CO_PER_THREAD along z) ---------------------------

# one image, 8 channels into 4, the output channel the grid's z on a 2-D block of threads; a
# constexpr channel count, the window's bounds as one test a tap
MIX2D = Spelling("""
constexpr int CIN = 8;
constexpr int COUT = 4;

extern "C" __global__ void mix3(float* y, const float* x, const float* f, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  const int k = blockIdx.z;
  if (r < rows && c < cols) {
    float sum = 0.0f;
    for (int i = 0; i < CIN; i++) {
      for (int t = 0; t < 9; t++) {
        const int rr = r + t / 3 - 1, cc = c + t % 3 - 1;
        const bool in = rr >= 0 && rr < rows && cc >= 0 && cc < cols;
        sum += f[(k * CIN + i) * 9 + t] * (in ? x[(i * rows + rr) * cols + cc] : 0.0f);
      }
    }
    y[(k * rows + r) * cols + c] = sum;
  }
}
""", "mix3", ("ceil_div(C, 8)", "ceil_div(R, 8)", "4"), ("8", "8"), {"rows": "R", "cols": "C"},
    {"y": ("4 * R * C", True), "x": ("8 * R * C", False), "f": ("4 * 8 * 9", False)},
    "mix3(y, x, f, R, C)", {"R": 13, "C": 19}, frozenset({"BLOCK_X", "BLOCK_Y", "CO_PER_THREAD"}))


def test_a_2d_block_takes_output_channels_along_z() -> None:
    lifted = lift(MIX2D)
    assert MIX2D.lifts <= {p.name for p in lifted.params}, lifted.notes
    assert lifted.grid[2] == "4 // CO_PER_THREAD"
    co = next(p for p in lifted.params if p.name == "CO_PER_THREAD")
    assert co.spec["values"] == [1, 2, 4]


@needs_gxx
@pytest.mark.timeout(240)
def test_the_2d_block_channels_compute_what_they_compute_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    s = MIX2D
    env = dict(s.env)
    want = host_outputs(s, s.source, [3, 2, 4], [8, 8], tmp_path / "plain", host_flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(s), s.entry)
    configs = listed_configs(template, {**env, "elem_bytes": 4})
    assert any(c["CO_PER_THREAD"] == 4 for c in configs), configs
    if not FULL_MATRIX:  # the default, the first end with four channels a thread, the last
        four = next(c for c in configs if c["CO_PER_THREAD"] == 4)
        configs = [c for c in configs if c in (configs[0], four, configs[-1])]
    for i, config in enumerate(configs):
        launch = template.launch_for(config, {**env, "elem_bytes": 4})
        got = host_outputs(s, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), tmp_path / f"c{i}", host_flags)
        np.testing.assert_array_equal(got, want, err_msg=str(config))


# -- the grid's z carrying (image, output channel): b = z / C, co = z % C ----------------------

# another hand: the block index named first (zi), image and channel read from it by / and %
# of a constexpr, the window as dy/dx offsets from -1 to 1 with the padding a select, a bias,
# a while over the input channels, the grid's z written literal first (8 * B)
BATCHED = Spelling("""
constexpr int K_IN = 4;
constexpr int K_OUT = 8;

extern "C" __global__ void mix_nchw(float* y, const float* x, const float* f, const float* beta,
                                    int rows, int cols) {
  const int c = threadIdx.x + blockIdx.x * blockDim.x;
  const int r = threadIdx.y + blockIdx.y * blockDim.y;
  const int zi = blockIdx.z;
  const int n = zi / K_OUT;
  const int k = zi % K_OUT;
  if (c < cols && r < rows) {
    const int hw = rows * cols;
    float sum = beta[k];
    int i = 0;
    while (i < K_IN) {
      const float* plane = x + (n * K_IN + i) * hw;
      for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
          const int rr = r + dy, cc = c + dx;
          const float v = (rr >= 0 && rr < rows && cc >= 0 && cc < cols) ? plane[rr * cols + cc]
                                                                         : 0.0f;
          sum += v * f[((k * K_IN + i) * 3 + dy + 1) * 3 + dx + 1];
        }
      }
      ++i;
    }
    y[(n * K_OUT + k) * hw + r * cols + c] = sum;
  }
}
""", "mix_nchw", ("ceil_div(C, 8)", "ceil_div(R, 4)", "8 * B"), ("8", "4"),
    {"rows": "R", "cols": "C"},
    {"y": ("B * 8 * R * C", True), "x": ("B * 4 * R * C", False), "f": ("8 * 4 * 9", False),
     "beta": ("8", False)},
    "mix_nchw(y, x, f, beta, R, C)", {"B": 3, "R": 11, "C": 13},
    frozenset({"BLOCK_X", "BLOCK_Y", "CO_PER_THREAD", "MIX_UNROLL"}))


def channel_findings(lifted: LiftedSource) -> list[tuple[bool, int | None, str]]:
    return [(f.applied, f.line, f.reason) for f in lifted.findings
            if f.transform == "CO_PER_THREAD"]


def test_the_folders_image_and_channel_split_of_z_takes_channels_a_thread() -> None:
    made = offline_template(load_kernel_folder(FOLDER))
    lifted = made.lifted
    co = next(p for p in lifted.params if p.name == "CO_PER_THREAD")
    assert co.spec["values"] == [1, 2, 4, 8, 16], made.notes
    assert lifted.grid[2] == "(nb * 16) // CO_PER_THREAD"
    (applied, at, reason), = channel_findings(lifted)
    assert applied and at == 33 and "`co` = blockIdx.z % CH" in reason, reason
    # the image over 16 / CO groups a z, the first channel a multiple of CO (0 at all 16)
    assert "const int b = (blockIdx.z / (16 / CO_PER_THREAD));" in lifted.source
    assert "const int co = (CO_PER_THREAD == 16 ? 0 : blockIdx.z % (16 / CO_PER_THREAD) * " \
        "CO_PER_THREAD);" in lifted.source


def test_a_named_block_index_split_by_a_constexpr_takes_channels_a_thread() -> None:
    lifted = lift(BATCHED)
    assert BATCHED.lifts <= {p.name for p in lifted.params}, lifted.notes
    assert lifted.grid[2] == "(8 * B) // CO_PER_THREAD"
    co = next(p for p in lifted.params if p.name == "CO_PER_THREAD")
    assert co.spec["values"] == [1, 2, 4, 8]
    assert "const int n = (zi / (8 / CO_PER_THREAD));" in lifted.source
    assert channel_findings(lifted)[0][:2] == (True, 11)


#: the channel as the index less its image's channels (z % C for z >= 0), three hands
REMAINDERS = {
    "blockIdx, held quotient": ("const int zi = blockIdx.z;\n  const int n = zi / K_OUT;\n"
                                "  const int k = zi % K_OUT;",
                                "const int n = blockIdx.z / K_OUT;\n"
                                "  const int k = blockIdx.z - n * K_OUT;"),
    "alias, quotient inline": ("const int k = zi % K_OUT;",
                               "const int k = zi - (zi / K_OUT) * K_OUT;"),
    "alias, constant first": ("const int k = zi % K_OUT;", "const int k = zi - K_OUT * n;"),
}


def _remainder_spelling(name: str) -> Spelling:
    old, new = REMAINDERS[name]
    assert BATCHED.source.count(old) == 1, old
    return replace(BATCHED, source=BATCHED.source.replace(old, new))


@pytest.mark.parametrize("name", sorted(REMAINDERS))
def test_the_channel_as_the_index_less_its_images_channels_takes_channels(name: str) -> None:
    lifted = lift(_remainder_spelling(name))
    assert BATCHED.lifts <= {p.name for p in lifted.params}, lifted.notes
    assert lifted.grid[2] == "(8 * B) // CO_PER_THREAD"
    z = "blockIdx.z" if name.startswith("blockIdx") else "zi"
    assert f"const int k = (CO_PER_THREAD == 8 ? 0 : {z} % (8 / CO_PER_THREAD) * " \
        "CO_PER_THREAD);" in lifted.source, lifted.source


def test_a_difference_by_another_quotient_takes_no_channels() -> None:
    """``zi - n * K_IN`` with n = zi / K_OUT is no remainder (nor a split by one modulus)."""
    s = replace(BATCHED, source=BATCHED.source.replace("const int k = zi % K_OUT;",
                                                       "const int k = zi - n * K_IN;"))
    assert "CO_PER_THREAD" not in {p.name for p in lift(s).params}


def test_a_grid_z_not_a_multiple_of_the_channels_is_refused_with_the_line() -> None:
    lifted = lift(replace(BATCHED, grid=("ceil_div(C, 8)", "ceil_div(R, 4)", "8 * B + 4")))
    (applied, at, reason), = channel_findings(lifted)
    assert not applied and at == 11
    assert "`8 * B + 4` is not a multiple of 8" in reason


@pytest.mark.parametrize("edits", [
    # the image from another modulus: a block of channels would change image
    [("zi / K_OUT", "zi / K_IN")],
    # the index read whole besides its split
    [("y[(n * K_OUT + k) * hw", "y[zi * hw")],
    # the named index assigned again
    [("const int zi = blockIdx.z;", "int zi = blockIdx.z;"), ("if (c < cols", "zi += 0;\n  if (c < cols")],
])
def test_a_block_index_not_split_by_one_modulus_takes_no_channels(
        edits: list[tuple[str, str]]) -> None:
    source = BATCHED.source
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    lifted = lift(replace(BATCHED, source=source))
    assert "CO_PER_THREAD" not in {p.name for p in lifted.params}, lifted.notes


@needs_gxx
@pytest.mark.timeout(600)
def test_the_named_split_computes_what_it_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """Bit for bit at the default, 8 channels a thread with the channel loop unrolled whole
    on a flat block with items, and the all-ends configs (host_sample)."""
    _same_on_host(BATCHED, tmp_path, host_flags, ends=True)


@needs_gxx
@pytest.mark.timeout(600)
def test_the_channel_as_a_difference_computes_what_it_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """``k = blockIdx.z - n * K_OUT``: bit for bit at the default and the mix (every
    all-ends config under FULL_MATRIX)."""
    _same_on_host(_remainder_spelling("blockIdx, held quotient"), tmp_path, host_flags,
                  ends=FULL_MATRIX)


def _same_on_host(s: Spelling, work: Path, flags: tuple[str, ...], *, ends: bool) -> None:
    env = dict(s.env)
    want = host_outputs(s, s.source, [2, 3, 24], [8, 4], work / "plain", flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(s), s.entry)
    mix = {"BLOCK_X": 16, "BLOCK_Y": 2, "CO_PER_THREAD": 8, "MIX_UNROLL": 4, "ITEMS_Y": 2}
    configs = host_configs(template, {**env, "elem_bytes": 4}, [mix])
    configs = configs if ends else configs[:2]
    assert any(c["CO_PER_THREAD"] == 8 for c in configs), configs
    for i, config in enumerate(configs):
        launch = template.launch_for(config, {**env, "elem_bytes": 4})
        got = host_outputs(s, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), work / f"c{i}", flags)
        np.testing.assert_array_equal(got, want, err_msg=str(config))
