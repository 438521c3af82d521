"""First contact with held-back set 9's gemv_q4_rows (issue 28): a warp a row whose walk
lives in a template helper the kernel passes its lane to.

On the H100 the lift was BLOCK_Y and MIN_BLOCKS_PER_SM only (1.02x, 19 % of a copy; the
expert's LANES, ROWS, VEC, UNROLL: 3.01x, 55 %). Two causes, both general:

- the helper (``dot_q4_row<32>(wq + row * words, .., words, lane)``) stayed a call: a kernel
  that reads thread indices itself kept every helper, and a pointer parameter bound to an
  expression refused inlining. A callee whose loop starts, ends or steps by a thread
  coordinate the kernel passes it (or a local computed from one) now carries the launch
  and is inlined; a pointer bound to an expression is a local holding that address;
- the lane loop's vector loads needed every use of the walk's variable to be a unit-stride
  index: the word's scale ``srow[w * 8 / GROUP]`` and its x slice ``x + w * 8`` refused VEC.
  Such reads are now evaluated per lane at the lane's own element (``w + wb_v``) where the
  body writes only locals and the streams, and the bound may be a local size
  (``words = cols / 8``: the constraint ``(cols // 8) % VEC == 0``).

The lift now has the expert's knobs: LANES (lanes a row), WARPS_PER_BLOCK (rows a block,
with 32 / LANES rows a warp), VEC (words a load), ITEMS_PER_THREAD (loads in flight: the
expert's UNROLL). On the host (g++) every checked config of the folder and of two other
spellings computes what the kernel as written computes; the two corpus kernels the vector
rule also reaches (row_top1: the column as a value in its tie rule; dequant_int8: the
group's scale ``scales[i / 64]``, its committed template regenerated) compute bit for bit
what they compute as written. Refused with the line: a body that writes memory at another
index than the streams', one that writes the walk's variable, and a one-element region
that writes a local declared before it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen6
import held_back_unseen9
import numpy as np
import pytest
from held_back_harness import BENCHMARKS
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import C_TYPES, _assert_same, _inputs, folder_runs
from test_templater_const_via import write_folder

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import inline_calls
from workbench.templater.records import TemplaterResult
from workbench.templater.semantic import lift_kernel

GEMV = BENCHMARKS / "corpus_compute_unseen9" / "gemv_q4_rows"
# dequant_int8's codes (the unseen3 table has no signed 8-bit type)
C_TYPES.setdefault("i8", ("signed char", np.int8))
KNOBS = ["WARPS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD", "RUN_VEC", "MIN_BLOCKS_PER_SM"]
#: ENERGY's lane loop has no inner loop: no run
NO_RUNS = [k for k in KNOBS if k != "RUN_VEC"]

#: A warp a row again, spelled otherwise: a plain helper walks the lane's columns with a
#: while loop from a 1-D block of four warps, xor shuffles, the row pointer an expression.
ENERGY = """\
__device__ float row_energy(const float* __restrict__ src, const float* __restrict__ w,
                            int n, int first) {
  float s = 0.0f;
  int c = first;
  while (c < n) {
    const float v = src[c];
    s += v * v * w[c];
    c += 32;
  }
  return s;
}

extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ a,
                             const float* __restrict__ g, const float* __restrict__ w,
                             int rows, int n) {
  const int lane = threadIdx.x & 31;
  const int r = blockIdx.x * 4 + (threadIdx.x >> 5);
  if (r >= rows) return;
  float s = row_energy(a + (size_t)r * n, w, n, lane);
  for (int o = 16; o >= 1; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) out[r] = g[r] * s;
}
"""

#: 8-bit codes four to a word, a scale per 16 columns, the helper's lane loop a for over
#: `lane * 1` with the step a constexpr; the column slice read through an index, not a
#: pointer.
CODES8 = """\
constexpr int kWarp = 32;

__device__ float dot8(const unsigned* q, const float* sc, const float* x, int nw, int l) {
  float acc = 0.0f;
  for (int w = l; w < nw; w += kWarp) {
    const unsigned word = q[w];
    for (int b = 0; b < 4; ++b) {
      const int c = 4 * w + b;
      acc += sc[c / 16] * (float)((int)((word >> (8 * b)) & 0xFFu) - 128) * x[c];
    }
  }
  return acc;
}

