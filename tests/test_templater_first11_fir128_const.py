"""First contact with held-back set 11's FIR filter (issue 28): benchmarks/
corpus_compute_unseen11/fir128_const correlates each channel (blockIdx.y) with 128 taps in
``__constant__`` memory, one output a thread, through a struct of the channel's pointers and
size passed by value to the routine that computes an output. On the H100 (23:59Z) the lift
was BLOCK_THREADS, ITEMS_PER_THREAD (items a block apart), UNROLL, MIN_BLOCKS_PER_SM: 2.96x,
the expert's THREADS / ITEMS / SMEM / CONTIG 9.72x. The struct's fields hid the read's
element type and the check's bound (``s.n`` is the launch's ``n``), and no family gave a
filter with no channel loop consecutive outputs (conv_mix's T_ITEMS needs an output channel
on the grid, its window every tap: 64 at most). Now struct_locals reads the fields as locals
and fir_slide lifts T_ITEMS (consecutive outputs sliding a register window over the taps)
and USE_SMEM (the block's inputs staged once).

Pure: the knobs and the grid, a second spelling of the same filter (no struct, an early
return, the index ``threadIdx.x + blockDim.x * blockIdx.x``, a ``constexpr`` tap count, a
tap loop to ``<= NT - 1`` through a local and ``fmaf``, the read under a condition), a
third with "same" zero padding (taps -64 .. 63, an ``if`` skipping inputs outside the
signal), a fourth spelled as a convolution (``in[o - t]``: the window slides the other way),
and refusals with their lines. Host (g++): each lift at its default, every all-ends config and
mixes (the expert's H100 pick THREADS 64, ITEMS 8, SMEM 1, CONTIG 1 in the lift's knobs
first) against the kernel as written, bit for bit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen11
import numpy as np
import pytest
from held_back_harness import respelled
from helpers_templater import end_configs, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen11.ROOT / "fir128_const"
KNOBS = ("BLOCK_THREADS", "T_ITEMS", "USE_SMEM", "MIN_BLOCKS_PER_SM")
#: The expert's H100 pick in the lift's knobs, then a window of 4 through the cache over
#: 96 threads (no power of two), 2 items staged at the widest block, 8 items over 128 threads
#: under a register cap (the check shape's 301 outputs end inside every block's span).
MIXES = [{"BLOCK_THREADS": 64, "T_ITEMS": 8, "USE_SMEM": 1},
         {"BLOCK_THREADS": 96, "T_ITEMS": 4, "USE_SMEM": 0},
         {"BLOCK_THREADS": 1024, "T_ITEMS": 2, "USE_SMEM": 1, "MIN_BLOCKS_PER_SM": 2},
         {"BLOCK_THREADS": 128, "T_ITEMS": 8, "USE_SMEM": 0, "MIN_BLOCKS_PER_SM": 4}]

#: The same filter by another hand: no struct, the channel's rows through two locals, an
#: early return, the index ``threadIdx.x + blockDim.x * blockIdx.x``, a ``constexpr`` tap
#: count, the tap loop to ``<= NT - 1`` reading through a local ``p`` under a condition that
#: always holds, and ``fmaf``.
PLAIN = """constexpr int NT = 128;

__constant__ float taps[NT];

