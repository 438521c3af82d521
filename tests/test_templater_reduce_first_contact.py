"""Grid-stride reductions whose block stage is the author's warp shuffles: one shared slot
per warp reduced by warp 0 or folded by thread 0 (``__shfl_down_sync``, ``__shfl_xor_sync``
butterflies), warp-level atomics with no shared memory. The stage is read (reduce_tail) and
written anew under FINAL (a shared tree or shuffles, at any block size of whole warps), and
the loop gets GRID_BLOCKS / VEC / ITEMS_PER_THREAD; each lift's far corner
runs on the host (every thread a coroutine) with the partials adding up (max-ing up) to the
exact answer. Stages that miss a warp's slot, count a warp 32 times, read an input, scale a
value or combine with another operator than the loop's are refused naming the line, and so
are stages the analysis does not read (a ``while`` tree, a ``volatile`` last warp).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX, lifted_template, run_merged_on_host
from test_corpus_unseen3 import _SPILLS, _ptxas_log
from test_templater_reduce_spellings import _HARNESS, _MAIN, _WANT, _corner

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

OUTS = frozenset({"part", "peaks", "sums", "total", "dots"})

#: block stages whose coverage the analysis does not show (a warp-synchronous last warp in
#: a helper): refused with the line, left as written
KEPT_AS_WRITTEN: dict[str, tuple[str, int, int]] = {
    # the tree to 64, then the last warp unrolled in a volatile helper
    "volatile_last_warp_helper": (r"""
__device__ void warp_reduce(volatile int* sd, int tid) {
  sd[tid] += sd[tid + 32]; sd[tid] += sd[tid + 16]; sd[tid] += sd[tid + 8];
  sd[tid] += sd[tid + 4]; sd[tid] += sd[tid + 2]; sd[tid] += sd[tid + 1];
}
extern "C" __global__ void k(int* sums, const int* in, int n) {
  __shared__ int sd[128];
  int tid = threadIdx.x;
  int sum = 0;
  for (int i = blockIdx.x * 128 + tid; i < n; i += 128 * gridDim.x) sum += in[i];
  sd[tid] = sum;
  __syncthreads();
  for (int s = 64; s > 32; s >>= 1) {
    if (tid < s) sd[tid] += sd[tid + s];
    __syncthreads();
  }
  if (tid < 32) warp_reduce(sd, tid);
  if (tid == 0) sums[blockIdx.x] = sd[0];
}
""", 100, 128),
}

#: extern shared, a while walk through a stride local, a while halving tree: the tree reads
#: as its for loop (a counted while may halve its variable), the walk lifts, the block
#: stays as written (the launch sizes the shared memory)
WHILE_TREE = (r"""
extern "C" __global__ void k(float* part, const float* x, int n) {
  extern __shared__ float buf[];
  const int tx = threadIdx.x;
  float acc = 0.f;
  int g = blockIdx.x * blockDim.x + tx;
  const int step = blockDim.x * gridDim.x;
  while (g < n) { acc += x[g]; g += step; }
  buf[tx] = acc;
  __syncthreads();
  int width = blockDim.x / 2;
  while (width > 0) {
    if (tx < width) buf[tx] += buf[tx + width];
    __syncthreads();
    width /= 2;
  }
  if (tx == 0) part[blockIdx.x] = buf[0];
}
""", 100, 128, "float", "sum", "float")


# name -> (source, grid, block, element type, reduction kind, accumulator type)
CASES: dict[str, tuple[str, int, int, str, str, str]] = {
    # size_t walk with macros, shuffles down, one shared slot per warp, warp 0 finishes
    "shuffle_two_level_macros": (r"""
