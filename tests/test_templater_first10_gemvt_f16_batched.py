"""First contact with held-back set 10's gemvt_f16_batched (issue 28): a thread a column
walking down it, the walk's address a pointer stepped by the row length.

On the H100 the lift was BLOCK_THREADS, ITEMS_PER_THREAD and MIN_BLOCKS_PER_SM (3.20x, 22 %
of a copy; the expert's TX x RSPLIT block, VEC, UNROLL: 7.27x, 49 %, its pick 8 rows of 32
threads sharing a column's rows, four rows deep). The large shape has 8 x 1536 columns: as
written 12288 threads each walk 16384 rows, far too few loads in flight for the DRAM. The
knob that multiplies them, the expert's RSPLIT, is WALK_SPLIT here (:mod:`.split_walk`:
lanes sharing one thread's serial sum); it never looked at this walk, whose body is
``sum += __half2float(*a) * xb[i]; a += cols;``:

- the walk's body had to be ``s += E`` alone: a pointer stepped at its end (strength-reduced
  addressing, ``*a`` where another author writes ``A[i * cols]``) now counts as a step: a
  lane starts it its lane's steps on and steps it WALK_SPLIT times as far (the body's end
  or the update's comma, ``++r, k += cols``; ``+=``, ``-=``, ``++``, ``p = p + K``), where
  the amount reads nothing the loop writes and no later statement reads the stepped local;
- the summand could call nothing: a call now only has to be pure (:mod:`.purity`:
  ``__half2float``, the file's pure helpers) or ``__ldg``.

Items with independent state (:mod:`.ilp`) leave a walk over memory to WALK_SPLIT; they read
``*p`` with ``p`` stepped by the trips as one too (the folder's walk with a 1-D grid, where
they took it as a compute loop to interleave).

Refused, with the line: a step whose amount the loop changes, a stepped local read after the
walk. A walk an earlier transform regenerates whole is refused too, rather than split
inside text that transform renders itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen10
import numpy as np
import pytest
from held_back_harness import BENCHMARKS
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs
from test_templater_const_via import write_folder

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.write_policy import write_file
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult
from workbench.templater.semantic import lift_kernel

GEMVT = BENCHMARKS / "corpus_compute_unseen10" / "gemvt_f16_batched"
KNOBS = ["BLOCK_THREADS", "WALK_SPLIT", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"]

#: The same walk spelled otherwise: float matrix, an index (not a pointer) stepped in the
#: update's comma after a post-increment, a constexpr block, one matrix.
INDEX_STEP = """\
constexpr int kBlock = 128;

extern "C" __global__ void k(float* out, const float* W, const float* v, int rows, int cols) {
  const int c = blockIdx.x * kBlock + threadIdx.x;
  if (c >= cols) return;
  int k = c;
  float acc = 0.0f;
  for (int r = 0; r < rows; r++, k += cols)
    acc += W[k] * v[r];
  out[c] = acc;
}
"""

#: Again: a double sum over __ldg reads (a float result), the pointer stepped as `p = p + ld` from a
#: batch offset on blockIdx.y, the row's scale through a pure helper.
LDG_STEP = """\
__device__ double scaled(float a, float s) { return (double)a * (double)s; }

