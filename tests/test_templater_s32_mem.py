"""Session 32 (issue 28): two memory-bound kernels of held-back set 24 the templater lifted
badly, and two respellings of each (tests/spellings_s32_mem/).

- masked_fill_scale: a grid-stride loop over a ``size_t`` index whose step is a local
  (``size_t stride = (size_t)gridDim.x * blockDim.x;``), its element a conditional
  expression ``mask[i] ? value : in[i] * scale``. analysis.stride_loop read the step's
  factors as written only, so the local hid the loop (VEC: "no unit-stride per-thread
  loop"); it now reads them through a local never assigned (KernelFacts.factors). The
  vector family then refused ``mask[i]`` under the conditional: a stream read in the test
  of an ``if`` or ``?:`` runs, and one in an arm whose test reads only data (the streams at
  the element, scalar arguments, locals holding such values; never the index as a value
  nor a thread's place) loads whole (vector_access._selected_read: for some input the
  kernel as written reads the arm's element at every index). Launched on ``ceil_div(n,
  1024)`` blocks of 256 (four strides a thread), the vector loop's grid is ``ceil_div(n,
  BLOCK_THREADS * VEC * ITEMS_PER_THREAD * SPAN)`` with SPAN (ilp_gridstride's knob, as
  written 4; any grid is covered by the stride). Lifts BLOCK_THREADS, VEC, ITEMS_PER_THREAD,
  SPAN, MIN_BLOCKS_PER_SM: the expert's THREADS, VEC, ITEMS, STEPS.
  A grid-stride loop whose element runs a loop, in its body or in a helper it calls
  (hash_mix_rounds' ``mix_all``), is compute-bound: VEC leaves it to the items that
  interleave it (vector._memory_element; those lifts unchanged, and where the items are
  refused, a capped grid, nothing else lifts them either).
- rope_rotate_f16: a 64-thread block that is one head's row (``ROPE_PAIRS`` = ``ROPE_DIM /
  2``), never sized by blockDim, on a (heads, tokens) grid: nothing lifted. row_blocks.py
  runs the threads as written ROW_ITEMS a thread (block-width apart), ROWS_PER_BLOCK rows on
  threadIdx.y and PLANES_PER_BLOCK tokens in turn: the expert's HPB, TOK; and ROW_VEC
  (row_vec.py), ROW_VEC consecutive pairs a thread, the head's __half2 and the tables' float
  runs read and written as one 8- or 16-byte WbVec: the expert's PPT.

Host (g++): the corpus kernels and each respelling, lifted, bit for bit against the kernel as
written at the default, mixes and the all-ends configs.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen24
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s32_mem"
SET = held_back_unseen24.SET

_FILL = frozenset({"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD", "SPAN", "MIN_BLOCKS_PER_SM"})
_ROPE = frozenset({"ROW_ITEMS", "ROW_VEC", "ROWS_PER_BLOCK", "PLANES_PER_BLOCK"})

#: corpus kernel -> (its knobs, mixes checked bit for bit over the default)
CORPUS: dict[str, tuple[frozenset[str], list[dict[str, int]]]] = {
    # float4 / uchar4 groups of 128 threads, two a step, two strides (1001: the groups'
    # tail of one); scalars over 64 threads, four a step, one stride
    "masked_fill_scale": (_FILL, [
        {"BLOCK_THREADS": 128, "VEC": 4, "ITEMS_PER_THREAD": 2, "SPAN": 2},
        {"BLOCK_THREADS": 64, "VEC": 1, "ITEMS_PER_THREAD": 4, "SPAN": 1},
        {"BLOCK_THREADS": 160, "VEC": 2, "ITEMS_PER_THREAD": 8, "SPAN": 16,
         "MIN_BLOCKS_PER_SM": 2}]),
    # two pairs a thread, two heads a block (3 heads: the second block's second row idle),
    # four tokens a block (37: the last block one token); 8-byte runs of two steps; 16-byte
    # runs; 16-byte runs of two steps, eight heads (all of a row's 64 pairs: 8 threads);
    # eight pairs a step apart, as written one a run
    "rope_rotate_f16": (_ROPE, [
        {"ROW_ITEMS": 2, "ROWS_PER_BLOCK": 2, "PLANES_PER_BLOCK": 4},
        {"ROW_ITEMS": 2, "ROW_VEC": 2, "ROWS_PER_BLOCK": 2, "PLANES_PER_BLOCK": 4},
        {"ROW_VEC": 4, "ROWS_PER_BLOCK": 4, "PLANES_PER_BLOCK": 8},
        {"ROW_ITEMS": 2, "ROW_VEC": 4, "ROWS_PER_BLOCK": 8, "PLANES_PER_BLOCK": 16},
        {"ROW_ITEMS": 8, "ROWS_PER_BLOCK": 8, "PLANES_PER_BLOCK": 16}]),
}

#: respelling -> (the corpus kernel, a mix checked bit for bit)
SPELLED: dict[str, tuple[str, dict[str, int]]] = {
    "masked_fill_scale_longlong_helper": (
        "masked_fill_scale", {"BLOCK_THREADS": 128, "VEC": 4, "ITEMS_PER_THREAD": 2,
                              "SPAN": 2}),
    "masked_fill_scale_flag_local": (
        "masked_fill_scale", {"BLOCK_THREADS": 224, "VEC": 2, "ITEMS_PER_THREAD": 4,
                              "SPAN": 8}),
    "rope_rotate_f16_constexpr_pointers": (
        "rope_rotate_f16", {"ROW_ITEMS": 2, "ROW_VEC": 4, "ROWS_PER_BLOCK": 4,
                            "PLANES_PER_BLOCK": 4}),
    "rope_rotate_f16_headdim_macro": (
        "rope_rotate_f16", {"ROW_ITEMS": 4, "ROW_VEC": 2, "ROWS_PER_BLOCK": 8,
                            "PLANES_PER_BLOCK": 2}),
}



def _spelled(spelling: str, root: Path) -> KernelFolder:
    corpus = SPELLED[spelling][0]
    return respelled(SET.root / corpus, root, (SPELLINGS / f"{spelling}.cu").read_text())


@pytest.mark.parametrize("kernel", sorted(CORPUS))
def test_the_corpus_kernel_lifts_the_experts_knobs(kernel: str) -> None:
    lifted = offline_template(SET.folder(kernel)).lifted
    assert {p.name for p in lifted.params} == CORPUS[kernel][0], lifted.notes


@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_the_respelling_lifts_the_same_knobs(spelling: str, tmp_path: Path) -> None:
    lifted = offline_template(_spelled(spelling, tmp_path)).lifted
    assert {p.name for p in lifted.params} == CORPUS[SPELLED[spelling][0]][0], lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("kernel", sorted(CORPUS))
def test_the_corpus_lift_computes_as_written(kernel: str, tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = SET.folder(kernel)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), CORPUS[kernel][1])
    assert len(configs) >= 4
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(SPELLED))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelled(spelling, tmp_path / "folder")
    template = offline_template(kf).template
    configs = default_and_mix(template, kf, SPELLED[spelling][1])
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


def _lift(source: str, grid: list[str], block: list[str], scalars: dict[str, str]
          ) -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(source, entry="k", grid=grid, block=block, scalars=scalars)
    return {p.name for p in lifted.params}, lifted.notes


#: A grid-stride select: the arm's read is a stream the test selects by data.
SELECT = """extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ a,
                                  const float* __restrict__ b, int n, int m) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] > 0.0f ? a[i] : b[i];
  }
}
"""


@pytest.mark.parametrize(("old", "new", "vec"), [
    ("", "", True),
    # the test reads the index as a value: b may hold only the elements past m
    ("a[i] > 0.0f ? a[i] : b[i]", "i < m ? a[i] : b[i]", False),
    # the test reads the thread's place
    ("a[i] > 0.0f ? a[i] : b[i]", "threadIdx.x < 8 ? a[i] : b[i]", False),
    # a scalar argument's test: for some argument every element is read
    ("a[i] > 0.0f ? a[i] : b[i]", "m > 0 ? a[i] : b[i]", True),
    # a write under the test: the vector store would write elements the kernel skips
    ("out[i] = a[i] > 0.0f ? a[i] : b[i];", "if (a[i] > 0.0f) out[i] = b[i];", False),
    # the step a local the loop assigns: no grid-stride loop
    ("i += stride) {", "i += stride) { stride += 0;", False),
], ids=["data", "index", "thread", "scalar", "write", "assigned_step"])
def test_a_read_under_a_data_test_loads_whole(old: str, new: str, vec: bool) -> None:
    source = SELECT.replace(old, new)
    assert source != SELECT or not old
    names, notes = _lift(source, ["ceil_div(n, 1024)"], ["256"], {"n": "n", "m": "m"})
    assert ("VEC" in names) == vec, notes
    if vec:
        assert "SPAN" in names, notes


#: A block of one named-width row (rope_rotate_f16's shape).
ROW = """#define W 32
extern "C" __global__ void k(float* out, const float* x, int rows, int planes) {
  const size_t at = ((size_t)blockIdx.y * rows + blockIdx.x) * W + threadIdx.x;
  out[at] = 2.0f * x[at];
}
"""


@pytest.mark.parametrize(("old", "new", "lifted"), [
    ("", "", True),
    ("#define W 32", "constexpr int W = 32;", True),
    ("#define W 32", "#define W (64 / 2)", True),
    # no named width: a literal 32 (BLOCK_THREADS' matter, not the row's)
    ("* W +", "* 32 +", False),
    # the threads talk
    ("  out[at]", "  __syncthreads();\n  out[at]", False),
    # the launch's shape is read
    ("* W +", "* blockDim.x +", False),
    # a return inside a loop would end every later turn
    ("  out[at] = 2.0f * x[at];",
     "  for (int r = 0; r < 2; ++r) { if (x[at] < 0.0f) return; out[at] = 2.0f * x[at]; }",
     False),
], ids=["macro", "constexpr", "macro_expression", "literal", "barrier", "blockdim",
        "loop_return"])
def test_a_block_of_one_named_row_takes_rows_planes_and_items(old: str, new: str,
                                                              lifted: bool) -> None:
    source = ROW.replace(old, new)
    names, notes = _lift(source, ["rows", "planes"], ["32"], {"rows": "rows",
                                                               "planes": "planes"})
    assert (names >= _ROPE) == lifted, notes


def test_a_helper_reading_the_thread_place_keeps_the_block_as_written() -> None:
    source = ROW.replace("#define W 32", "#define W 32\n__device__ unsigned lane() "
                         "{ return threadIdx.x; }\n__device__ unsigned at_lane() "
                         "{ return lane(); }").replace("+ threadIdx.x;", "+ at_lane();")
    names, notes = _lift(source, ["rows", "planes"], ["32"], {"rows": "rows",
                                                               "planes": "planes"})
    assert not names & _ROPE, notes


@pytest.mark.parametrize(("old", "new", "vec"), [
    ("", "", True),
    # the row's offset a table row of the width: still aligned
    ("2.0f * x[at]", "2.0f * x[at] + x[blockIdx.y * W + threadIdx.x]", True),
    # a condition on the thread's place: the run's elements take different paths
    ("  out[at]", "  if (threadIdx.x < 8) return;\n  out[at]", False),
    # two elements apart: no run
    ("+ threadIdx.x;", "+ 2 * threadIdx.x;", False),
    # one element off the row: a vector would not be aligned
    ("+ threadIdx.x;", "+ threadIdx.x + 1;", False),
    # the written stream read back
    ("2.0f * x[at]", "2.0f * out[at]", False),
    # a read the thread's place selects through memory
    ("2.0f * x[at]", "2.0f * x[(int)x[at]]", False),
    # a write under a data test (some elements of a run are skipped)
    ("  out[at] = 2.0f * x[at];", "  if (x[at] > 0.0f) out[at] = 2.0f * x[at];", False),
    # a pointer handed to a helper
    ("#define W 32", "#define W 32\n__device__ float get(const float* p, size_t i) "
     "{ return p[i]; }", True),
    ("2.0f * x[at]", "2.0f * get(x, at)", False),
], ids=["plain", "table_row", "lane_test", "stride2", "misaligned", "read_back", "gather",
        "data_test", "unused_helper", "helper_pointer"])
def test_row_vec_takes_runs_only_where_every_run_is_one_path(old: str, new: str,
                                                             vec: bool) -> None:
    source = ROW.replace(old, new)
    assert source != ROW or not old
    names, notes = _lift(source, ["rows", "planes"], ["32"], {"rows": "rows",
                                                               "planes": "planes"})
    assert names >= _ROPE - {"ROW_VEC"}, notes
    assert ("ROW_VEC" in names) == vec, notes
