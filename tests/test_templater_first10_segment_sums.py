"""First contact with held-back set 10's segmented sum (issue 28): benchmarks/
corpus_compute_unseen10/segment_sums gives each segment a warp whose lanes walk it through a
pointer declared before an open ``for`` (``const float* p = values + offsets[seg] + lane;
... for (; p < end; p += 32) s += *p;``) and fold their sums with xor shuffles in a
``do``/``while``. The warp-per-item family reads loops through a ``for``'s initializer, so
the pointer walk read as a use of the lane outside a lane loop and nothing lifted (1.00x on
the H100; the expert's LANES / THREADS / UNROLL 1.45x). Now loop_forms_open respells both
loops as the ``for`` loops they are, and the family lifts WARPS_PER_BLOCK, LANES (2 .. 32, a
segment walk) and ILP over the pointer walk (warp_chains keeps the counter's pointer type).
LDG reads the walk's ``*p`` through ``__ldg`` (the pointer's every value points into the
``const float*`` parameter ``values``), in ILP's split loops too: the expert's pick reads
every value through ``__ldg`` (on the H100 the lift at the same pick without it took 178.1
us against the expert's 152.4). VEC 4 reads each segment's 16-byte-aligned middle as
``float4`` with a scalar head and tail (:mod:`workbench.templater.warp_seg_vec`), as the
expert's VEC does.

Pure: the knobs, the respelled loops, a second spelling of the same pattern (an index walk
declared before an open ``for``, ``& 31`` / ``>> 5``, a ``do`` of down shuffles halving by
``>>= 1``, the work under ``if (seg < segments)``), a third (a row pointer ``&values[..]``
walked by a pointer bounded by ``row + len``, read ``*q``), and the loops left as written
where the two are not the same program. Host (g++): each lift at its default, mixes (the
expert's H100 pick, LANES 8, THREADS 128, UNROLL 4, __ldg, spelled in the lift's knobs
first) and the all-ends configs (:func:`helpers_templater.host_configs`) against the kernel
as written, within the folder's tolerance (LANES, ILP and VEC change the order of a
segment's terms); VEC 4 also on segments of every length 0 .. 9 and 15 .. 17 starting at
every residue mod 4 (:func:`_edge_inputs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen10
import numpy as np
import pytest
from held_back_harness import respelled
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen10.ROOT / "segment_sums"
KNOBS = ("WARPS_PER_BLOCK", "LANES", "ILP", "VEC", "LDG", "MIN_BLOCKS_PER_SM")
#: The expert's tuned pick on the H100 (THREADS 128, LANES 8, UNROLL 4, VEC 1, its reads
#: __ldg) in the lift's knobs, then two lanes a segment in a wide block, a warp a segment
#: with two sums a lane, and four lanes at the largest register cap (the all-ends configs
#: keep MIN_BLOCKS_PER_SM 0).
MIXES = [{"WARPS_PER_BLOCK": 4, "LANES": 8, "ILP": 4, "LDG": 1},
         {"WARPS_PER_BLOCK": 16, "LANES": 2, "ILP": 2, "MIN_BLOCKS_PER_SM": 2},
         {"WARPS_PER_BLOCK": 2, "LANES": 32, "ILP": 2},
         {"WARPS_PER_BLOCK": 4, "LANES": 4, "ILP": 1, "MIN_BLOCKS_PER_SM": 4}]

#: The same segmented sum by another hand: an index walk declared before an open ``for``
#: (with a declaration between), the lane and warp as ``& 31`` / ``>> 5``, a constexpr
#: warps a block, the fold a ``do`` of down shuffles halving by ``>>= 1`` until zero, and
#: the work under ``if (seg < segments)``.
INDEX_WALK = """constexpr int kWarps = 8;

