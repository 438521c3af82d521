"""The vector family at a bound of no known size (:mod:`.vector_bound`): a chunk's end
``end = min(begin + CHUNK, n)`` or length ``len = min(K, n - b * K)``, a local the region
never changes. With the scalar tail (:mod:`.vector_tail`) its divisibility by VEC is not
needed, only that it is the same value throughout the region; a loop started at an offset
(``begin + threadIdx.x``) starts its vectors at ``begin + threadIdx.x * VEC``, the offset
aligned (``4096 % VEC == 0``). A counting loop of a shared atomic total keeps the counting
loop's VEC (:mod:`.reduce_atomic_vec`, which shows the elements' order free), which now
reads a first element plus ``threadIdx.x`` in any integer index type.

Kernels: sse_partials (unseen3, bound ``end``, start ``begin + threadIdx.x``: the vector
family, VEC and ITEMS_PER_THREAD with the scalar tail), band_count (unseen5, bound ``len``),
moments_partials (unseen6, bound ``count``) and its respelling moments_helper_sizet
(tests/spellings_r30: ``for (size_t i = begin + threadIdx.x; i < end; ..)``), the last
three the counting loop's VEC (whole vectors, then the elements after the last one a
thread). Each lift runs on the host (g++, the cooperative block of
tests/test_corpus_unseen3.py) at VEC 1, 2 and 4, one and four items a thread (other block
sizes, FINAL and UNROLL with them), at n = 20483, whose last chunk of 3 elements ends
inside a vector, and writes bit for bit what the kernel as written writes (integer-valued
sums and counts are exact in any order; moments' double sums of floats too at this size);
CHUNKS, which moves which slot holds a partial, is checked by the totals against
reference.py at two chunks a block (a last run of 4099) and four.

Refused, with the reason and line: a bound the loop writes, a bound a pointer, a reference
or a call in the loop may change, a bound read from memory the region writes, a bound
reading the loop's own variable, a start offset that differs between the threads of a step;
a counting loop's first element that names the thread or is not aligned. On the host: an unsigned (``size_t``) index near its
bound does not wrap (the vector test reads ``end - i`` only where ``i < end``, nothing is
written past n), a loop from a run-time offset (``off + threadIdx.x``, ``off % VEC == 0``)
writes what the kernel writes at every VEC, items and row split, and the counting loop from
a first element counts what the kernel counts (a block past the end included).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import held_back_unseen5
import held_back_unseen6
import pytest
from held_back_harness import BENCHMARKS, respelled, same_as_written
from helpers_nvcc import needs_nvcc, ptx_of
from helpers_templater import needs_gxx
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_r30"


#: name -> (corpus folder, the respelling's file or None, host built-ins, bound, line)
KERNELS: dict[str, tuple[str, str | None, Any, str, int]] = {
    "sse_partials": ("corpus_compute_unseen3/sse_partials", None, None, "end", 15),
    "band_count": ("corpus_compute_unseen5/band_count", None, held_back_unseen5.host_source,
                   "len", 17),
    "moments_partials": ("corpus_compute_unseen6/moments_partials", None,
                         held_back_unseen6.host_source, "count", 20),
    "moments_helper_sizet": ("corpus_compute_unseen6/moments_partials",
                             "moments_helper_sizet.cu", held_back_unseen6.host_source, "end", 20),
}

#: n whose last chunk (4096 a block) ends inside a vector: 3 elements, and 4099 at 2 chunks
RAGGED_N = 20483


def _folder(name: str, root: Path, n: int | None = None) -> KernelFolder:
    corpus, spelling = KERNELS[name][:2]
    folder = BENCHMARKS / corpus
    if spelling is not None:
        respelled(folder, root, (SPELLINGS / spelling).read_text())
        copy = root / folder.name
    else:
        copy = root / folder.name
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("expert"))
    if n is not None:
        toml = copy / "kernel.toml"
        toml.write_text(re.sub(r"small = \{ n = \d+ \}", f"small = {{ n = {n} }}",
                               toml.read_text(), count=1))
    return load_kernel_folder(copy)


#: The kernels whose loop a shared atomic total adds: VEC is the counting loop's
#: (:mod:`.reduce_atomic_vec`, which shows the elements' order free), its tail the elements
#: after the last whole vector, one a thread.
COUNTED = {"band_count", "moments_partials", "moments_helper_sizet"}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_chunked_loop_lifts_vec_with_a_tail(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    bound, at = KERNELS[name][3:]
    knobs = {p.name for p in lifted.params}
    assert "VEC" in knobs, lifted.notes
    assert not any("not a kernel argument with a known size" in n for n in lifted.notes)
    assert not any(re.search(rf"\b{bound}\b.*% VEC", c) for c in lifted.constraints)
    if name in COUNTED:
        assert any(n.startswith("VEC: applied: the counting loop reads") and
                   n.endswith(f"(line {at})") for n in lifted.notes), lifted.notes
        assert any(n.startswith(f"VEC: not applied: the loop over {'j' if name == 'moments_partials' else 'i'}"
                                " is the counting loop of a shared atomic total")
                   for n in lifted.notes), lifted.notes
        assert "whole vectors, then the tail one by one" in lifted.source
        return
    assert "ITEMS_PER_THREAD" in knobs
    # s adds each thread's elements in another order at VEC > 1 (exact here: the folder's
    # inputs are integer-valued), noted as the vector family notes it for any loop
    assert any(n.startswith("VEC: applied: loop over i vectorized (the floating sum s adds")
               and n.endswith(f"(line {at})") for n in lifted.notes), lifted.notes
    assert f"the vector would cross {bound}: one by one" in lifted.source
    assert "4096 % VEC == 0" in lifted.constraints  # the chunk's start is aligned
    assert "(begin + threadIdx.x) + (threadIdx.x) * (VEC - 1)" in lifted.source


def _configs(kf: KernelFolder, **fixed: int) -> list[dict[str, Any]]:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    out = []
    for vec in (1, 2, 4):
        for items, threads in ((1, 64), (4, 128)):
            mix = {"VEC": vec, "ITEMS_PER_THREAD": items, "BLOCK_THREADS": threads,
                   "UNROLL": 2 * items, "FINAL": items > 1, **fixed}
            config = {**default, **{k: int(v) for k, v in mix.items() if k in default}}
            assert template.space(env).rejection(config) is None, config
            out.append(config)
    return out


def _host(name: str) -> Any:
    extra = KERNELS[name][2]
    return extra if extra is not None else (lambda source: source)


@needs_gxx
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_vec_computes_as_written_where_a_chunk_ends_inside_a_vector(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(name, tmp_path / "folder", RAGGED_N)
    template = offline_template(kf).template
    configs = _configs(kf)
    assert same_as_written(kf, template, configs, _host(name), tmp_path / "run",
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", ["band_count", "moments_partials", "moments_helper_sizet"])
def test_chunks_with_vectors_total_right(name: str, tmp_path: Path) -> None:
    """CHUNKS moves a block's partial to another slot: the totals against reference.py,
    at two chunks a block (a last run of 4099 elements) and four."""
    kf = _folder(name, tmp_path / "folder", RAGGED_N)
    configs = [*_configs(kf, CHUNKS=2)[3:], *_configs(kf, CHUNKS=4)[4:]]
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = kf.load_reference().reference(dict(inputs), kf.shape_values(kf.check_shape), "fp32")
    host = _host(name)
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "run"),
                           strict=True):
        _assert_same(kf, got, want, f"{kf.name} lifted at {config}")


# ---- refusals ------------------------------------------------------------------------

def _lift(body: str, params: str = "float* __restrict__ out, const float* __restrict__ x, "
          "int n") -> Any:
    source = (f'extern "C" __global__ void k({params}) {{\n'
              "  __shared__ float buf[256];\n"
              "  const int begin = blockIdx.x * 1024;\n"
              f"{body}"
              "  buf[threadIdx.x] = s;\n  __syncthreads();\n"
              "  if (threadIdx.x == 0) out[blockIdx.x] = buf[0] + buf[255];\n}\n")
    return lift_kernel(source, entry="k", grid=["ceil_div(n, 1024)"], block=["256"],
                       scalars={"n": "n"})


def _vec_notes(lifted: Any) -> list[str]:
    return [n for n in lifted.notes if n.startswith("VEC:")]


def test_a_bound_written_inside_the_loop_is_refused() -> None:
    lifted = _lift("  int end = min(begin + 1024, n);\n  float s = 0.0f;\n"
                   "  for (int i = begin + threadIdx.x; i < end; i += 256) {\n"
                   "    s += x[i];\n    if (s > 100.0f) end = end - 1;\n  }\n")
    assert "VEC" not in {p.name for p in lifted.params}
    assert any(n == "VEC: not applied: the bound `end` reads end, which `end = end - 1` "
               "writes inside the loop: the bound must be the same value throughout the "
               "region (line 8)" for n in _vec_notes(lifted)), lifted.notes


def test_a_bound_a_pointer_may_change_is_refused() -> None:
    lifted = _lift("  int end = min(begin + 1024, n);\n  int* last = &end;\n  float s = 0.0f;\n"
                   "  for (int i = begin + threadIdx.x; i < end; i += 256) {\n"
                   "    s += x[i];\n    *last -= (s > 9.0f);\n  }\n")
    assert "VEC" not in {p.name for p in lifted.params}
    assert any("the bound `end` reads end, whose address the kernel takes: a pointer may "
               "change it inside the loop (line 7)" in n for n in _vec_notes(lifted)), \
        lifted.notes


def test_a_bound_read_from_memory_the_region_writes_is_refused() -> None:
    lifted = _lift("  float s = 0.0f;\n"
                   "  for (int i = begin + threadIdx.x; i < lens[blockIdx.x]; i += 256) {\n"
                   "    s += x[i];\n    lens[i] = 0;\n  }\n",
                   "float* __restrict__ out, const float* __restrict__ x, "
                   "int* __restrict__ lens, int n")
    assert "VEC" not in {p.name for p in lifted.params}
    assert any("the bound `lens[blockIdx.x]` reads lens[blockIdx.x], which the region writes"
               in n for n in _vec_notes(lifted)), lifted.notes


def test_a_bound_reading_the_loop_variable_is_refused() -> None:
    lifted = _lift("  float s = 0.0f;\n"
                   "  for (int i = begin + threadIdx.x; i < n - i / 2; i += 256) s += x[i];\n")
    assert "VEC" not in {p.name for p in lifted.params}
    assert any("reads the region's variable i" in n for n in _vec_notes(lifted)), lifted.notes


def test_a_start_offset_per_thread_is_refused() -> None:
    lifted = _lift("  float s = 0.0f;\n  const int lane = threadIdx.x % 32;\n"
                   "  for (int i = lane * 4 + threadIdx.x; i < n; i += 256) s += x[i];\n")
    assert "VEC" not in {p.name for p in lifted.params}
    assert any("adds `lane * 4`, which differs between the threads" in n
               for n in _vec_notes(lifted)), lifted.notes


def test_a_steady_bound_lifts_and_an_offset_start_is_aligned() -> None:
    lifted = _lift("  const int end = min(begin + 1024, n);\n  float s = 0.0f;\n"
                   "  for (int i = begin + threadIdx.x; i < end; i += 256) s += x[i];\n")
    assert "VEC" in {p.name for p in lifted.params}, lifted.notes
    assert "1024 % VEC == 0" in lifted.constraints
    assert "(begin + threadIdx.x) + (threadIdx.x) * (VEC - 1)" in lifted.source


# ---- an unsigned index at its bound ------------------------------------------------

UNSIGNED = r"""
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ a,
                             unsigned n) {
  const size_t begin = (size_t)blockIdx.x * 64;
  const size_t end = begin + 64 < (size_t)n ? begin + 64 : (size_t)n;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) y[i] = a[i] * 2.0f + 1.0f;
}
"""

HOST = r"""#include <cstdio>
#include <cstring>
#include <cstddef>
#include <vector>
struct wb_dim3 { unsigned x, y, z; };
static wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __restrict__
#define __forceinline__ inline
#define __launch_bounds__(...)
"""


def _host_runs(source: str, runs: list[tuple[str, list[int]]], work: Path, name: str) -> str:
    """Every thread of each launch (args: the kernel's scalars, then grid x, grid y, block)
    in turn on the host; prints y (n + 8 elements, a pad of -7) after each."""
    import subprocess

    calls = "".join(f"  run({', '.join(map(str, args))});\n" for _tag, args in runs)
    program = HOST + source + f"""
static void run({RUN_ARGS[name]}, unsigned grid, unsigned rows, unsigned block) {{
  std::vector<float> a(n + 8), y(n + 8, -7.0f);
  for (unsigned j = 0; j < n + 8; ++j) a[j] = (float)(j % 13);
  gridDim = {{grid, rows, 1}}; blockDim = {{block, 1, 1}};
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned g = 0; g < grid; ++g) for (unsigned t = 0; t < block; ++t) {{
      blockIdx = {{g, r, 0}}; threadIdx = {{t, 0, 0}};
      k({RUN_CALL[name]});
    }}
  std::printf("n=%u", (unsigned)n);
  for (float v : y) std::printf(" %g", v);
  std::printf("\\n");
}}
int main() {{
{calls}  return 0;
}}
"""
    path = work / f"{name}.cpp"
    path.write_text(program)
    exe = work / name
    subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(path)], check=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


RUN_ARGS = {"unsigned": "unsigned n", "offset": "int off, int n"}
RUN_CALL = {"unsigned": "y.data(), a.data(), n", "offset": "y.data(), a.data(), off, n"}


@needs_gxx
@pytest.mark.timeout(300)
def test_an_unsigned_index_near_its_bound_does_not_wrap(tmp_path: Path) -> None:
    """A ``size_t`` walk over chunks of 64 with an unsigned size: at every VEC and n the
    lift writes exactly what the kernel writes and nothing past n (a wrapped ``end - i``
    would run a whole vector past the bound)."""
    from helpers_templater import lifted_template

    lifted = lift_kernel(UNSIGNED, entry="k", grid=["ceil_div(n, 64)"], block=["32"],
                         scalars={"n": "n"})
    assert "VEC" in {p.name for p in lifted.params}, lifted.notes
    assert "(VEC == 1 || (end) - i >= VEC)" in lifted.source  # n - i only where i < n
    template = lifted_template(lifted)
    default = dict(template.default_config())
    sizes = (1, 3, 63, 65, 66, 67, 130, 1027)
    configs = [{**default, "VEC": v, "ITEMS_PER_THREAD": it} for v in (1, 2, 4) for it in (1, 4)]
    want = _host_runs(UNSIGNED, [("", [n, -(-n // 64), 1, 32]) for n in sizes], tmp_path,
                      "unsigned")
    assert want.count("-7") == 8 * len(sizes)  # the pad stays unwritten
    for config in configs:
        runs = []
        for n in sizes:
            launch = template.launch_for(config, {"n": n})
            runs.append(("", [n, launch.grid[0], 1, launch.block[0]]))
        got = _host_runs(template.render(config, "fp32").source, runs, tmp_path, "unsigned")
        assert got == want, config


OFFSET = r"""
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ a, int off,
                             int n) {
  for (int i = off + threadIdx.x; i < n; i += 256) y[i] = 2.0f * a[i] + 1.0f;
}
"""


@needs_gxx
@pytest.mark.timeout(300)
def test_a_loop_from_an_offset_starts_its_vectors_there(tmp_path: Path) -> None:
    """``for (i = off + threadIdx.x; i < n; i += 256)``: the vectors start at ``off +
    threadIdx.x * VEC`` (not ``(off + threadIdx.x) * VEC``), ``off % VEC == 0``; every VEC,
    items and row split writes what the kernel writes, from off to n."""
    from helpers_templater import lifted_template

    lifted = lift_kernel(OFFSET, entry="k", grid=["1"], block=["256"],
                         scalars={"n": "n", "off": "off"})
    assert "off % VEC == 0" in lifted.constraints, lifted.constraints
    template = lifted_template(lifted)
    default = dict(template.default_config())
    cases = [(off, n) for off in (0, 4, 8, 12, 40) for n in (3, 17, 290, 1029)]
    want = _host_runs(OFFSET, [("", [off, n, 1, 1, 256]) for off, n in cases], tmp_path,
                      "offset")
    for vec in (1, 2, 4):
        for items, split in ((1, 1), (4, 1), (2, 4)):
            config = {**default, "VEC": vec, "ITEMS_PER_THREAD": items, "ROW_SPLIT": split,
                      "BLOCK_THREADS": 64}
            runs = []
            for off, n in cases:
                assert template.space({"n": n, "off": off}).rejection(config) is None, config
                launch = template.launch_for(config, {"n": n, "off": off})
                rows = launch.grid[1] if len(launch.grid) > 1 else 1
                runs.append(("", [off, n, launch.grid[0], rows, launch.block[0]]))
            got = _host_runs(template.render(config, "fp32").source, runs, tmp_path, "offset")
            assert got == want, config


# ---- the counting loop of a shared atomic total, from a first element ------------------

COUNT = r"""
extern "C" __global__ void k(int* counts, const float* x, int n) {
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  const size_t begin = (size_t)blockIdx.x * 2048;
  const size_t end = begin + 2048 < (size_t)n ? begin + 2048 : (size_t)n;
  int mine = 0;
  for (size_t i = START; i < end; i += blockDim.x) mine += x[i] > 0.5f;
  atomicAdd(&total, mine);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}
