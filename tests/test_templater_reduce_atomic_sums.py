"""Floating sums gathered by ``atomicAdd`` on ``__shared__`` scalars (issue 28): FINAL (a
warp's shuffle sum, then one atomic a warp) on every such atomic, UNROLL on the loop they
add, VEC (float2 / float4 loads) where that loop's sums go whole to the atomics, and CHUNKS
(several of the grid's fixed chunks a block, the written grid's other slots 0) where the
outputs are compared by their total.

moments_partials (benchmarks/corpus_compute_unseen6, spent) lifted BLOCK_THREADS and
MIN_BLOCKS_PER_SM only: its two shared doubles were not read as counters (integers only).
The kernel as written already adds its threads' values in the order their atomics land, so
its totals are defined up to the rounding of that order; the folder compares the partials'
totals (reference.py verify()). The folder and four spellings of our own run on the host
(every thread a coroutine, shuffles exchanged through the block) at the default, the last
all-ends config and sampled configs, their totals within the folder's tolerance of the
reference: float counters fed by a ``#define`` span and ``acc = acc + v`` (VEC, CHUNKS too);
a chunk derived from ``gridDim.x`` walked by ``while`` into double counters (no alignment
known: VEC refused with the line; no fixed chunk: no CHUNKS); a dot product's partials with
a ``constexpr`` span (its index read inside a sum: VEC refused; CHUNKS); sums of squares
whose chunk is a kernel argument (FINAL only). A chunk used otherwise, a store at another
slot, or partials compared element by element keep CHUNKS off with the line; a sum read
after the loop other than by its atomic keeps VEC off. The lifted folder compiles for sm_90
without spills at its ends.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from held_back_unseen6 import host_source
from helpers_templater import end_configs, host_sample, lifted_template, run_merged_on_host
from test_corpus_unseen3 import (
    _SPILLS,
    FOLDER_PREFIX,
    NVCC,
    _assert_same,
    _inputs,
    _ptxas_log,
    folder_runs,
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

MOMENTS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen6" / \
    "moments_partials"

#: The host's atomicAdd on a float (held_back_unseen6 has the double one).
_FLOAT_ATOMIC = ("static inline float atomicAdd(float* p, float v) "
                 "{ const float old = *p; *p = old + v; return old; }\n")

SPELLINGS: dict[str, str] = {
    # a #define span, float counters and float sums, the loop index `k`, the step the
    # literal block, `acc = acc + v`, `if (!threadIdx.x)`
    "define_float": r"""
#define SPAN 4096
extern "C" __global__ void moments_partials(float* sums, float* sumsq, const float* x, int n) {
  __shared__ float tot;
  __shared__ float tot2;
  if (!threadIdx.x) { tot = 0.0f; tot2 = 0.0f; }
  __syncthreads();
  const int first = blockIdx.x * SPAN;
  const int len = min(n - first, SPAN);
  const float* seg = x + first;
  float acc = 0.0f;
  float acc2 = 0.0f;
  for (int k = threadIdx.x; k < len; k += 128) {
    const float v = seg[k];
    acc = acc + v;
    acc2 = acc2 + v * v;
  }
  atomicAdd(&tot, acc);
  atomicAdd(&tot2, acc2);
  __syncthreads();
  if (!threadIdx.x) {
    sums[blockIdx.x] = tot;
    sumsq[blockIdx.x] = tot2;
  }
}
""",
    # the chunk derived from gridDim.x (another split of n than the reference's: the totals
    # are the same), a while walk from a thread-index local, double counters named otherwise
    "griddim_while": r"""