extern "C" __global__ void segment_sums(float* sums, const float* values, const int* offsets,
                                        int segments) {
  const int lane = threadIdx.x & 31;
  const int seg = (threadIdx.x >> 5) + kWarps * blockIdx.x;
  if (seg < segments) {
    int i = offsets[seg] + lane;
    const int stop = offsets[seg + 1];
    float acc = 0.f;
    for (; i < stop; i += 32) {
      acc += values[i];
    }
    int o = 16;
    do {
      acc += __shfl_down_sync(0xffffffff, acc, o);
      o >>= 1;
    } while (o != 0);
    if (!lane) sums[seg] = acc;
  }
}
"""

#: And by a third: a row pointer taken as ``&values[offsets[seg]]``, a walk pointer from it
#: bounded by ``row + len`` and read ``*q``, the fold a ``for`` of xor shuffles from 16 while
#: ``d >= 1``.
ROW_POINTER = """extern "C" __global__ void segment_sums(float* sums, const float* values,
                                        const int* offsets, int segments) {
  const int lane = threadIdx.x & 31;
  const int seg = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (seg >= segments) return;
  const float* row = &values[offsets[seg]];
  const int len = offsets[seg + 1] - offsets[seg];
  float total = 0.0f;
  for (const float* q = row + lane; q < row + len; q += 32) total += *q;
  for (int d = 16; d >= 1; d >>= 1) total += __shfl_xor_sync(0xffffffffu, total, d);
  if (lane == 0) sums[seg] = total;
}
"""


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="segment_sums", grid=["ceil_div(segments, 8)"],
                       block=["256"], scalars={"segments": "segments"})


def test_segment_sums_lifts_lanes_warps_and_ilp_over_the_pointer_walk() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    assert tuple(p.name for p in result.lifted.params) == KNOBS, result.notes
    lanes = next(p for p in result.lifted.params if p.name == "LANES")
    assert (lanes.spec["min"], lanes.spec["max"]) == (2, 32)
    assert result.lifted.grid == ("ceil_div(segments, WARPS_PER_BLOCK * (32 // LANES))",)
    assert result.lifted.block == ("32 * WARPS_PER_BLOCK",)
    source = result.lifted.source
    assert "for (const float* p = values + offsets[seg] + lane; p < end; p += LANES)" in source
    assert "for (int step = (LANES / 2); step > 0; step /= 2) {" in source
    assert "do {" not in source and "while (step > 0)" not in source
    # ILP's copies of the counter keep its pointer type
    assert "const float* const wb_at = p + wb_u * LANES;" in source
    # the walk's reads through __ldg under LDG 1: the loop as written and ILP's three reads
    assert source.count("WB_RO(*p)") == 4
    assert "LDG: applied: 1 read(s) of values through p in the segment loops" in \
        "\n".join(result.notes)
    # VEC's float4 middle from the segment's first element (the start less the lane)
    assert "const float* const wb_lo = ((values + offsets[seg] + lane) - " \
        "(int)(threadIdx.x % LANES));" in source
    assert "wb_q[wb_u] = WB_RO(*(wb_v + wb_u * LANES));" in source
    # every line keeps its number: the shuffle and the store stay on the lines they were on
    assert source.splitlines().index("  if (lane == 0) sums[seg] = s;") - \
        source.splitlines().index("  float s = 0.0f;") == 49  # the VEC and ILP branches


def test_an_index_walk_and_a_down_shuffle_do_loop_lift_the_same_knobs() -> None:
    lifted = _lift(INDEX_WALK)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "for (int i = offsets[seg] + lane; i < stop; i += LANES) {" in lifted.source
    assert "for (int o = (LANES / 2); o != 0; o >>= 1) {" in lifted.source
    assert lifted.source.count("WB_RO(values[i])") == 4
    assert "const float* const wb_lo = values + ((offsets[seg] + lane) - " \
        "(int)(threadIdx.x % LANES));" in lifted.source


def test_a_row_pointer_walk_lifts_the_same_knobs_and_reads_through_ldg() -> None:
    lifted = _lift(ROW_POINTER)
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "for (const float* q = row + lane; q < row + len; q += LANES) total += " \
        "WB_RO(*q);" in lifted.source
    assert lifted.source.count("WB_RO(*q)") == 4


@pytest.mark.parametrize(("old", "new"), [
    # the pointee writable: the kernel promises nothing
    ("const float* values,", "float* values,"),
    # the row pointer's address taken: it may change where the analysis does not look
    ("float total = 0.0f;", "float total = 0.0f; const float* const* at = &row; (void)at;"),
    # a const local pointer into a writable parameter: const says nothing of the buffer
    ("= &values[offsets[seg]];", "= &sums[offsets[seg]];"),
], ids=["writable-pointee", "address-taken", "const-local-into-an-output"])
def test_a_walk_not_shown_into_a_const_parameter_keeps_plain_reads(old: str, new: str) -> None:
    assert old in ROW_POINTER
    lifted = _lift(ROW_POINTER.replace(old, new))
    assert {"LANES", "ILP"} <= {p.name for p in lifted.params}, lifted.notes
    assert "LDG" not in {p.name for p in lifted.params}, lifted.source
    assert "WB_RO" not in lifted.source
    assert any(n.startswith("LDG: not applied: the segment loops read no array of a "
                            "pointer-to-const parameter") for n in lifted.notes), lifted.notes


@pytest.mark.parametrize(("old", "new", "why"), [
    # a do whose first test fails runs its body once; the for would not
    ("int o = 16;\n    do", "int o = 0;\n    do", "outside an offset loop"),
    # the counter read after the loop: a for would scope it away
    ("if (!lane) sums[seg] = acc;", "if (!lane) sums[seg] = acc + i;", "the lane is used in"),
    # a store between the declaration and the loop: the offset's read may not move past it
    ("float acc = 0.f;", "float acc = 0.f; sums[seg] = 0.f;", "the lane is used in"),
], ids=["do-first-test-fails", "counter-read-after", "store-between"])
def test_loops_that_are_not_the_same_program_stay_as_written(old: str, new: str,
                                                            why: str) -> None:
    assert old in INDEX_WALK
    lifted = _lift(INDEX_WALK.replace(old, new))
    assert "LANES" not in {p.name for p in lifted.params}
    assert any(n.startswith("LANES: not applied") and why in n for n in lifted.notes), \
        lifted.notes


def _same_sums(kf: KernelFolder, source: str, tmp_path: Path, flags: tuple[str, ...],
               mixes: list[dict[str, Any]], inputs: dict[str, np.ndarray] | None = None
               ) -> list[dict[str, Any]]:
    """Runs ``kf``'s lift at :func:`host_configs` (the default, ``mixes``, the all-ends
    configs) and the kernel ``source`` as written on the host on ``inputs`` (the folder's by
    default); asserts every sum within the folder's tolerance; the configs run."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, mixes)
    inputs = _inputs(kf) if inputs is None else inputs
    host = held_back_unseen10.host_source
    want = _run(kf, host(source), kf.baseline.launch_for({}, env), inputs,
                tmp_path / "plain", flags)
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        _assert_same(kf, got, want, f"segment_sums at {config}")
    return configs