#define THREADS 256
#define NBLK 132
extern "C" __global__ void k(float* part, const float* __restrict__ x, size_t n) {
  __shared__ float warp_sums[THREADS / 32];
  float v = 0.0f;
  for (size_t i = blockIdx.x * (size_t)THREADS + threadIdx.x; i < n;
       i += (size_t)THREADS * NBLK)
    v += x[i];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0) warp_sums[wid] = v;
  __syncthreads();
  if (wid == 0) {
    v = lane < THREADS / 32 ? warp_sums[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) part[blockIdx.x] = v;
  }
}
""", 132, 256, "float", "sum", "float"),
    # a double sum of squares, an xor butterfly, thread 0 adds the 8 slots in a loop
    "xor_butterfly_thread0_loop": (r"""
extern "C" __global__ void k(double* sums, const double* a, int n) {
  __shared__ double s[8];
  double acc = 0.0;
  int tid = threadIdx.x;
  for (int i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x)
    acc += a[i] * a[i];
  for (int m = 16; m >= 1; m /= 2) acc += __shfl_xor_sync(0xffffffff, acc, m);
  if ((tid % 32) == 0) s[tid / 32] = acc;
  __syncthreads();
  if (tid == 0) {
    double t = 0.0;
    for (int w = 0; w < 8; ++w) t += s[w];
    sums[blockIdx.x] = t;
  }
}
""", 80, 256, "double", "sumsq", "double"),
    # warp-level atomics, no shared memory, blockDim.x read
    "warp_atomics_no_shared": (r"""
extern "C" __global__ void k(int* total, const int* __restrict__ x, int n) {
  int v = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    v += x[i];
  #pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(total, v);
}
""", 64, 128, "int", "sum", "int"),
    # warp 0 by threadIdx.x < 32, an xor butterfly, lane 0 adds atomically; int, blockDim.x
    "warp0_xor_atomic_int": (r"""
extern "C" __global__ void k(int* total, const int* __restrict__ v, int n) {
  __shared__ int per_warp[4];
  int s = 0;
  for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += gridDim.x * blockDim.x)
    s = s + v[i];
  for (int mask = warpSize / 2; mask > 0; mask /= 2) s = s + __shfl_xor_sync(0xffffffff, s, mask);
  const unsigned lane = threadIdx.x % 32;
  if (lane == 0) per_warp[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    int w = lane < 4 ? per_warp[lane] : 0;
    for (int mask = 16; mask >= 1; mask >>= 1) w += __shfl_xor_sync(0xffffffffu, w, mask);
    if (lane == 0) atomicAdd(total, w);
  }
}
""", 72, 128, "int", "sum", "int"),
    # a max of |x| with an xor butterfly, thread 0 folds the slots with fmaxf
    "maxabs_xor_fold": (r"""