extern "C" __global__ void moments_partials(float* sums, float* sumsq, const float* x, int n) {
  __shared__ double lin, quad;
  const unsigned me = threadIdx.x;
  if (me == 0) { lin = 0.0; quad = 0.0; }
  __syncthreads();
  const int per = (n + (int)gridDim.x - 1) / (int)gridDim.x;
  const int lo = (int)blockIdx.x * per;
  const int hi = min(lo + per, n);
  double a = 0.0;
  double b = 0.0;
  int at = lo + (int)me;
  while (at < hi) {
    const double w = (double)x[at];
    a += w;
    b += w * w;
    at += blockDim.x;
  }
  atomicAdd(&lin, a);
  atomicAdd(&quad, b);
  __syncthreads();
  if (me == 0) { sums[blockIdx.x] = (float)lin; sumsq[blockIdx.x] = (float)quad; }
}
""",
}
_BLOCKS = {"define_float": 128, "griddim_while": 256}
#: The spellings whose loop lifts VEC and CHUNKS as well.
_VECTOR = {"define_float"}

#: A dot product's partials: two arrays, a constexpr span, one float counter.
DOT = r"""
constexpr int kSpan = 2048;
extern "C" __global__ void k(float* part, const float* a, const float* b, int n) {
  __shared__ float got;
  if (threadIdx.x == 0) got = 0.0f;
  __syncthreads();
  const int base = blockIdx.x * kSpan;
  const int m = min(kSpan, n - base);
  float d = 0.0f;
  for (int j = threadIdx.x; j < m; j += blockDim.x) d += a[base + j] * b[base + j];
  atomicAdd(&got, d);
  __syncthreads();
  if (threadIdx.x == 0) part[blockIdx.x] = got;
}
"""


def _spelled(tmp_path: Path, source: str, block: int) -> KernelFolder:
    """moments_partials' folder with ``source`` as its kernel, launched with ``block``
    threads (its grid, arguments and verify() as they are)."""
    folder = tmp_path / "moments_partials"
    shutil.copytree(MOMENTS, folder, ignore=shutil.ignore_patterns("expert"))
    (folder / "baseline.cu").write_text(source)
    toml = folder / "kernel.toml"
    toml.write_text(toml.read_text().replace('block = ["256"]', f'block = ["{block}"]'))
    return load_kernel_folder(folder)


def _knobs(kf: KernelFolder) -> set[str]:
    return {p.name for p in offline_template(kf).lifted.params}


def test_the_folder_lifts_final_on_both_sums_unroll_and_vec() -> None:
    result = offline_template(load_kernel_folder(MOMENTS))
    assert {"BLOCK_THREADS", "FINAL", "UNROLL", "VEC", "CHUNKS"} <= \
        {p.name for p in result.lifted.params}
    assert result.lifted.grid == ("ceil_div(n, 4096 * CHUNKS)",)
    finals = [n for n in result.notes if n.startswith("FINAL: applied")]
    assert len(finals) == 2 and "`block_sum` (double)" in finals[0] and \
        "`block_sq` (double)" in finals[1] and "unspecified" in finals[0], finals
    assert any(n.startswith("VEC: applied: the counting loop reads `chunk[j]`") and
               "q, s" in n for n in result.notes), result.notes
    source = result.template.source
    assert source.count("__shfl_down_sync(0xffffffffu, wb_warp_total, wb_o)") == 2


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_lifts_final_and_unroll(name: str, tmp_path: Path) -> None:
    kf = _spelled(tmp_path, SPELLINGS[name], _BLOCKS[name])
    result = offline_template(kf)
    knobs = {p.name for p in result.lifted.params}
    assert {"FINAL", "UNROLL"} <= knobs
    assert ("VEC" in knobs) == (name in _VECTOR), result.notes
    assert ("CHUNKS" in knobs) == (name in _VECTOR), result.notes
    if name not in _VECTOR:  # a chunk of unknown alignment: refused with the line
        assert any(n.startswith("VEC: not applied: vector loads of the count:") and
                   "(line " in n for n in result.notes), result.notes


def test_a_sum_read_after_the_loop_keeps_vec_off() -> None:
    source = SPELLINGS["define_float"].replace(
        "  atomicAdd(&tot, acc);", "  if (acc < 0.0f) acc = 0.0f;\n  atomicAdd(&tot, acc);")
    lifted = lift_kernel(source, entry="moments_partials", grid=["ceil_div(n, 4096)"],
                         block=["128"], scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("VEC: not applied: vector loads of")]
    assert found and "`acc = acc + v`" in found[0] and "(line 15)" in found[0], lifted.notes
    assert "FINAL" in {p.name for p in lifted.params}


def _host_check(kf: KernelFolder, configs: list[dict[str, Any]], work: Path) -> None:
    """Each of ``configs`` of ``kf``'s lift totals what reference.py totals, all run in one
    host program."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = kf.load_reference().reference(dict(inputs), kf.shape_values(kf.check_shape), "fp32")
    for config in configs:
        assert template.space(env).rejection(config) is None, config
    runs = [(host_source(_FLOAT_ATOMIC + template.render(c, "fp32").source),
             template.launch_for(c, env)) for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, work), strict=True):
        _assert_same(kf, got, want, f"{kf.name} lifted at {config}")