#: The expert's pick in the lift's knobs over the default: ILP 4 and LDG 1 in one config.
_PICK = {"WARPS_PER_BLOCK": 4, "LANES": 8, "ILP": 4, "VEC": 1, "LDG": 1, "MIN_BLOCKS_PER_SM": 0}


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_sums_every_segment_at_every_end_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    ran = _same_sums(kf, kf.baseline.render({}, "fp32").source, tmp_path, host_flags, MIXES)
    assert _PICK in ran


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("source", [INDEX_WALK, ROW_POINTER], ids=["index-walk", "row-pointer"])
def test_other_spellings_sum_every_segment_at_the_ends_and_the_pick(
        source: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", source)
    ran = _same_sums(kf, source, tmp_path / "runs", host_flags, MIXES[:1])
    assert _PICK in ran


def _edge_inputs(kf: KernelFolder) -> dict[str, np.ndarray]:
    """The check shape's inputs with its first segments of lengths 0 .. 9 and 15 .. 17
    (shorter than a float4, one, none, a quad and a bit), each starting at every residue
    mod 4 (a filler segment of 0 .. 3 floats before each: short segments too), the rest cut
    at random as the folder's are."""
    sizes = kf.shape_values(kf.check_shape)
    segments, n = sizes["segments"], sizes["n"]
    lengths: list[int] = []
    for length in (*range(10), 15, 16, 17):
        for residue in range(4):
            lengths += [(residue - sum(lengths)) % 4, length]
    rng = np.random.default_rng(7)
    head = int(np.sum(lengths))
    cuts = np.sort(rng.integers(head, n + 1, size=segments - len(lengths) - 1))
    offsets = np.concatenate([[0], np.cumsum(lengths), cuts, [n]]).astype(np.int32)
    starts, sizes_ = offsets[:-1], np.diff(offsets)
    for length in (*range(10), 15, 16, 17):  # every short length at every residue
        assert set(starts[sizes_ == length] % 4) == {0, 1, 2, 3}, length
    values = rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
    return {"values": values, "offsets": offsets}


#: VEC 4 at the expert's pick, at 2 lanes a segment (one float4 a lane a step), at a warp a
#: segment with 2 float4s in flight and at 4 lanes with plain loads (LDG 0).
VEC_MIXES = [{**_PICK, "VEC": 4},
             {"WARPS_PER_BLOCK": 2, "LANES": 2, "ILP": 1, "VEC": 4, "LDG": 1},
             {"WARPS_PER_BLOCK": 1, "LANES": 32, "ILP": 2, "VEC": 4, "LDG": 1},
             {"WARPS_PER_BLOCK": 8, "LANES": 4, "ILP": 4, "VEC": 4, "LDG": 0}]


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("source", [None, INDEX_WALK, ROW_POINTER],
                         ids=["folder", "index-walk", "row-pointer"])
def test_vec_sums_short_segments_at_every_start_residue(
        source: str | None, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER) if source is None else \
        respelled(FOLDER, tmp_path / "spelling", source)
    written = kf.baseline.render({}, "fp32").source if source is None else source
    mixes = VEC_MIXES if source is None else VEC_MIXES[:1]
    ran = _same_sums(kf, written, tmp_path / "runs", host_flags, mixes,
                     inputs=_edge_inputs(kf))
    assert {**_PICK, "VEC": 4} in ran