extern "C" __global__ void fir128_const(float* y, const float* x, int n) {
  const float* src = x + (size_t)blockIdx.y * (n + NT - 1);
  float* dst = y + (size_t)blockIdx.y * n;
  const int idx = threadIdx.x + blockDim.x * blockIdx.x;
  if (idx >= n) return;
  float sum = 0.f;
  for (int j = 0; j <= NT - 1; j += 1) {
    const int p = idx + j;
    sum = fmaf(taps[j], p < n + NT - 1 ? src[p] : 0.f, sum);
  }
  dst[idx] = sum;
}
"""

#: A third hand: "same" zero padding (taps -64 .. 63 around the output, inputs outside
#: 0 .. n - 1 skipped by an ``if`` in the tap loop, so the window's loads test it too), the
#: channel a local ``c = blockIdx.y`` indexing the row inline, ``#define`` sizes, the index
#: ``blockDim.x * blockIdx.x + threadIdx.x`` and the work under ``if (i < n)``.
PADDED = """#define TAPS 128
#define HALF 64
__constant__ float taps[TAPS];
extern "C" __global__ void fir128_const(float* y, const float* x, int n) {
  int c = blockIdx.y;
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) {
    float acc = 0.0f;
    for (int k = -HALF; k < HALF; ++k) {
      int p = i + k;
      if (p >= 0 && p < n) acc += taps[k + HALF] * x[c * (n + TAPS - 1) + p];
    }
    y[c * n + i] = acc;
  }
}
"""

#: A fourth: the convolution's own spelling, ``in[o - t]`` with the row pointer set past the
#: filter's reach (the taps meet the inputs in the other order: the window slides down).
CONVOLVED = """#define K 128
__constant__ float taps[K];
extern "C" __global__ void fir128_const(float* y, const float* x, int n) {
  const float* in = x + (size_t)blockIdx.y * (n + K - 1) + (K - 1);
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= n) return;
  float s = 0.0f;
  for (int t = 0; t < K; ++t) s += taps[t] * in[o - t];
  y[(size_t)blockIdx.y * n + o] = s;
}
"""


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="fir128_const", grid=["ceil_div(n, 256)", "ch"],
                       block=["256"], scalars={"n": "n"})


def test_fir128_const_lifts_a_sliding_window_and_a_staged_span() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    lifted = result.lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, result.notes
    assert lifted.grid == ("ceil_div(n, BLOCK_THREADS * T_ITEMS)", "ch")
    assert "USE_SMEM == 0 or (BLOCK_THREADS * T_ITEMS + 127) * 4 <= 49152" in \
        lifted.constraints
    source = lifted.source
    # the struct's fields as locals; its size as the launch's n
    assert "const float * s_x = x + (size_t)blockIdx.y * (n + FIR_TAPS - 1);" in source
    assert "if (i < n) {" in source
    assert "const int i = (blockIdx.x * blockDim.x + threadIdx.x) * T_ITEMS;" in source
    assert "acc[wb_u] += taps[t] * wb_w[wb_u];" in source
    assert "#pragma unroll 16" not in source  # the taps are unrolled whole
    assert any(n.startswith("STRUCT_LOCALS: applied") for n in result.notes)


def test_a_second_spelling_lifts_the_same_knobs() -> None:
    lifted = _lift(PLAIN)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    # the read's condition stays around the slot; the window's loads test it at the slot
    assert "sum[wb_u] = fmaf(taps[j], p < n + NT - 1 ? wb_w[wb_u] : 0.f, sum[wb_u]);" in \
        lifted.source


def test_a_convolution_spelled_o_minus_t_slides_its_window_the_other_way() -> None:
    lifted = _lift(CONVOLVED)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "for (int wb_u = T_ITEMS - 1; wb_u > 0; --wb_u) wb_w[wb_u] = wb_w[wb_u - 1];" in \
        lifted.source
    assert "wb_w[0] = wb_span[o - wb_base + (126 - wb_k)];" in lifted.source


def test_a_zero_padded_spelling_lifts_the_same_knobs_and_tests_its_slots() -> None:
    lifted = _lift(PADDED)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "if (p >= 0 && p < n) acc[wb_u] += taps[k + HALF] * wb_w[wb_u];" in lifted.source
    # a slot is loaded only where its first reader's own skip lets the kernel read it
    assert "((int)((i + wb_ur) + k)) >= 0 && ((int)((i + wb_ur) + k)) < n" in lifted.source


@pytest.mark.parametrize(("old", "new", "knob", "why"), [
    # a store in the tap loop: the items past the bound would store too
    ("    const int p = idx + j;", "    const int p = idx + j; dst[idx] = 0.f;", "T_ITEMS",
     "writes memory in the tap loop"),
    # a tap count shared by the thread's items
    ("  float sum = 0.f;", "  float sum = 0.f; int hits = 0;",
     "T_ITEMS", None),
    # the input is the output (x and y one pointer here): the window would keep values
    # read before the writes
    ("  dst[idx] = sum;", "  dst[idx] = sum; dst[-n] = sum;", "T_ITEMS",
     "writes through the windowed input"),
], ids=["store-in-taps", "shared-counter", "in-place"])
def test_filters_the_rewrite_cannot_keep_exactly_are_refused_with_the_line(
        old: str, new: str, knob: str, why: str | None) -> None:
    assert old in PLAIN
    source = PLAIN.replace(old, new)
    if new.endswith("dst[-n] = sum;"):
        source = source.replace("float* dst = y + ", "float* dst = (float*)x + ")
    if why is None:  # the counter counted per tap, shared by the items
        source = source.replace("    const int p = idx + j;", "    const int p = idx + j; hits++;")
        why = "writes `hits`, one local shared by the thread's items"
    lifted = _lift(source)
    assert knob not in {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith(f"{knob}: not applied") and why in n and "(line " in n
               for n in lifted.notes), lifted.notes


#: The input pointer set after the index's check: read as its array
#: (workbench.templater.pointer_locals), nothing is declared after the check for the stage.
LATE_POINTER = PLAIN.replace("  const float* src = x + (size_t)blockIdx.y * (n + NT - 1);\n",
                             "").replace(
    "  if (idx >= n) return;",
    "  if (idx >= n) return;\n  const float* src = x + (size_t)blockIdx.y * (n + NT - 1);")


def test_an_input_pointer_set_after_the_check_reads_as_its_array() -> None:
    lifted = _lift(LATE_POINTER)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "const float* src" not in lifted.source


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, the mixes (over the default) and every all-ends config, each once."""
    space = template.space(env)
    default = dict(template.default_config())
    out: list[dict[str, Any]] = []
    for config in [default, *({**default, **m} for m in MIXES), *end_configs(template, env)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


def _same_outputs(kf: KernelFolder, source: str, tmp_path: Path,
                  flags: tuple[str, ...]) -> int:
    """Runs ``kf``'s lift at :func:`_checked`'s configs and the kernel ``source`` as written
    on the host; asserts every output bit for bit; the configs run."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    inputs = _inputs(kf)
    host = held_back_unseen11.host_source
    want = _run(kf, host(source), kf.baseline.launch_for({}, env), inputs,
                tmp_path / "plain", flags)
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        for name, values in want.items():
            assert np.array_equal(got[name], values), (config, name)
    return len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_gives_every_output_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    ran = _same_outputs(kf, kf.baseline.render({}, "fp32").source, tmp_path, host_flags)
    assert ran == 1 + len(MIXES) + 8  # 8 all-ends configs (2 ends of 3 knobs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_second_spelling_gives_every_output_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", PLAIN)
    ran = _same_outputs(kf, PLAIN, tmp_path / "runs", host_flags)
    assert ran == 1 + len(MIXES) + 8


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_late_pointer_spelling_gives_every_output_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", LATE_POINTER)
    ran = _same_outputs(kf, LATE_POINTER, tmp_path / "runs", host_flags)
    assert ran == 1 + len(MIXES) + 8


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_zero_padded_spelling_gives_every_output_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", PADDED)
    ran = _same_outputs(kf, PADDED, tmp_path / "runs", host_flags)
    assert ran == 1 + len(MIXES) + 8


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_convolution_gives_every_output_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", CONVOLVED)
    ran = _same_outputs(kf, CONVOLVED, tmp_path / "runs", host_flags)
    assert ran == 1 + len(MIXES) + 8