def _configs(kf: KernelFolder, sampled: list[dict[str, int]]) -> list[dict[str, Any]]:
    """The default, the last all-ends config (every one under WORKBENCH_FULL_MATRIX=1), then
    each of ``sampled`` over the default (knobs the lift has)."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    ends = host_sample(end_configs(template, env))
    return [default, ends[-1], *({**default, **{k: v for k, v in s.items() if k in default}}
                                 for s in sampled)]


@pytest.mark.timeout(120)
def test_the_folder_lifted_totals_right_on_host(tmp_path: Path) -> None:
    kf = load_kernel_folder(MOMENTS)
    # 8 chunks a block: one block of 8 slots, 7 zeroed; 2 chunks: 4 blocks
    sampled = [{"BLOCK_THREADS": 96, "FINAL": 1, "UNROLL": 4, "VEC": 4, "CHUNKS": 8},
               {"BLOCK_THREADS": 224, "FINAL": 0, "UNROLL": 2, "VEC": 2, "CHUNKS": 2}]
    _host_check(kf, _configs(kf, sampled), tmp_path)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_lifted_totals_right_on_host(name: str, tmp_path: Path) -> None:
    kf = _spelled(tmp_path, SPELLINGS[name], _BLOCKS[name])
    # another block size than written (the step follows it), the shuffles, float4 loads
    _host_check(kf, _configs(kf, [{"BLOCK_THREADS": 160, "FINAL": 1, "UNROLL": 8, "VEC": 4,
                                   "CHUNKS": 4}]), tmp_path)


def _dot_main(n: int, grid: int, block: int, a: np.ndarray, b: np.ndarray) -> str:
    """Launch on ``grid`` blocks; print the sum of the written grid's slots (NaN where one
    is left unwritten)."""
    values = ", ".join(float(v).hex() for v in np.concatenate([a, b]))
    return (f"\nstatic const float wb_in[] = {{{values}}};\n"
            "int main() {\n"
            f"  std::vector<float> part({-(-n // 2048)}, NAN);\n"
            f"  wb_launch({{{grid}u, 1u, 1u}}, {{{block}u, 1u, 1u}}, [&] {{ "
            f"k(part.data(), wb_in, wb_in + {n}, {n}); }});\n"
            "  double total = 0.0;\n"
            "  for (float v : part) total += v;\n"
            "  std::printf(\"%a\\n\", total);\n  return 0;\n}\n")


@pytest.mark.timeout(120)
def test_dot_product_partials_lift_final_and_add_up_on_host(tmp_path: Path) -> None:
    lifted = lift_kernel(DOT, entry="k", grid=["ceil_div(n, 2048)"], block=["128"],
                         scalars={"n": "n"}, compared_by_total=frozenset({"part"}))
    knobs = {p.name for p in lifted.params}
    assert {"FINAL", "UNROLL", "BLOCK_THREADS", "CHUNKS"} <= knobs and "VEC" not in knobs, lifted.notes
    # a[base + j] and b[base + j]: two runs at one offset (VEC loads one)
    assert any(n.startswith("VEC: not applied: vector loads of the count: the loop reads 2 "
                            "arrays at `[j]`") and "(line 10)" in n for n in lifted.notes), \
        lifted.notes
    template = lifted_template(lifted)
    n = 5000
    rng = np.random.default_rng(7)
    a = (0.5 + rng.standard_normal(n)).astype(np.float32)
    b = (1.0 + rng.standard_normal(n)).astype(np.float32)
    want = float(np.dot(a.astype(np.float64), b.astype(np.float64)))
    env = {"n": n}
    default = dict(template.default_config())
    # the last all-ends config, and 2 chunks a block with the shuffles at 64 threads (every
    # all-ends config but the first, near the kernel as written, under FULL_MATRIX)
    configs = [*host_sample(end_configs(template, env))[1:],
               {**default, "CHUNKS": 2, "FINAL": 1, "BLOCK_THREADS": 64}]
    programs = []
    for config in configs:
        launch = template.launch_for(config, env)
        programs.append(FOLDER_PREFIX + _FLOAT_ATOMIC + template.render(config, "fp32").source
                        + _dot_main(n, launch.grid[0], launch.block[0], a, b))
    for config, printed in zip(configs, run_merged_on_host(tmp_path, "dot", FOLDER_PREFIX,
                                                           programs), strict=True):
        got = float.fromhex(printed.split()[0])
        assert abs(got - want) <= 1e-5 * abs(want), (config, got, want)


#: Sums of squares with the chunk a kernel argument (the grid divides by it: no fixed chunk
#: to scale, no alignment known), a long long index stepping by ``blockDim.x``, a double
#: counter added an expression of the sum (FINAL; no VEC: the value is not the sum alone).
SQUARES = r"""
extern "C" __global__ void k(float* part, const float* x, int n, int span) {
  __shared__ double acc_sh;
  if (threadIdx.x == 0) acc_sh = 0.0;
  __syncthreads();
  const long long lo = (long long)blockIdx.x * span;
  const long long hi = lo + span < n ? lo + span : n;
  double ss = 0.0;
  for (long long e = lo + threadIdx.x; e < hi; e += blockDim.x) ss += (double)x[e] * x[e];
  atomicAdd(&acc_sh, ss * 1.0);
  __syncthreads();
  if (threadIdx.x == 0) part[blockIdx.x] = (float)acc_sh;
}
"""


@pytest.mark.timeout(120)
def test_a_chunk_given_as_an_argument_lifts_final_only_and_adds_up_on_host(
        tmp_path: Path) -> None:
    lifted = lift_kernel(SQUARES, entry="k", grid=["ceil_div(n, span)"], block=["192"],
                         scalars={"n": "n", "span": "span"},
                         compared_by_total=frozenset({"part"}))
    knobs = {p.name for p in lifted.params}
    assert {"FINAL", "BLOCK_THREADS"} <= knobs and not knobs & {"VEC", "CHUNKS"}, lifted.notes
    template = lifted_template(lifted)
    n, span = 3000, 1000
    x = (1.5 + np.random.default_rng(5).standard_normal(n)).astype(np.float32)
    want = float(np.sum(x.astype(np.float64) ** 2))
    env = {"n": n, "span": span}
    default = dict(template.default_config())
    configs = [default, {**default, "FINAL": 1, "BLOCK_THREADS": 96}]
    values = ", ".join(float(v).hex() for v in x)
    programs = []
    for config in configs:
        launch = template.launch_for(config, env)
        main = (f"\nstatic const float wb_x[] = {{{values}}};\nint main() {{\n"
                f"  std::vector<float> part({launch.grid[0]}, NAN);\n"
                f"  wb_launch({{{launch.grid[0]}u, 1u, 1u}}, {{{launch.block[0]}u, 1u, 1u}}, "
                f"[&] {{ k(part.data(), wb_x, {n}, {span}); }});\n"
                "  double total = 0.0;\n  for (float v : part) total += v;\n"
                "  std::printf(\"%a\\n\", total);\n  return 0;\n}\n")
        programs.append(FOLDER_PREFIX + host_source(template.render(config, "fp32").source)
                        + main)
    for config, printed in zip(configs, run_merged_on_host(tmp_path, "sq", FOLDER_PREFIX,
                                                           programs), strict=True):
        got = float.fromhex(printed.split()[0])
        assert abs(got - want) <= 1e-6 * want, (config, got, want)


@pytest.mark.parametrize(("old", "new", "why"), [
    # the chunk read as a length the range does not clamp
    ("  if (threadIdx.x == 0) part[blockIdx.x] = got;",
     "  if (threadIdx.x == 0) part[blockIdx.x] = got * (m == kSpan ? 1.0f : 1.0f);",
     "uses the chunk 2048 other than as the block's start"),
    # a store at another slot than the block's
    ("part[blockIdx.x] = got;", "part[gridDim.x - 1 - blockIdx.x] = got;",
     "stores at another index than [blockIdx.x]"),
    # partials compared element by element (no folder says otherwise)
    ("", "", "are not compared by their total"),
])
def test_chunks_the_analysis_cannot_show_are_refused_with_the_line(old: str, new: str,
                                                                    why: str) -> None:
    assert old in DOT
    by_total = None if not old else frozenset({"part"})
    lifted = lift_kernel(DOT.replace(old, new), entry="k", grid=["ceil_div(n, 2048)"],
                         block=["128"], scalars={"n": "n"}, compared_by_total=by_total)
    found = [n for n in lifted.notes if n.startswith("CHUNKS: not applied: chunks a block:")]
    assert found and why in found[0] and "(line " in found[0], lifted.notes
    assert "CHUNKS" not in {p.name for p in lifted.params}
    assert lifted.grid == ("ceil_div(n, 2048)",)


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.timeout(300)
def test_the_folder_lifted_compiles_without_spills(tmp_path: Path) -> None:
    kf = load_kernel_folder(MOMENTS)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    for i, config in enumerate([*host_sample(end_configs(template, env)),
                                {**default, "FINAL": 1, "UNROLL": 8, "VEC": 4, "CHUNKS": 8}]):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"cfg{i}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"