#define NT 128
extern "C" __global__ void k(float* peaks, const float* __restrict__ x, unsigned n) {
  __shared__ float wmax[NT / 32];
  float m = 0.0f;
  for (unsigned i = blockIdx.x * NT + threadIdx.x; i < n; i += NT * gridDim.x)
    m = fmaxf(m, fabsf(x[i]));
  for (int d = 16; d; d >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
  if (threadIdx.x % 32 == 0) wmax[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    float best = wmax[0];
    for (int w = 1; w < NT / 32; ++w) best = fmaxf(best, wmax[w]);
    peaks[blockIdx.x] = best;
  }
}
""", 96, 128, "float", "maxabs", "float"),
}


def lift(name: str, source: str | None = None) -> LiftedSource:
    text, grid, block, *_ = CASES[name]
    return lift_kernel(source or text, entry="k", grid=[str(grid)], block=[str(block)],
                       scalars={"n": "n"}, compared_by_total=OUTS)


def knobs(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_stage_is_read_and_the_loop_lifts(name: str) -> None:
    _source, grid, _block, _elem, kind, acc = CASES[name]
    lifted = lift(name)
    spec = knobs(lifted)
    assert {"GRID_BLOCKS", "ITEMS_PER_THREAD"} <= set(spec), lifted.notes
    # the stage is written anew: the block size and the choice of stage lift with it
    assert {"BLOCK_THREADS", "FINAL"} <= set(spec) and spec["FINAL"]["default"] == 1, spec
    assert f"GRID_BLOCKS <= {grid}" in lifted.constraints
    note = next(n for n in lifted.notes if n.startswith("REDUCTION: applied"))
    assert "written anew" in note and f"every accumulator once, by the loop's {kind[:3]}" \
        in note, note
    # integer sums and maxima: every order gives the same bits; a float sum's order moves it
    assert ("exact in any order" in note) == (kind.startswith("max") or acc == "int"), note


REFUSED = {
    # thread 0 skips slot 0
    ("xor_butterfly_thread0_loop", "for (int w = 0; w < 8; ++w)", "for (int w = 1; w < 8; ++w)",
     "does not add each of the 8 slots"),
    # warp 0 reads half the warps' slots
    ("shuffle_two_level_macros", "v = lane < THREADS / 32 ?", "v = lane < THREADS / 64 ?",
     "is not `v = lane < 8 ? warp_sums[lane] : identity`"),
    # the stage reads an input element
    ("xor_butterfly_thread0_loop", "double t = 0.0;", "double t = a[0];",
     "does not add each of the 8 slots"),
    # the stage scales a value: not the accumulator's own
    ("shuffle_two_level_macros", "if (lane == 0) warp_sums[wid] = v;",
     "if (lane == 0) warp_sums[wid] = 2.0f * v;", "is not lane 0's `slot[warp] = v;`"),
    # another operator than the loop's
    ("shuffle_two_level_macros", "v += __shfl_down_sync(0xffffffffu, v, off);\n  const",
     "v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));\n  const",
     "the warp loop's body is not `v = v sum __shfl_down_sync"),
    # offsets 8 to 1: half of each warp
    ("maxabs_xor_fold", "for (int d = 16; d; d >>= 1)", "for (int d = 8; d; d >>= 1)",
     "does not run the offsets 16, 8, 4, 2, 1"),
    # every lane adds its butterfly's total: 32 times each warp
    ("warp_atomics_no_shared", "if ((threadIdx.x & 31) == 0) atomicAdd(total, v);",
     "atomicAdd(total, v);", "is not lane 0's store of `v`"),
}


@pytest.mark.parametrize(("base", "old", "new", "why"), sorted(REFUSED))
def test_stages_that_miss_or_repeat_a_value_are_refused_with_the_line(
        base: str, old: str, new: str, why: str) -> None:
    source = CASES[base][0]
    assert old in source
    lifted = lift(base, source.replace(old, new, 1))
    found = [n for n in lifted.notes if n.startswith("REDUCTION: not applied")]
    assert found and "nor is it a block stage kept as written" in found[0], lifted.notes
    assert why in found[0] and "(line " in found[0], found[0]
    assert "GRID_BLOCKS" not in knobs(lifted)


@pytest.mark.parametrize("name", sorted(KEPT_AS_WRITTEN))
def test_stages_the_analysis_does_not_read_are_refused(name: str) -> None:
    source, grid, block = KEPT_AS_WRITTEN[name]
    lifted = lift_kernel(source, entry="k", grid=[str(grid)], block=[str(block)],
                         scalars={"n": "n"}, compared_by_total=OUTS)
    found = [n for n in lifted.notes if n.startswith("REDUCTION: not applied")]
    assert found and "is not a warp loop over" in found[0], lifted.notes
    assert "GRID_BLOCKS" not in knobs(lifted)


_XOR = r"""
static const int warpSize = 32;
template <typename T> static T __shfl_xor_sync(unsigned, T v, int m) {
  static T slot[1024];
  const unsigned t = threadIdx.x;
  slot[t] = v;
  wb_yield();
  const T r = slot[t ^ (unsigned)m];
  wb_yield();
  return r;
}
static int atomicAdd(int* p, int v) { const int old = *p; *p += v; return old; }
"""


def _program(template: KernelTemplate, config: dict[str, Any], *, n: int,
             case: tuple[str, int, int, str, str, str]) -> str:
    """A host program printing the folded partials and the exact answer."""
    _source, grid, _block, elem, kind, acc = case
    launch = template.launch_for(config, {"n": n, "elem_bytes": 4})
    source = template.render(config, "fp32").source if template.params else template.source
    atomic = "atomicAdd(total" in source
    slots = 1 if atomic else grid
    fold = "std::max(got, (long long)out[s])" if kind.startswith("max") else \
        "got + (long long)out[s]"
    main = _MAIN % {"n": n, "elem": elem, "acc": acc, "slots": slots,
                    "poison": "0" if atomic else "12345", "gx": launch.grid[0],
                    "bx": launch.block[0], "entry": template.entry, "args": "a.data()",
                    "want": _WANT[kind], "fold": fold, "init": "0", "shift": 8}
    # the launch's dynamic shared memory: one float per thread
    source = source.replace("extern __shared__ float buf[];", "static float buf[1024];")
    return _HARNESS + _XOR + source + main


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
def test_each_stage_reduces_to_the_exact_answer_on_host(tmp_path: Path) -> None:
    """The far corner of every spelling (with WORKBENCH_FULL_MATRIX=1 the kernel as written
    and the default too) against the exact answer: one host program for all."""
    env = {"n": 7003, "elem_bytes": 4}
    runs: list[tuple[str, dict[str, Any]]] = []
    programs: list[str] = []
    for name in sorted(CASES):
        source, grid, block, *_ = CASES[name]
        template = lifted_template(lift(name), "k")
        configs: list[dict[str, Any]] = [dict(template.default_config())] if FULL_MATRIX \
            else []
        if FULL_MATRIX:  # the kernel as written (the harness's own check)
            written = KernelTemplate.build(name="k", source=source, entry="k",
                                           grid=[str(grid)], block=[str(block)])
            runs.append((name, {}))
            programs.append(_program(written, {}, n=7003, case=CASES[name]))
        for config in [*configs, _corner(template, env)]:
            runs.append((name, config))
            programs.append(_program(template, config, n=7003, case=CASES[name]))
    printed = run_merged_on_host(tmp_path, "sims", _HARNESS + _XOR, programs)
    for (name, config), out in zip(runs, printed, strict=True):
        got, want = map(int, out.split())
        assert got == want, (name, config)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
def test_a_while_halving_tree_keeps_its_block_and_the_walk_lifts(tmp_path: Path) -> None:
    """The default and the far corner (with WORKBENCH_FULL_MATRIX=1 the kernel as written
    too) against the exact answer."""
    source, grid, block, *_ = WHILE_TREE
    lifted = lift_kernel(source, entry="k", grid=[str(grid)], block=[str(block)],
                         scalars={"n": "n"}, compared_by_total=OUTS)
    assert [p.name for p in lifted.params] == ["GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD",
                                               "FINAL"], lifted.notes
    template = lifted_template(lifted, "k")
    configs = [dict(template.default_config()), _corner(template, {"n": 7003, "elem_bytes": 4})]
    programs = [_program(template, c, n=7003, case=WHILE_TREE) for c in configs]
    if FULL_MATRIX:
        written = KernelTemplate.build(name="k", source=source, entry="k", grid=[str(grid)],
                                       block=[str(block)])
        programs.append(_program(written, {}, n=7003, case=WHILE_TREE))
    for out in run_merged_on_host(tmp_path, "sims", _HARNESS + _XOR, programs):
        got, want = map(int, out.split())
        assert got == want


@needs_nvcc
@pytest.mark.timeout(300)
def test_a_kept_stage_compiles_without_spills_at_its_far_corner(tmp_path: Path) -> None:
    template = lifted_template(lift("shuffle_two_level_macros"), "k")
    config = _corner(template, {"n": 1 << 24, "elem_bytes": 4})
    log = _ptxas_log(template.render(config, "fp32").source, tmp_path, "corner")
    spills = _SPILLS.findall(log)
    assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"
