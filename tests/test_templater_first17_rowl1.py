"""Held-back set 17's rowl1_scale_warp (issue 28): a warp a row whose lane 0 posts the row's
scale to a ``__shared__`` slot of its warp (``scale[warp]``), a barrier, every lane reading
it back. The warp family models such per-item slots (workbench/templater/warp_slots.py):
with LANES lanes a row the slot is the row's index in the block and the array the block's
rows; an unrolled shuffle tree (16 .. 1 as straight statements, warp_shuffles.py) keeps its
steps below LANES. Three spellings (an offset loop, an xor butterfly with a constexpr, the
folder's unrolled tree), each with ``for`` lane loops, lift LANES and the warps a block and
compute on the host what they compute as written at the default and a mix (every end and
more under WORKBENCH_FULL_MATRIX=1). The folder's own lane loops reuse one counter (a
``while`` from ``begin + lane``, then ``for (j = begin + lane; ...)``): the second assigns
it before any read, so each is a loop with a counter of its own
(workbench/templater/loop_forms_reuse.py), and the folder lifts LANES, the warps a block and
ILP on its summing pass; so does another author's row-pointer spelling (``while`` loops
stepping ``warpSize``, restarted by ``j = lid;``, an xor butterfly). A counter read after its
last loop, or whose address is taken, stays one counter and the lane loops refuse.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from held_back_harness import respelled
from helpers_templater import end_configs, host_sample
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import counted_whiles
from workbench.templater.semantic import lift_kernel

FOLDER = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen17" / \
    "rowl1_scale_warp"

#: The folder's kernel with its shuffle tree as a loop and its lane loops as ``for`` loops.
MACRO_SLOTS = """#include <cstdint>
#define ROWS_PER_BLOCK 4
#define EPS 1e-6f
extern "C" __global__ void rowl1_scale_warp(float* __restrict__ out, const float* __restrict__ x,
                                            const int* __restrict__ offs, int rows) {
  __shared__ float scale[ROWS_PER_BLOCK];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * ROWS_PER_BLOCK + (int)warp;
  const bool live = row < rows;
  const int64_t begin = live ? offs[row] : 0;
  const int64_t end = live ? offs[row + 1] : 0;
  float s = 0.0f;
  for (int64_t j = begin + lane; j < end; j += 32) s += fabsf(x[j]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) scale[warp] = 1.0f / (s + EPS);
  __syncthreads();
  if (!live) return;
  const float k = scale[warp];
  for (int64_t j = begin + lane; j < end; j += 32) out[j] = x[j] * k;
}
"""

#: Another author: a constexpr, `/ 32` and `% 32`, an xor butterfly, the row's sum posted
#: by lane 0 (every lane holds it) and the scale computed after the barrier.
CONSTEXPR_SLOTS = """#include <cstdint>
constexpr int kWarps = 4;
extern "C" __global__ void rowl1_scale_warp(float* __restrict__ out, const float* __restrict__ x,
                                            const int* __restrict__ offs, int rows) {
  __shared__ float row_sum[kWarps];
  const int w = threadIdx.x / 32;
  const int l = threadIdx.x % 32;
  const int r = w + kWarps * blockIdx.x;
  const int first = r < rows ? offs[r] : 0;
  const int last = r < rows ? offs[r + 1] : 0;
  float acc = 0.0f;
  for (int c = first + l; c < last; c += 32) acc += fabsf(x[c]);
  for (int m = 1; m < 32; m *= 2) acc += __shfl_xor_sync(0xffffffffu, acc, m);
  if (l == 0) row_sum[(w)] = acc;
  __syncthreads();
  const float inv = 1.0f / (row_sum[w] + 1e-6f);
  if (r >= rows) return;
  for (int c = first + l; c < last; c += 32) out[c] = x[c] * inv;
}
"""

#: The folder's shuffle tree as written: unrolled, literal offsets 16 .. 1.
LOOP = "  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);\n"
TREE = "".join(f"  s += __shfl_down_sync(0xffffffffu, s, {o});\n" for o in (16, 8, 4, 2, 1))
UNROLLED_TREE = MACRO_SLOTS.replace(LOOP, TREE)

#: The folder's kernel as written: a ``while`` lane loop, its counter reused by a ``for``.
FOLDER_SOURCE = (FOLDER / "rowl1_scale_warp.cu").read_text()

#: Another author: a row pointer and the row's length, ``warpSize`` steps, ``while`` lane
#: loops sharing one counter (``int j = lid;`` then ``j = lid;``), an xor butterfly loop.
ROW_POINTER = """#include <cstdint>
#define WPB 4
extern "C" __global__ void rowl1_scale_warp(float* __restrict__ out, const float* __restrict__ x,
                                            const int* __restrict__ offs, int rows) {
  __shared__ float inv_norm[WPB];
  const int tid = threadIdx.x;
  const int wid = tid / warpSize;
  const int lid = tid % warpSize;
  const int row = WPB * blockIdx.x + wid;
  const int first = row < rows ? offs[row] : 0;
  const int n = row < rows ? offs[row + 1] - first : 0;
  const float* r = x + (size_t)first;
  float* o = out + (size_t)first;
  float acc = 0.f;
  int j = lid;
  while (j < n) {
    acc += fabsf(r[j]);
    j += warpSize;
  }
  for (int m = 16; m >= 1; m /= 2) acc += __shfl_xor_sync(0xffffffff, acc, m);
  if (lid == 0) inv_norm[wid] = 1.0f / (acc + 1e-6f);
  __syncthreads();
  if (row >= rows) return;
  const float scale = inv_norm[wid];
  j = lid;
  while (j < n) {
    o[j] = r[j] * scale;
    j += warpSize;
  }
}
"""

SPELLINGS = {"macro": (MACRO_SLOTS, "ROWS_PER_BLOCK"),
             "constexpr": (CONSTEXPR_SLOTS, "WARPS_PER_BLOCK"),
             "unrolled": (UNROLLED_TREE, "ROWS_PER_BLOCK"),
             "folder": (FOLDER_SOURCE, "ROWS_PER_BLOCK"),
             "row_pointer": (ROW_POINTER, "WPB")}


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="rowl1_scale_warp", grid=["ceil_div(rows, 4)"],
                       block=["128"], smem_bytes="0", scalars={"rows": "11"}, file="k.cu",
                       compared_by_total=frozenset())


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_per_warp_shared_slot_follows_the_rows_a_block(spelling: str) -> None:
    source, warps = SPELLINGS[spelling]
    lifted = _lift(source)
    knobs = {p.name: dict(p.spec) for p in lifted.params}
    assert {"LANES", warps} <= set(knobs), lifted.notes
    assert knobs["LANES"]["default"] == 32 and knobs[warps]["default"] == 4
    assert f"[({warps} * (32 / LANES))];" in lifted.source  # the slots: the block's rows
    assert lifted.grid == (f"ceil_div(rows, {warps} * (32 // LANES))",)
    assert "__syncthreads();" in lifted.source


@pytest.mark.parametrize(("change", "reason"), [
    (("if (lane == 0) scale[warp]", "if (lane == 0) scale[warp ^ 1u]"),
     "the warp index `warp` is used beyond the item index, in"),
    (("const float k = scale[warp];", "const float k = scale[0];"),
     "the shared array `scale` is used as"),
    (("  __syncthreads();\n", "  if (live) __syncthreads();\n"), "__syncthreads"),
    (("  if (!live) return;\n", ""), None),  # the barrier's place is what matters, not this
])
def test_slots_refuse_what_they_do_not_model(change: tuple[str, str], reason: str | None
                                             ) -> None:
    """A slot of another warp, a fixed slot, a barrier some threads may skip: refused, with
    the reason; the kernel without its early exit still lifts."""
    lifted = _lift(MACRO_SLOTS.replace(*change))
    names = {p.name for p in lifted.params}
    if reason is None:
        assert "LANES" in names, lifted.notes
        return
    assert "LANES" not in names
    assert any(n.startswith("LANES: not applied") and reason in n for n in lifted.notes), \
        lifted.notes


def test_an_unrolled_tree_keeps_its_steps_below_lanes() -> None:
    lifted = _lift(UNROLLED_TREE)
    assert "LANES" in {p.name for p in lifted.params}, lifted.notes
    for o in (16, 8, 4, 2, 1):
        assert f"if ({o} < LANES) s += __shfl_down_sync(wb_group_mask(), s, {o}, LANES);" \
            in lifted.source


@pytest.mark.parametrize(("tree", "reason"), [
    ((16, 8), "take the offsets 16, 8, not a whole tree"),  # a partial sum: not a tree
    ((1, 2, 4, 8, 16), "take the offsets 1, 2, 4, 8, 16"),  # down shuffles doubling
])
def test_a_partial_or_misordered_tree_is_refused(tree: tuple[int, ...], reason: str) -> None:
    steps = "".join(f"  s += __shfl_down_sync(0xffffffffu, s, {o});\n" for o in tree)
    lifted = _lift(MACRO_SLOTS.replace(LOOP, steps))
    assert "LANES" not in {p.name for p in lifted.params}
    assert any(n.startswith("LANES: not applied") and reason in n for n in lifted.notes), \
        lifted.notes


def _respelled_loops(source: str) -> str:
    return counted_whiles(InlinedSource(source, "k.cu"), "rowl1_scale_warp").text


@pytest.mark.parametrize(("source", "loops"), [
    (FOLDER_SOURCE, ["for (int64_t j = begin + lane; j < end; j += 32) {",
                     "for (int64_t j = begin + lane; j < end; j += 32) out[j]"]),
    (ROW_POINTER, ["for (int j = lid; j < n; j += warpSize) {"] * 2),
])
def test_a_reused_counter_is_each_loops_own(source: str, loops: list[str]) -> None:
    """Each pass declares its counter (the ``while`` takes the declaration or the ``j =
    lid;`` that restarts it; the assigning ``for`` a declaration of the same type); every
    line keeps its number."""
    text = _respelled_loops(source)
    heads = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("for (") and
             " j" in ln]
    assert len(heads) == len(loops), text
    assert all(h.startswith(want) for h, want in zip(heads, loops, strict=True)), heads
    assert len(text.splitlines()) == len(source.splitlines())


def test_a_restart_no_loop_takes_keeps_the_counter() -> None:
    """``j = lid;`` before a loop over another counter that reads ``j``: the assignment
    stays, so ``j``'s declaration stays where it is and the first ``while`` with it."""
    second = "  j = lid;\n  while (j < n) {\n    o[j] = r[j] * scale;\n    j += warpSize;\n  }\n"
    other = ("  j = lid;\n  int i = lid;\n  while (i < n) {\n    o[i] = r[i] * scale + (float)j;"
             "\n    i += warpSize;\n  }\n")
    text = _respelled_loops(ROW_POINTER.replace(second, other))
    assert "  int j = lid;\n  while (j < n) {" in text and "  j = lid;\n" in text, text
    assert "for (int i = lid; i < n; i += warpSize)" in text, text