extern "C" __global__ void k(float* y, const float* __restrict__ A,
                             const float* __restrict__ s, int rows, int cols) {
  const int j = threadIdx.x + 64 * blockIdx.x;
  if (j >= cols) return;
  const int ld = cols;
  const float* p = A + (size_t)blockIdx.y * rows * ld + j;
  double total = 0.0;
  for (int r = 0; r < rows; ++r) {
    total += scaled(__ldg(p), s[r]);
    p = p + ld;
  }
  y[(size_t)blockIdx.y * cols + j] = (float)total;
}
"""

#: The folder's walk with one matrix (a 1-D grid): no blockIdx.y keeps items with
#: independent state from it, so they must read `*p` with `p += cols` as a walk over memory
#: (left to WALK_SPLIT) rather than a compute loop to interleave.
POINTER_1D = """\
extern "C" __global__ void k(float* out, const float* W, const float* v, int rows, int cols) {
  const int c = blockIdx.x * 128 + threadIdx.x;
  if (c >= cols) return;
  const float* p = W + c;
  float acc = 0.0f;
  for (int r = 0; r < rows; ++r) {
    acc += *p * v[r];
    p += cols;
  }
  out[c] = acc;
}
"""


def _with_tolerance(kf: KernelFolder, tol: str) -> KernelFolder:
    """``kf`` written again with fp32 tolerance ``tol`` (write_folder's is bit-exact: a
    split walk sums in another order)."""
    toml = (kf.path / "kernel.toml").read_text()
    write_file(kf.path, kf.path / "kernel.toml",
               toml.replace("fp32 = { rtol = 0, atol = 0 }", f"fp32 = {tol}"), overwrite=True)
    return load_kernel_folder(kf.path)


def _index_step(root: Path) -> KernelFolder:
    return _with_tolerance(write_folder(
        root / "index_step", INDEX_STEP, ["ceil_div(cols, 128)"], ["128"],
        [("out", "f32", "out", ["cols"]), ("W", "f32", "in", ["rows", "cols"]),
         ("v", "f32", "in", ["rows"]), ("rows", "i32", "scalar", "rows"),
         ("cols", "i32", "scalar", "cols")],
        {"rows": 45, "cols": 300}, []), "{ rtol = 1e-5, atol = 1e-4 }")


def _pointer_1d(root: Path) -> KernelFolder:
    return _with_tolerance(write_folder(
        root / "pointer_1d", POINTER_1D, ["ceil_div(cols, 128)"], ["128"],
        [("out", "f32", "out", ["cols"]), ("W", "f32", "in", ["rows", "cols"]),
         ("v", "f32", "in", ["rows"]), ("rows", "i32", "scalar", "rows"),
         ("cols", "i32", "scalar", "cols")],
        {"rows": 29, "cols": 200}, []), "{ rtol = 1e-5, atol = 1e-4 }")


def _ldg_step(root: Path) -> KernelFolder:
    return _with_tolerance(write_folder(
        root / "ldg_step", LDG_STEP, ["ceil_div(cols, 64)", "batch"], ["64"],
        [("y", "f32", "out", ["batch", "cols"]), ("A", "f32", "in", ["batch", "rows", "cols"]),
         ("s", "f32", "in", ["rows"]), ("rows", "i32", "scalar", "rows"),
         ("cols", "i32", "scalar", "cols")],
        {"batch": 2, "rows": 33, "cols": 150}, []), "{ rtol = 1e-6, atol = 1e-6 }")


def _knobs(result: TemplaterResult) -> list[str]:
    return [p.name for p in result.lifted.params]


# -- the lift ------------------------------------------------------------------------------


def test_the_folder_lifts_the_split_of_the_walk() -> None:
    result = offline_template(load_kernel_folder(GEMVT))
    assert _knobs(result) == KNOBS, result.notes
    assert result.lifted.block == ("BLOCK_THREADS * WALK_SPLIT",)
    assert "BLOCK_THREADS * WALK_SPLIT <= 1024" in result.lifted.constraints
    source = result.lifted.source
    # the lane starts at its lane's row and steps WALK_SPLIT rows at a time; the walked
    # pointer is read through the row (pointer_taps: a pointer stepped by a stride)
    assert "i = (0) + (int)(threadIdx.x % WALK_SPLIT); i < rows; i += WALK_SPLIT)" in source
    assert "sum += __half2float(a[(long long)i * cols]) * xb[i];" in source
    assert any(n.startswith("WALK_SPLIT: applied: the walk over `i` accumulating `sum`")
               for n in result.notes), result.notes
    # the expert's pick (8 x 32 threads on a column's rows) in the lift's knobs is in its
    # space at the timed shape: 32 columns of 8 lanes each
    kf = load_kernel_folder(GEMVT)
    pick = {"BLOCK_THREADS": 32, "WALK_SPLIT": 8, "ITEMS_PER_THREAD": 1,
            "MIN_BLOCKS_PER_SM": 0}
    assert result.template.space(kf.env("large", "fp32")).rejection(pick) is None


@pytest.mark.parametrize("make", [_index_step, _ldg_step, _pointer_1d],
                         ids=["index_step", "ldg_step", "pointer_1d"])
def test_other_spellings_lift_the_split(make: Any, tmp_path: Path) -> None:
    result = offline_template(make(tmp_path))
    assert "WALK_SPLIT" in _knobs(result), result.notes
    # the walk is left to the split, not interleaved as items with independent state
    assert "wb_it]" not in result.lifted.source


def _refusal(source: str) -> list[str]:
    """WALK_SPLIT's notes on ``source`` (a batch on blockIdx.y: no items with independent
    state take the walk first), which must not have the knob."""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(cols, 128)", "batch"], block=["128"],
                         scalars={"rows": "rows", "cols": "cols"})
    assert "WALK_SPLIT" not in [p.name for p in lifted.params]
    return [n for n in lifted.notes if n.startswith("WALK_SPLIT")]


def test_a_step_the_walk_changes_is_refused() -> None:
    notes = _refusal("""\
