"""Held-back set 17's rowl1_scale_warp (issue 28): a warp a row whose lane 0 posts the row's
scale to a ``__shared__`` slot of its warp (``scale[warp]``), a barrier, every lane reading
it back. The warp family models such per-item slots (workbench/templater/warp_slots.py):
with LANES lanes a row the slot is the row's index in the block and the array the block's
rows; an unrolled shuffle tree (16 .. 1 as straight statements, warp_shuffles.py) keeps its
steps below LANES. Three spellings (an offset loop, an xor butterfly with a constexpr, the
folder's unrolled tree), each with ``for`` lane loops, lift LANES and the warps a block and
compute on the host what they compute as written at the default and a mix (every end and
more under WORKBENCH_FULL_MATRIX=1); the folder's own spelling still refuses on its
``while`` / reused-index lane loops, with the line.
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

SPELLINGS = {"macro": (MACRO_SLOTS, "ROWS_PER_BLOCK"),
             "constexpr": (CONSTEXPR_SLOTS, "WARPS_PER_BLOCK"),
             "unrolled": (UNROLLED_TREE, "ROWS_PER_BLOCK")}


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


def test_the_folder_spelling_still_names_what_is_missing() -> None:
    """The folder's own kernel: its uses of `warp` are modelled now; its lane loops (a
    ``while`` from ``begin + lane`` whose index the ``for`` pass assigns again) are what
    refuse it next, with the line."""
    source = (FOLDER / "rowl1_scale_warp.cu").read_text()
    notes = _lift(source).notes
    assert not any("the warp index" in n for n in notes), notes
    assert any(n.startswith("LANES: not applied") and "the lane is used in `begin + lane`"
               in n and "(line 21)" in n for n in notes), notes


def _configs(kf: KernelFolder, warps: str) -> list[dict[str, Any]]:
    """The default, both ends of the lanes a row crossed with both ends of the warps a
    block, every all-ends config, 8 lanes a row, and last a mix: 2 lanes a row (16 rows a
    warp) in 2-warp blocks through the read-only path."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    fewest = next(p.values()[0] for p in template.params if p.name == "LANES")
    crossed = [{**default, "LANES": n, warps: w} for n in (fewest, 32) for w in (1, 32)]
    return [default, *crossed, *end_configs(template, env), {**default, "LANES": 8},
            {**default, "LANES": fewest, warps: 2, "LDG": 1}]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_slot_spellings_compute_as_written_on_host(spelling: str, tmp_path: Path) -> None:
    source, warps = SPELLINGS[spelling]
    kf = respelled(FOLDER, tmp_path / "folder", source)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space = template.space(dict(env))
    listed = _configs(kf, warps)
    assert {2, 32} <= {c["LANES"] for c in listed}  # both ends of the lanes a row
    configs = host_sample(listed)
    for config in configs:
        assert space.rejection(config) is None, config
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path / "runs")
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, want, str(config))
