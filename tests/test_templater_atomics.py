"""A block's integer count gathered by ``atomicAdd`` on a ``__shared__`` counter (issue 28):
FINAL (a warp's shuffle sum, one atomic a warp), UNROLL on the counting loop, and VEC
(float2 / float4 loads) where that loop is ``for (int i = threadIdx.x; i < L; i += S)``.

band_count (benchmarks/corpus_compute_unseen5, spent) lifted BLOCK_THREADS and BRANCHLESS
only. Its folder and three spellings of the same count of our own (an ``unsigned`` counter
fed by a ``while`` walk with a branch-free test; a pointer walk with ``if (!threadIdx.x)``
and an ``int`` tally named otherwise; a ``#define`` chunk read by a ``for`` loop into an
``unsigned int`` tally, which lifts VEC as well) lift FINAL and UNROLL, and run on the host
(every thread a coroutine, shuffles exchanged through the block) at a sampled config with
the knobs on (the folder at its last all-ends config too; ``WORKBENCH_FULL_MATRIX=1``: the
default and every all-ends config), their counts adding up to the folder's reference total
(its verify()). An early return before the atomic, a counter read before the barrier, and
vector loads that would move a float sum, read a misaligned run or use the index otherwise
are refused with the line.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from held_back_unseen5 import host_source
from helpers_templater import FULL_MATRIX, end_configs, host_sample
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    _run,
    host_flags,  # noqa: F401  (session fixture)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

BAND = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen5" / \
    "band_count"

#: The host's atomicAdd for an unsigned counter (HOST_EXTRAS has the int one).
_UNSIGNED_ATOMIC = ("static inline unsigned atomicAdd(unsigned* p, unsigned v) "
                    "{ const unsigned old = *p; *p = v + old; return old; }\n")

SPELLINGS: dict[str, str] = {
    # #define chunk and band, an unsigned counter, a while walk stepping by the literal
    # block, the thread index in a local, a branch-free count
    "unsigned_while": r"""
#define CHUNK 4096
#define LO (-0.5f)
#define HI 1.25f
extern "C" __global__ void band_count(int* counts, const float* x, int n) {
  __shared__ unsigned hits;
  const int t = threadIdx.x;
  if (t == 0) hits = 0u;
  __syncthreads();
  const int first = blockIdx.x * CHUNK;
  const int last = min(first + CHUNK, n);
  unsigned local = 0u;
  int e = first + t;
  while (e < last) {
    const float v = x[e];
    local += (unsigned)((v >= LO) & (v < HI));
    e += 256;
  }
  atomicAdd(&hits, local);
  __syncthreads();
  if (t == 0) counts[blockIdx.x] = (int)hits;
}
""",
    # a pointer walk over the chunk stepping by blockDim.x, `if (!threadIdx.x)`, the tally
    # another name, its own constexpr band
    "pointer_for": r"""
static constexpr float band_lo = -0.5f, band_hi = 1.25f;
extern "C" __global__ void band_count(int* counts, const float* x, int n) {
  __shared__ int tally;
  if (!threadIdx.x) tally = 0;
  __syncthreads();
  const float* begin = x + blockIdx.x * 4096;
  const float* end = x + min(n, (int)(blockIdx.x + 1) * 4096);
  int got = 0;
  for (const float* p = begin + threadIdx.x; p < end; p += blockDim.x) {
    if (*p >= band_lo && *p < band_hi) got = got + 1;
  }
  atomicAdd(&tally, got);
  __syncthreads();
  if (!threadIdx.x) counts[blockIdx.x] = tally;
}
""",
    # a macro chunk, the run's start an int product, a for loop stepping by the literal
    # block, a branch-free unsigned tally added by `local = local + ...`
    "macro_for": r"""
#define CHUNK_ELEMS 4096
extern "C" __global__ void band_count(int* counts, const float* x, int n) {
  __shared__ unsigned int in_band;
  if (threadIdx.x == 0) in_band = 0u;
  __syncthreads();
  const float* run = x + blockIdx.x * CHUNK_ELEMS;
  const int m = min(n - (int)blockIdx.x * CHUNK_ELEMS, CHUNK_ELEMS);
  unsigned int local = 0u;
  for (int j = threadIdx.x; j < m; j += 128) {
    const float v = run[j];
    local = local + (v >= -0.5f ? 1u : 0u) * (v < 1.25f ? 1u : 0u);
  }
  atomicAdd(&in_band, local);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = (int)in_band;
}
""",
}
_BLOCKS = {"unsigned_while": 256, "pointer_for": 64, "macro_for": 128}
#: The spellings whose counting loop is `for (int i = threadIdx.x; i < L; i += S)`: VEC too;
#: unsigned_while's `e = first + t` walk too (a first element plus the thread, session 31).
_VECTOR = {"macro_for", "unsigned_while"}


def _spelled(tmp_path: Path, source: str, block: int) -> KernelFolder:
    """band_count's folder with ``source`` as its kernel, launched with ``block`` threads."""
    folder = tmp_path / "band_count"
    shutil.copytree(BAND, folder, ignore=shutil.ignore_patterns("expert"))
    (folder / "baseline.cu").write_text(source)
    toml = folder / "kernel.toml"
    toml.write_text(toml.read_text().replace('block = ["128"]', f'block = ["{block}"]'))
    return load_kernel_folder(folder)