extern "C" __global__ void k(float* out, const unsigned* q, const float* sc, const float* x,
                             int rows, int cols) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  const int nw = cols / 4;
  float acc = dot8(q + row * nw, sc + row * (cols / 16), x, nw, threadIdx.x);
  for (int off = kWarp / 2; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (threadIdx.x == 0) out[row] = acc;
}
"""


def _energy(root: Path) -> KernelFolder:
    return write_folder(root / "energy", ENERGY, ["ceil_div(rows, 4)"], ["128"],
                        [("out", "f32", "out", ["rows"]), ("a", "f32", "in", ["rows", "n"]),
                         ("g", "f32", "in", ["rows"]), ("w", "f32", "in", ["n"]),
                         ("rows", "i32", "scalar", "rows"), ("n", "i32", "scalar", "n")],
                        {"rows": 11, "n": 96}, [])


def _codes8(root: Path) -> KernelFolder:
    return write_folder(root / "codes8", CODES8, ["ceil_div(rows, 4)"], ["32", "4"],
                        [("out", "f32", "out", ["rows"]),
                         ("q", "u32", "in", ["rows", "cols // 4"]),
                         ("sc", "f32", "in", ["rows", "cols // 16"]),
                         ("x", "f32", "in", ["cols"]),
                         ("rows", "i32", "scalar", "rows"), ("cols", "i32", "scalar", "cols")],
                        {"rows": 7, "cols": 160}, [])


def _knobs(result: TemplaterResult) -> list[str]:
    return [p.name for p in result.lifted.params]


# -- the lift ------------------------------------------------------------------------------


def test_the_folder_lifts_the_experts_knobs() -> None:
    result = offline_template(load_kernel_folder(GEMV))
    assert _knobs(result) == KNOBS
    assert "(cols // 8) % VEC == 0" in result.lifted.constraints
    assert "VEC * 4 <= 16" in result.lifted.constraints
    # a word's eight activations x + w * 8 in float2 / float4 loads (warp_runs)
    assert "8 % RUN_VEC == 0" in result.lifted.constraints
    assert dict(next(p for p in result.lifted.params if p.name == "RUN_VEC").spec)[
        "values"] == [1, 4]
    assert result.lifted.grid == ("ceil_div(rows, WARPS_PER_BLOCK * (32 // LANES))",)
    notes = "\n".join(result.notes)
    assert "INLINE: applied: dot_q4_row<32> inlined into gemv_q4_rows" in notes
    assert "VEC: applied: lane loop over w vectorized" in notes
    # the scale and the x slice read at the lane's own word
    source = result.lifted.source
    assert "srow[(w + wb_v) * 8 / GROUP]" in source and "x + (w + wb_v) * 8" in source
    # the expert's pick (8 lanes a row, 16 rows a block, a group a load, two deep) spelled
    # in the lift's knobs is in its space at the timed shape
    kf = load_kernel_folder(GEMV)
    pick = {"LANES": 8, "WARPS_PER_BLOCK": 4, "VEC": 4, "ITEMS_PER_THREAD": 2,
            "RUN_VEC": 4, "MIN_BLOCKS_PER_SM": 0}
    assert result.template.space(kf.env("mlp", "fp32")).rejection(pick) is None


@pytest.mark.parametrize(("make", "knobs"), [(_energy, NO_RUNS), (_codes8, KNOBS)],
                         ids=["energy", "codes8"])
def test_other_spellings_lift_the_same_knobs(make: Any, knobs: list[str],
                                             tmp_path: Path) -> None:
    result = offline_template(make(tmp_path))
    assert _knobs(result) == knobs, result.notes
    assert any(n.startswith("INLINE: applied") for n in result.notes)


def test_a_value_helper_given_an_index_is_inlined_as_a_recurrence() -> None:
    """The loop of ``horner`` runs over its own constant bound, not over the index the
    kernel passes: no walk of the kernel's lives in it. Its sum is carried from the point
    (``v``) trip to trip, so it is inlined as a recurrence (a15ce6b) under the kernel's
    guard; where its loop's ``k`` is also the kernel's name it stays a call, with why."""
    source = """\