@pytest.mark.parametrize("change", [
    ("out[j] = x[j] * k;\n}", "out[j] = x[j] * k;\n  if (j == end + 1) out[0] = 0.0f;\n}"),
    ("  float s = 0.0f;\n", "  float s = 0.0f;\n  int64_t* at = &j;\n"),
    ("  for (j = begin", "  if (rows > 1) for (j = begin"),
])
def test_a_counter_read_after_its_last_loop_stays_one(change: tuple[str, str]) -> None:
    """A read after the last loop, its address taken (the declaration moved before the
    pointer: `&j` is the same variable as written), a restart some paths skip: the value
    the first loop leaves may be read, so the counter stays one and the lane loops refuse,
    with the line of the ``while``'s start."""
    source = FOLDER_SOURCE.replace(*change)
    if "&j" in change[1]:
        source = source.replace("  int64_t j = begin + lane;\n", "").replace(
            "  float s = 0.0f;\n", "  int64_t j = begin + lane;\n  float s = 0.0f;\n", 1)
    assert source != FOLDER_SOURCE
    assert "while (j < end)" in _respelled_loops(source)
    lifted = _lift(source)
    assert "LANES" not in {p.name for p in lifted.params}
    assert any(n.startswith("LANES: not applied") and "the lane is used in `begin + lane`"
               in n for n in lifted.notes), lifted.notes