"""


def _count(start: str, body: str = "mine += x[i] > 0.5f;") -> Any:
    source = COUNT.replace("START", start).replace("mine += x[i] > 0.5f;", body)
    return lift_kernel(source, entry="k", grid=["ceil_div(n, 2048)"], block=["128"],
                       scalars={"n": "n"})


def test_a_counting_loop_from_a_first_element_lifts_vec_over_its_run() -> None:
    lifted = _count("begin + threadIdx.x")
    assert "VEC" in {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith("VEC: applied: the counting loop reads `x[i]`") and
               "(line 9)" in n for n in lifted.notes), lifted.notes
    # the run from x + begin, of end - begin elements (none where end <= begin)
    assert "const size_t wb_len = (end) > ((size_t)(begin)) ? (end) - ((size_t)(begin)) : 0;" \
        in lifted.source
    assert "reinterpret_cast<const float4*>((x + (size_t)(begin)))[wb_q]" in lifted.source


@pytest.mark.parametrize(("start", "body", "why"), [
    ("(threadIdx.x % 4) * 4 + threadIdx.x", None,
     "does not start at threadIdx.x, or a first element plus threadIdx.x"),
    ("begin + 2 + threadIdx.x", None, "offset `2` of `x` is not shown to be a multiple of 4"),
])
def test_a_first_element_that_is_not_one_run_is_refused(start: str, body: str | None,
                                                        why: str) -> None:
    lifted = _count(start, body or "mine += x[i] > 0.5f;")
    assert "VEC" not in {p.name for p in lifted.params}, lifted.notes
    found = [n for n in lifted.notes if n.startswith("VEC: not applied: vector loads of")]
    assert found and why in found[0] and "(line 9)" in found[0], lifted.notes


@needs_gxx
@pytest.mark.timeout(300)
def test_the_counting_loop_from_a_first_element_counts_right_on_host(tmp_path: Path) -> None:
    """VEC 1, 2, 4 at sizes whose last run ends inside a vector, and a block whose first
    element is past the end (end <= begin: no element), against the kernel as written."""
    import subprocess

    from helpers_templater import lifted_template

    written = COUNT.replace("START", "begin + threadIdx.x")
    template = lifted_template(_count("begin + threadIdx.x"))
    default = dict(template.default_config())
    sizes = (1, 5, 2047, 2049, 2051, 4099, 6145)
    outputs = []
    for config in [None, *({**default, "VEC": v, "UNROLL": 4} for v in (1, 2, 4))]:
        source = written if config is None else template.render(config, "fp32").source
        runs = "".join(f"  run({n}, {-(-n // 2048) + 1}u, 128u);\n" for n in sizes)
        # one thread after another, thread 0 last (it stores the total) and the total
        # zeroed before each block: the barriers' order without a cooperative block
        assert "__shared__ int total;" in source and "if (threadIdx.x == 0) total = 0;" in source
        source = source.replace("__shared__ int total;", "").replace(
            "if (threadIdx.x == 0) total = 0;", "")
        program = HOST + r"""