def _knobs(kf: KernelFolder) -> set[str]:
    return {p.name for p in offline_template(kf).lifted.params}


def test_the_folder_lifts_final_unroll_and_vec() -> None:
    result = offline_template(load_kernel_folder(BAND))
    assert {"BLOCK_THREADS", "FINAL", "UNROLL", "VEC"} <= {p.name for p in result.lifted.params}
    assert any(n.startswith("VEC: applied: the counting loop reads `chunk[i]`")
               for n in result.notes), result.notes
    note = next(n for n in result.notes if n.startswith("FINAL: applied"))
    assert "exact in any order" in note and "(line 21)" in note, note
    assert "__shfl_down_sync(0xffffffffu, wb_warp_total, wb_o)" in result.template.source


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_lifts_final_and_unroll(name: str, tmp_path: Path) -> None:
    knobs = _knobs(_spelled(tmp_path, SPELLINGS[name], _BLOCKS[name]))
    assert {"FINAL", "UNROLL"} <= knobs
    assert ("VEC" in knobs) == (name in _VECTOR), knobs


@pytest.mark.parametrize(("old", "new", "why"), [
    # a float sum beside the count: another element order moves it
    ("  unsigned int local = 0u;\n", "  unsigned int local = 0u;\n  float s = 0.0f;\n",
     None),
    ("const float* run = x + blockIdx.x * CHUNK_ELEMS;", "const float* run = x + blockIdx.x * 4098;",
     "is not shown to be a multiple of 4 floats"),
    ("const float v = run[j];", "const float v = run[j] + (float)j;", "is used other than"),
])
def test_vector_loads_that_would_change_the_count_are_refused(old: str, new: str,
                                                              why: str | None) -> None:
    source = SPELLINGS["macro_for"]
    assert old in source
    source = source.replace(old, new)
    if why is None:  # the float sum inside the loop as well
        source = source.replace("    local = local +", "    s += v;\n    local = local +")
        why = "only integer counts may be summed"
    lifted = lift_kernel(source, entry="band_count", grid=["ceil_div(n, 4096)"], block=["128"],
                         scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("VEC: not applied: vector loads of")]
    assert found and why in found[0] and "(line " in found[0], lifted.notes


@pytest.mark.parametrize(("old", "new", "why"), [
    ("  atomicAdd(&tally, got);", "  if (got == 0) return;\n  atomicAdd(&tally, got);",
     "before the atomic: not every thread"),
    ("  atomicAdd(&tally, got);\n  __syncthreads();",
     "  atomicAdd(&tally, got);\n  counts[blockIdx.x] = tally;\n  __syncthreads();",
     "is read before a __syncthreads()"),
])
def test_shapes_that_differ_are_refused_with_the_line(old: str, new: str, why: str) -> None:
    source = SPELLINGS["pointer_for"]
    assert old in source
    lifted = lift_kernel(source.replace(old, new), entry="band_count", grid=["ceil_div(n, 4096)"],
                         block=["64"], scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("FINAL: not applied")]
    assert found and why in found[0] and "(line " in found[0], lifted.notes
    assert "FINAL" not in {p.name for p in lifted.params}


def _host_check(kf: KernelFolder, configs: list[dict[str, Any]], work: Path,
                flags: tuple[str, ...]) -> None:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = kf.load_reference().reference(dict(inputs), kf.shape_values(kf.check_shape), "fp32")
    for i, config in enumerate(configs):
        assert template.space(env).rejection(config) is None, config
        source = _UNSIGNED_ATOMIC + template.render(config, "fp32").source
        got = _run(kf, host_source(source), template.launch_for(config, env), inputs,
                   work / f"c{i}", flags)
        _assert_same(kf, got, want, f"{kf.name} lifted at {config}")


def _configs(kf: KernelFolder, sampled: dict[str, int], *, ends: int) -> list[dict[str, Any]]:
    """The last ``ends`` all-ends configs, then ``sampled`` over the default; under
    ``WORKBENCH_FULL_MATRIX=1`` the default and every all-ends config too."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    every = end_configs(template, env)
    picked = [default, *every] if FULL_MATRIX else host_sample(every)[len(host_sample(every))
                                                                        - ends:]
    return [*picked, {**default, **sampled}]


@pytest.mark.timeout(120)
def test_the_folder_lifted_counts_right_on_host(tmp_path: Path,
                                                host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(BAND)
    _host_check(kf, _configs(kf, {"BLOCK_THREADS": 96, "FINAL": 1, "UNROLL": 4, "VEC": 2},
                          ends=1), tmp_path,
                host_flags)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_lifted_counts_right_on_host(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelled(tmp_path, SPELLINGS[name], _BLOCKS[name])
    knobs = _knobs(kf)
    sampled = {"FINAL": 1, "UNROLL": 2, **({"VEC": 4} if name in _VECTOR else {}),
               # another block size than written: the step follows it in every copy
               **({"BLOCK_THREADS": 96} if "BLOCK_THREADS" in knobs else {})}
    _host_check(kf, _configs(kf, sampled, ends=0), tmp_path, host_flags)