#: The folder's first pass as an open ``for`` (``for (; j < end; j += 32)``).
OPEN_FOR = FOLDER_SOURCE.replace(
    "  while (j < end) {\n    s += fabsf(x[j]);\n    j += 32;\n  }\n",
    "  for (; j < end; j += 32) s += fabsf(x[j]);\n")


@pytest.mark.parametrize("source", [FOLDER_SOURCE, OPEN_FOR], ids=["while", "open_for"])
def test_the_folder_lifts_its_knobs(source: str) -> None:
    """The expert's WARPS and LANES (as ROWS_PER_BLOCK and LANES) and its ACC (ILP on the
    summing pass; the scaling pass stays as written, each step independent already)."""
    assert "for (; j < end; j += 32)" in OPEN_FOR  # the replace took
    lifted = _lift(source)
    knobs = {p.name: dict(p.spec) for p in lifted.params}
    assert {"ROWS_PER_BLOCK", "LANES", "ILP"} <= set(knobs), lifted.notes
    assert knobs["ILP"]["default"] == 1 and knobs["LANES"]["min"] == 2
    assert any(n.startswith("ILP: applied: `s +=`") for n in lifted.notes), lifted.notes
    assert lifted.source.count("#if ILP > 1") == 1


#: The mix's value of each further knob a spelling lifts: 4 sums a lane, the read-only
#: path, 64 elements of a row in registers (rows of the check shape run past it).
_MIX = {"ILP": 4, "LDG": 1, "REG_ROW": 64}