__device__ float horner(float v, int i) {
  float r = 0.0f;
  for (int k = 0; k < 4; ++k) r = r * v + (float)(i + k);
  return r;
}
extern "C" __global__ void KERNEL(float* y, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = horner(x[i], i);
}
"""
    done = inline_calls(source.replace("KERNEL", "scale"), "scale", "k.cu")
    body = done.text[done.text.index("void scale"):]
    assert "horner(x[i], i);" not in body.replace("// horner(x[i], i)", "")
    assert "if (i < n) {" in body and "y[i] = r;" in body
    assert [f.applied for f in done.findings] == [True]
    clash = source.replace("KERNEL", "k")
    refused = inline_calls(clash, "k", "k.cu")
    assert refused.text == clash
    assert [f.applied for f in refused.findings] == [False]
    assert "collides" in refused.findings[0].reason


def test_a_walk_that_writes_memory_at_another_index_keeps_its_scalar_loop() -> None:
    """``w`` read as a value (``t[w / 2]``) while the body writes ``h[w / 2]``: the vector
    loads would move the read of an element the previous word wrote before that write."""
    source = """\
extern "C" __global__ void k(float* __restrict__ y, float* h, const float* __restrict__ a,
                             float* t, int rows, int n) {
  const int lane = threadIdx.x;
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  float acc = 0.0f;
  for (int w = lane; w < n; w += 32) {
    acc += a[row * n + w] * t[w / 2];
    h[w / 2] = acc;
  }
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) y[row] = acc;
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(rows, 8)"], block=["32", "8"],
                         scalars={"rows": "rows", "n": "n"})
    assert "VEC" not in [p.name for p in lifted.params]
    assert any(n.startswith("VEC: not applied: `w` is read as a value in `w / 2`") and
               "writes `h[w / 2]`" in n and "(line 9)" in n for n in lifted.notes), \
        lifted.notes


def test_a_walk_whose_body_steps_its_variable_keeps_its_scalar_loop() -> None:
    """``w`` read as a value where the body also writes it: the loop is no unit-stride
    walk (each lane's ``w + wb_v`` would be assigned)."""
    source = """\
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ a, int rows,
                             int n) {
  const int lane = threadIdx.x;
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  float acc = 0.0f;
  for (int w = lane; w < n; w += 32) {
    acc += a[row * n + w];
    if (acc > 1e30f) w += n;
  }
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) y[row] = acc;
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(rows, 8)"], block=["32", "8"],
                         scalars={"rows": "rows", "n": "n"})
    assert "VEC" not in [p.name for p in lifted.params]
    assert any(n.startswith("VEC: not applied: the body writes `w` (`w += n`)") and
               "(line 9)" in n for n in lifted.notes), lifted.notes


def test_one_element_regions_writing_a_local_declared_before_keep_their_element() -> None:
    """``base += i`` in a one-element-per-thread region: every thread as written starts
    from base = 3, the vector lanes would each start from the previous lane's sum."""
    source = """\
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x, int n) {
  int base = 3;
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) {
    base += i;
    y[i] = x[i] * (float)base;
  }
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 256)"], block=["256"],
                         scalars={"n": "n"})
    assert "VEC" not in [p.name for p in lifted.params]
    assert any(n.startswith("VEC: not applied: `base += i` writes base, declared before") and
               "(line 5)" in n for n in lifted.notes), lifted.notes


# -- the host simulation -------------------------------------------------------------------


def _mixes(result: TemplaterResult, picks: list[dict[str, int]]) -> list[dict[str, Any]]:
    base = dict(result.template.default_config())
    return [{**base, **pick} for pick in picks]


def _checked(result: TemplaterResult, kf: KernelFolder,
             picks: list[dict[str, int]]) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes (all valid at the check shape);
    without ``WORKBENCH_FULL_MATRIX=1`` the default, the first and last all-ends config
    and the mixes."""
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(result.template, env)
    assert ends
    space = result.template.space(env)
    mixes = _mixes(result, picks)
    for mix in mixes:
        assert space.rejection(mix) is None, (mix, space.rejection(mix))
    picked = [dict(result.template.default_config()),
              *(ends if FULL_MATRIX else [ends[0], ends[-1]]), *mixes]
    return [c for i, c in enumerate(picked) if c not in picked[:i]]