extern "C" __global__ void k(float* out, const float* W, int rows, int cols) {
  const int c = blockIdx.x * 128 + threadIdx.x;
  if (c >= cols) return;
  const float* p = W + (size_t)blockIdx.y * rows * cols + c;
  float acc = 0.0f;
  for (int r = 0; r < rows; ++r) {
    acc += *p;
    p += cols + r;
  }
  out[blockIdx.y * cols + c] = acc;
}
""")
    assert notes and "the step `p += cols + r` is not the same every iteration" in notes[0] \
        and "(line 8)" in notes[0], notes


def test_a_walk_items_per_thread_rewrote_is_left_to_them() -> None:
    """A walk over a shared table (``tab[r]`` times the item's value: no memory at the
    item's place) is a compute loop the items interleave, in their own text for each item's
    ``acc``. Split inside it as well (the transform before this check), the lanes' partial
    sums were each stored: the shuffle and the first-lane guard were lost in that text."""
    lifted = lift_kernel("""\
extern "C" __global__ void k(float* out, const float* W, const float* tab, int rows,
                             int cols) {
  const int c = blockIdx.x * 128 + threadIdx.x;
  if (c >= cols) return;
  const float xc = W[c];
  float acc = 0.0f;
  for (int r = 0; r < rows; ++r) acc += tab[r] * xc;
  out[c] = acc;
}
""", entry="k", grid=["ceil_div(cols, 128)"], block=["128"],
                         scalars={"rows": "rows", "cols": "cols"})
    knobs = [p.name for p in lifted.params]
    assert "ITEMS_PER_THREAD" in knobs and "WALK_SPLIT" not in knobs, lifted.notes
    assert "WALK_SPLIT" not in lifted.source
    notes = [n for n in lifted.notes if n.startswith("WALK_SPLIT")]
    assert notes and "an earlier transform rewrites lines 3..8 whole" in notes[0] and \
        "(line 7)" in notes[0], notes


def test_a_stepped_local_read_after_the_walk_is_refused() -> None:
    notes = _refusal("""\
extern "C" __global__ void k(float* out, const float* W, int rows, int cols) {
  const int c = blockIdx.x * 128 + threadIdx.x;
  if (c >= cols) return;
  int k = blockIdx.y * rows * cols + c;
  float acc = 0.0f;
  for (int r = 0; r < rows; ++r) {
    acc += W[k];
    k += cols;
  }
  out[blockIdx.y * cols + c] = acc + (float)k;
}
""")
    assert notes and "`k`, stepped in the walk, is read after it" in notes[0] and \
        "(line 10)" in notes[0], notes


# -- the host simulation -------------------------------------------------------------------


def _checked(result: TemplaterResult, kf: KernelFolder,
             picks: list[dict[str, int]]) -> list[dict[str, Any]]:
    """The default, the all-ends configs (the first and last without
    ``WORKBENCH_FULL_MATRIX=1``) and the mixes, each valid at the check shape."""
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(result.template, env)
    assert ends
    space = result.template.space(env)
    base = dict(result.template.default_config())
    mixes = [{**base, **pick} for pick in picks]
    for mix in mixes:
        assert space.rejection(mix) is None, (mix, space.rejection(mix))
    picked = [base, *(ends if FULL_MATRIX else [ends[0], ends[-1]]), *mixes]
    return [c for i, c in enumerate(picked) if c not in picked[:i]]


def _assert_lift_computes_the_kernel(kf: KernelFolder, picks: list[dict[str, int]],
                                     work: Path, host_source: Any = str) -> None:
    result = offline_template(kf)
    configs = _checked(result, kf, picks)
    env = kf.env(kf.check_shape, "fp32")
    runs = [(host_source(kf.baseline.render({}, "fp32").source),
             kf.baseline.launch_for({}, env))]
    runs += [(host_source(result.template.render(c, "fp32").source),
              result.template.launch_for(c, env)) for c in configs]
    plain, *got = folder_runs(kf, runs, _inputs(kf), work)
    for name, values in plain.items():
        assert not np.isnan(values).any(), name
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, plain, f"lift at {config}")


@pytest.mark.timeout(600)
def test_the_folder_computes_what_the_kernel_as_written_computes(tmp_path: Path) -> None:
    """The expert's pick in the lift's knobs (32 columns of 8 lanes: the 37 rows uneven
    over them), a warp a column over two items, and 2 lanes a column over 3 x 32 threads
    with a register cap (the 296 columns end inside the second item of the last block)."""
    _assert_lift_computes_the_kernel(load_kernel_folder(GEMVT), [
        {"BLOCK_THREADS": 32, "WALK_SPLIT": 8},
        {"BLOCK_THREADS": 32, "WALK_SPLIT": 32, "ITEMS_PER_THREAD": 2},
        {"BLOCK_THREADS": 96, "WALK_SPLIT": 2, "ITEMS_PER_THREAD": 2,
         "MIN_BLOCKS_PER_SM": 2}],
        tmp_path, held_back_unseen10.SET.host_source)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("make", [_index_step, _ldg_step, _pointer_1d],
                         ids=["index_step", "ldg_step", "pointer_1d"])
def test_the_spellings_compute_what_they_compute_as_written(make: Any,
                                                           tmp_path: Path) -> None:
    kf = make(tmp_path)
    result = offline_template(kf)
    split = {"WALK_SPLIT": 4} if "ITEMS_PER_THREAD" not in _knobs(result) else \
        {"WALK_SPLIT": 4, "ITEMS_PER_THREAD": 2}
    _assert_lift_computes_the_kernel(kf, [split, {"BLOCK_THREADS": 64, "WALK_SPLIT": 16}],
                                     tmp_path / "runs")
