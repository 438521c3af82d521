"""First contact with held-back set 16's kde2d_tiles (issue 28): a weighted Gaussian sum over
points staged in shared tiles, the block size a file-scope ``constexpr int kTile = 128`` that
is the tile's extent too, each tile walked by a pointer-bumping ``while (p < end)`` with the
weights' pointer stepped beside it.

On the H200 (08:48Z) the lift had BLOCK_THREADS and MIN_BLOCKS_PER_SM only (0.98x against
the expert's 1.42x: THREADS, ITEMS, UNROLL, EXP2; its pick 512 threads, a query a thread,
unrolled by 4, exp2f). Two causes:

* The block lift made three uses of ``kTile`` BLOCK_THREADS (the tiles' extents, the block
  offset) and left the walk over tiles ``base += kTile`` and the tile's count as written:
  below 128 threads the walk read points no thread had staged (the host simulation at
  BLOCK_THREADS 64 and 96: density differs; the GPU gate had cut the space at ``BLOCK_THREADS
  > 96``). A ``#define`` has the rule that its definition reads the parameter its uses were
  lifted to (:func:`.macros.lift_macros`); a file-scope constant now follows by the same
  rule, so every use follows, and the staged walk (:mod:`.staged_walk`) reads the tile
  loop's step as the block size (JSPLIT).
* The walk of the tile stepped two pointers at its end: ITEMS refused ``++p`` (it would run
  once an item). A ``while`` walking pointers in step one element a pass is the index loop
  it counts (:func:`.loop_forms._pointer_walk`), each read at its base plus the count, so
  the staged walk's items share each staged point (ITEMS) and the loop they share gets the
  unroll knob (UNROLL) where the author wrote none. The walk is each output's compute loop,
  so FAST_MATH (:mod:`.ilp_fastmath`: ``expf`` as ``__expf``, the hardware ``ex2`` of the
  argument times log2(e), as the expert's EXP2) applies to it.

Pure: the folder's lift and two other spellings (a namespace ``const int`` with an index
loop; a struct's ``static constexpr`` with ``while (pp != stop)``, ``(*pp).x``, ``wp[0]``,
``wp += 1``, ``pp++``) gain BLOCK_THREADS, ITEMS, JSPLIT, UNROLL, FAST_MATH; walks the rule
cannot read are not indexed (no ITEMS). Host (g++): each lift at the default, the expert's
pick in the lift's knobs, mixes and the all-ends configs (their first and last; all of them
with ``WORKBENCH_FULL_MATRIX=1``) against the kernel as written: bit for bit with one row
(every query sums its points in point order), within the folder's tolerance with rows
(their sums added row by row).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen16
import numpy as np
import pytest
from held_back_harness import prepended, respelled
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen16.SET.root / "kde2d_tiles"


#: The same density by another hand: the tile a ``const int`` in a namespace, the weights
#: and points staged as separate x / y arrays, an index loop over the tile bounded by min().
SPELLING = """namespace kde {
const int TILE_POINTS = 128;
}

extern "C" __global__ void kde2d_tiles(float* density, const float* query, const float* pts,
                                       const float* w, int nq, int npts) {
  __shared__ float sx[kde::TILE_POINTS], sy[kde::TILE_POINTS];
  __shared__ float sw[kde::TILE_POINTS];
  int t = threadIdx.x;
  int q = t + kde::TILE_POINTS * blockIdx.x;
  float qx = 0.0f, qy = 0.0f;
  if (q < nq) {
    qx = query[2 * q];
    qy = query[2 * q + 1];
  }
  float sum = 0.0f;
  for (int first = 0; first < npts; first += kde::TILE_POINTS) {
    if (first + t < npts) {
      sx[t] = pts[2 * (first + t)];
      sy[t] = pts[2 * (first + t) + 1];
      sw[t] = w[first + t];
    }
    __syncthreads();
    int n = min(kde::TILE_POINTS, npts - first);
    for (int k = 0; k < n; k++) {
      float ex = qx - sx[k], ey = qy - sy[k];
      sum += sw[k] * expf(-8.0f * (ex * ex + ey * ey));
    }
    __syncthreads();
  }
  if (q < nq) density[q] = sum;
}
"""

#: The same walk by a third hand: the tile a struct's constant, the points and weights
#: walked by ``while (pp != stop)`` with the weights' pointer stepped first, read as
#: ``(*pp).x`` and ``wp[0]``.
WALK = """struct Tiles {
  static constexpr int kPoints = 128;
};