def _configs(kf: KernelFolder, warps: str) -> list[dict[str, Any]]:
    """The default, both ends of the lanes a row crossed with both ends of the warps a
    block, every all-ends config, 8 lanes a row, and last a mix: the fewest lanes a row (8
    or 16 rows a warp) in 2-warp blocks with the further knobs of :data:`_MIX`."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    fewest = next(p.values()[0] for p in template.params if p.name == "LANES")
    crossed = [{**default, "LANES": n, warps: w} for n in (fewest, 32) for w in (1, 32)]
    more = {k: v for k, v in _MIX.items() if k in default}
    return [default, *crossed, *end_configs(template, env), {**default, "LANES": 8},
            {**default, "LANES": fewest, warps: 2, **more}]


def _host(source: str) -> str:
    """``source`` for the host simulation, which has no ``warpSize`` built in."""
    return ("static const int warpSize = 32;\n" if "warpSize" in source else "") + source


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_slot_spellings_compute_as_written_on_host(spelling: str, tmp_path: Path) -> None:
    source, warps = SPELLINGS[spelling]
    kf = respelled(FOLDER, tmp_path / "folder", source)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space = template.space(dict(env))
    listed = _configs(kf, warps)
    lanes = {c["LANES"] for c in listed}
    assert 32 in lanes and min(lanes) <= 4  # both ends of the lanes a row
    configs = host_sample(listed)
    for config in configs:
        assert space.rejection(config) is None, config
    runs = [(_host(kf.baseline.render({}, "fp32").source), kf.baseline.launch_for({}, env)),
            *((_host(template.render(c, "fp32").source), template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path / "runs")
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, want, str(config))