def _host_runs(kf: KernelFolder, result: TemplaterResult, configs: list[dict[str, Any]],
               work: Path, host_source: Any = str) -> list[dict[str, np.ndarray]]:
    """The plain kernel's outputs first, then each config's, from one host compile."""
    env = kf.env(kf.check_shape, "fp32")
    runs = [(host_source(kf.baseline.render({}, "fp32").source),
             kf.baseline.launch_for({}, env))]
    runs += [(host_source(result.template.render(c, "fp32").source),
              result.template.launch_for(c, env)) for c in configs]
    return folder_runs(kf, runs, _inputs(kf), work)


@pytest.mark.timeout(600)
def test_the_folder_computes_what_the_kernel_as_written_computes(tmp_path: Path) -> None:
    """The expert's two hand-picked mixes in the lift's knobs (8 lanes, 16 rows, a group a
    load two deep; 16 lanes, 2 rows, two words a load four deep, x in float4 in both:
    the second row past the 13 rows in the last block), its tuned pick (a warp a row, one
    warp a block, two words in flight, x in float4) and 4 lanes a row."""
    kf = load_kernel_folder(GEMV)
    result = offline_template(kf)
    configs = _checked(result, kf, [
        {"LANES": 8, "WARPS_PER_BLOCK": 4, "VEC": 4, "ITEMS_PER_THREAD": 2, "RUN_VEC": 4},
        {"LANES": 16, "WARPS_PER_BLOCK": 1, "VEC": 2, "ITEMS_PER_THREAD": 4, "RUN_VEC": 4},
        {"LANES": 32, "WARPS_PER_BLOCK": 1, "VEC": 1, "ITEMS_PER_THREAD": 2, "RUN_VEC": 4},
        {"LANES": 4, "WARPS_PER_BLOCK": 8, "VEC": 1, "ITEMS_PER_THREAD": 4,
         "MIN_BLOCKS_PER_SM": 2}])
    plain, *got = _host_runs(kf, result, configs, tmp_path,
                             held_back_unseen9.SET.host_source)
    assert not np.isnan(plain["y"]).any()
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, plain, f"lift at {config}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("make", [_energy, _codes8], ids=["energy", "codes8"])
def test_the_spellings_compute_what_they_compute_as_written(make: Any,
                                                           tmp_path: Path) -> None:
    kf = make(tmp_path)
    result = offline_template(kf)
    runs = {"RUN_VEC": 4} if "RUN_VEC" in _knobs(result) else {}
    configs = _checked(result, kf, [
        {"LANES": 8, "WARPS_PER_BLOCK": 2, "VEC": 4, "ITEMS_PER_THREAD": 2, **runs},
        {"LANES": 16, "WARPS_PER_BLOCK": 1, "VEC": 2, "ITEMS_PER_THREAD": 4}])
    plain, *got = _host_runs(kf, result, configs, tmp_path / "runs")
    assert not np.isnan(plain["out"]).any()
    # another summation order: within float rounding of the largest row (codes8's rows
    # cancel to ~1 % of it), where one dropped or repeated word moves a row by far more
    atol = 1e-5 * float(np.abs(plain["out"]).max())
    for config, outputs in zip(configs, got, strict=True):
        np.testing.assert_allclose(outputs["out"], plain["out"], rtol=1e-5, atol=atol,
                                   err_msg=f"lift at {config}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("folder,host_source,picks", [
    (BENCHMARKS / "corpus_compute_unseen6" / "row_top1", held_back_unseen6.SET.host_source,
     [{"BLOCK_THREADS": 64, "VEC": 2, "ITEMS_PER_THREAD": 2, "BRANCHLESS": 1}]),
    (BENCHMARKS / "corpus_holdout" / "dequant_int8", str,
     [{"BLOCK_THREADS": 96, "VEC": 4, "ITEMS_PER_THREAD": 2}]),
], ids=["row_top1", "dequant_int8"])
def test_kernels_the_value_reads_reach_print_what_they_print_as_written(
        folder: Path, host_source: Any, picks: list[dict[str, int]], tmp_path: Path) -> None:
    kf = load_kernel_folder(folder)
    result = offline_template(kf)
    assert "VEC" in _knobs(result)
    configs = _checked(result, kf, picks)
    plain, *got = _host_runs(kf, result, configs, tmp_path, host_source)
    for config, outputs in zip(configs, got, strict=True):
        for name, want in plain.items():
            np.testing.assert_array_equal(outputs[name], want, err_msg=f"{name} at {config}")