extern "C" __global__ void kde2d_tiles(float* density, const float* query, const float* pts,
                                       const float* w, int nq, int npts) {
  __shared__ float2 sp[Tiles::kPoints];
  __shared__ float sw[Tiles::kPoints];
  const float2* qs = (const float2*)query;
  const float2* ps = (const float2*)pts;
  int tid = threadIdx.x;
  int i = blockIdx.x * Tiles::kPoints + tid;
  float2 mine = i < nq ? qs[i] : make_float2(0.0f, 0.0f);
  float total = 0.0f;
  for (int t0 = 0; t0 < npts; t0 += Tiles::kPoints) {
    if (t0 + tid < npts) {
      sp[tid] = ps[t0 + tid];
      sw[tid] = w[t0 + tid];
    }
    __syncthreads();
    const int n = min(npts - t0, Tiles::kPoints);
    const float* wp = sw;
    const float2* pp = sp;
    const float2* stop = sp + n;
    while (pp != stop) {
      float ex = (*pp).x - mine.x;
      float ey = (*pp).y - mine.y;
      total += wp[0] * expf(-8.0f * (ex * ex + ey * ey));
      wp += 1;
      pp++;
    }
    __syncthreads();
  }
  if (i < nq) density[i] = total;
}
"""

KNOBS = ["BLOCK_THREADS", "ITEMS", "JSPLIT", "UNROLL", "FAST_MATH", "MIN_BLOCKS_PER_SM"]
#: Mixes over the default: the expert's H200 pick in the lift's knobs (512 threads, a query
#: a thread, unrolled by 4, __expf for its exp2f); 64 threads (wrong before the constant
#: followed the block) of two queries; 128 threads in two rows of two queries, not unrolled.
#: The host reads __expf as expf: FAST_MATH's numbers are the GPU gate's to check.
MIXES = [{"BLOCK_THREADS": 512, "ITEMS": 1, "JSPLIT": 1, "UNROLL": 4, "FAST_MATH": 1},
         {"BLOCK_THREADS": 64, "ITEMS": 2, "UNROLL": 4},
         {"BLOCK_THREADS": 128, "ITEMS": 2, "JSPLIT": 2, "UNROLL": 1, "MIN_BLOCKS_PER_SM": 2,
          "FAST_MATH": 1}]


def _knobs(result: TemplaterResult) -> list[str]:
    return [p.name for p in result.lifted.params]


def test_the_folder_lift_reads_the_tile_constant_and_the_walk() -> None:
    kf = load_kernel_folder(FOLDER)
    result = offline_template(kf)
    assert _knobs(result) == KNOBS, result.notes
    source = result.lifted.source
    assert "constexpr int kTile = BLOCK_THREADS;" in source
    assert "wb_base += (kTile) * JSPLIT" in source  # the walk over tiles follows the block
    assert any(n.startswith("kTile: applied: kTile = 128 is BLOCK_THREADS") and "(line 8)" in n
               for n in result.notes), result.notes
    assert "for (int wb_k = 0; wb_k < (end) - p; ++wb_k) {" in source
    assert "me[wb_u].x - p[wb_k].x" in source and "acc[wb_u] += pw[wb_k] * WB_F_expf(" in source
    assert result.lifted.grid == ("ceil_div(nq, BLOCK_THREADS * ITEMS)",)
    pick = {**dict(result.template.default_config()), **MIXES[0]}
    assert result.template.space(kf.env("large", "fp32")).rejection(pick) is None


@pytest.mark.parametrize("spelling", ["SPELLING", "WALK"])
def test_other_spellings_lift_the_same_knobs(spelling: str, tmp_path: Path) -> None:
    result = offline_template(respelled(FOLDER, tmp_path, globals()[spelling]))
    assert _knobs(result) == KNOBS, result.notes
    assert ("const int TILE_POINTS = BLOCK_THREADS;" if spelling == "SPELLING" else
            "static constexpr int kPoints = BLOCK_THREADS;") in result.lifted.source


@pytest.mark.parametrize(("old", "new"), [
    ("wp += 1;", "wp += 2;"),  # a companion two elements a pass: not one index
    ("    __syncthreads();\n  }\n  if (i < nq)", "    total += wp[0];\n    __syncthreads();\n"
     "  }\n  if (i < nq)"),  # a walked pointer read after the walk
    ("float ex = (*pp).x - mine.x;", "if ((*pp).x < 0.0f) { wp += 1; pp++; continue; }\n"
     "      float ex = (*pp).x - mine.x;"),  # a continue that skips the steps
], ids=["step-2", "read-after", "continue"])
def test_walks_the_rule_cannot_read_stay_as_written(old: str, new: str) -> None:
    assert old in WALK
    lifted = lift_kernel(WALK.replace(old, new), entry="kde2d_tiles", grid=["ceil_div(nq, 128)"],
                         block=["128"], scalars={"nq": "nq", "npts": "npts"})
    assert "wb_k" not in lifted.source  # at most the walk of pp alone is counted
    assert "ITEMS" not in [p.name for p in lifted.params], lifted.notes


def _computes_as_written(kf: KernelFolder, work: Path) -> int:
    result = offline_template(kf)
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(result.template, env, MIXES)
    host = prepended("#define __expf(v) expf(v)\n")  # FAST_MATH's call, expf on the host
    runs = [(host(kf.baseline.render({}, "fp32").source), kf.baseline.launch_for({}, env))]
    runs += [(host(result.template.render(c, "fp32").source), result.template.launch_for(c, env))
             for c in configs]
    plain, *got = folder_runs(kf, runs, _inputs(kf), work)
    assert np.abs(plain["density"]).max() > 0
    for config, outputs in zip(configs, got, strict=True):
        _same_or_close(kf, config, outputs, plain)
    return len(configs)


def _same_or_close(kf: KernelFolder, config: dict[str, Any], got: dict[str, np.ndarray],
                   plain: dict[str, np.ndarray]) -> None:
    """Bit for bit with one row (each query sums its points in point order, as written);
    with rows, whose sums are added row by row, within the folder's tolerance."""
    if config.get("JSPLIT", 1) == 1:
        for name, values in plain.items():
            assert (got[name] == values).all(), f"{name} of the lift at {config} differs"
        return
    _assert_same(kf, got, plain, f"lift at {config}")


@needs_gxx
@pytest.mark.timeout(600)
def test_the_folder_lift_computes_as_written(tmp_path: Path) -> None:
    assert _computes_as_written(load_kernel_folder(FOLDER), tmp_path) >= 4


@needs_gxx
@pytest.mark.timeout(600)
@pytest.mark.parametrize("spelling", ["SPELLING", "WALK"])
def test_other_spellings_compute_as_written(spelling: str, tmp_path: Path) -> None:
    kf = respelled(FOLDER, tmp_path, globals()[spelling])
    assert _computes_as_written(kf, tmp_path / "runs") >= 4