#include <algorithm>
using std::min;
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
static int total;
static int atomicAdd(int* p, int v) { const int old = *p; *p = old + v; return old; }
static void __syncthreads() {}
""" + source + r"""
static void run(int n, unsigned grid, unsigned block) {
  std::vector<float> x(n);
  for (int j = 0; j < n; ++j) x[j] = (float)((j * 37) % 11) / 10.0f;
  std::vector<int> counts(grid, -1);
  gridDim = {grid, 1, 1}; blockDim = {block, 1, 1};
  for (unsigned g = 0; g < grid; ++g) {
    total = 0;
    for (unsigned t = block; t-- > 0;) {
      blockIdx = {g, 0, 0}; threadIdx = {t, 0, 0};
      k(counts.data(), x.data(), n);
    }
  }
  std::printf("n=%d", n);
  for (int c : counts) std::printf(" %d", c);
  std::printf("\n");
}
int main() {
""" + runs + "  return 0;\n}\n"
        path = tmp_path / f"c{len(outputs)}.cpp"
        path.write_text(program)
        exe = tmp_path / f"c{len(outputs)}"
        subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(path)],
                       check=True)
        outputs.append(subprocess.run([str(exe)], check=True, capture_output=True,
                                      text=True).stdout)
    assert "-1" not in outputs[0]  # every block stores, the one past the end its zero
    assert all(got == outputs[0] for got in outputs[1:]), outputs


@needs_nvcc
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_lifts_compile_for_sm_90a(name: str, tmp_path: Path) -> None:
    """nvcc (sm_90a, -O3) compiles each lift at float2 and float4 with their other knobs."""
    kf = _folder(name, tmp_path)
    template = offline_template(kf).template
    for config in _configs(kf)[3:]:
        assert "ld.global" in ptx_of(template, config, "fp32")


@pytest.mark.parametrize(("body", "why"), [
    ("  int end = min(begin + 1024, n);\n  int& last = end;\n  float s = 0.0f;\n"
     "  for (int i = begin + threadIdx.x; i < end; i += 256) {\n"
     "    s += x[i];\n    last -= (s > 9.0f);\n  }\n",
     "the bound `end` reads end, which `int& last = end;` binds to a reference: it may change "
     "through it inside the loop (line 5)"),
    ("  int end = min(begin + 1024, n);\n  float s = 0.0f;\n"
     "  for (int i = begin + threadIdx.x; i < end; i += 256) {\n"
     "    s += x[i];\n    shrink(end, s);\n  }\n",
     "the bound `end` reads end, which the loop passes to `shrink(end, s)` (a function that "
     "may take it by reference) (line 9)"),
])
def test_a_bound_a_reference_or_a_call_may_change_is_refused(body: str, why: str) -> None:
    source = ("__device__ void shrink(int& e, float s);\n" if "shrink" in body else "")
    lifted = lift_kernel(
        source + 'extern "C" __global__ void k(float* __restrict__ out, '
        "const float* __restrict__ x, int n) {\n  __shared__ float buf[256];\n"
        "  const int begin = blockIdx.x * 1024;\n" + body +
        "  buf[threadIdx.x] = s;\n  __syncthreads();\n"
        "  if (threadIdx.x == 0) out[blockIdx.x] = buf[0] + buf[255];\n}\n",
        entry="k", grid=["ceil_div(n, 1024)"], block=["256"], scalars={"n": "n"})
    assert "VEC" not in {p.name for p in lifted.params}
    assert any(why in n for n in _vec_notes(lifted)), lifted.notes
