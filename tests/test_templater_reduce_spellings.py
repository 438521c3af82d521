"""Grid-stride reductions to partials in the spellings the first reduce tests lacked.

The grid as a literal the loop's step names (``NUM_BLOCKS * BLOCK`` with a commented
``#define``, a ``constexpr``, the product as one number), a ``while`` walk whose variable is
declared before other locals, integer element types (int8 and int16 dot products, a byte
sum with 16-byte loads) and a float max-abs: each lifts GRID_BLOCKS / VEC /
ITEMS_PER_THREAD / FINAL, and its default and a far corner run on the host (every thread a
coroutine) with the partials adding up (max-ing up) to the exact answer. Partials a folder
compares element by element, and steps that are not the grid's threads, are refused with
the line.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    host_sample,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import _SPILLS, _ptxas_log

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel, offline_template

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"
S8 = ROOT / "corpus_compute_unseen4" / "s8_dot_blocks"


class Case:
    """A kernel as written: its source, launch, element type, reduction and slot count."""

    def __init__(self, source: str, grid: int, block: int, elem: str, kind: str,
                 acc: str) -> None:
        self.source, self.grid, self.block = source, grid, block
        self.elem, self.kind, self.acc = elem, kind, acc

    def lift(self, compared: frozenset[str] | None = None) -> LiftedSource:
        return lift_kernel(self.source, entry="k", grid=[str(self.grid)],
                           block=[str(self.block)], scalars={"n": "n"},
                           compared_by_total=compared)


CASES: dict[str, Case] = {
    # int16 dot: the stride a local holding the product as one number, a while walk whose
    # variable is declared before the stride, k >>= 1, an unsigned accumulator
    "s16_dot_while_literal_stride": Case(r"""
extern "C" __global__ void k(unsigned* part, const short* __restrict__ a,
                             const short* __restrict__ b, int n) {
  __shared__ unsigned acc_s[128];
  int pos = 128 * blockIdx.x + threadIdx.x;
  const int jump = 16896;  // 132 blocks of 128 threads
  unsigned total = 0u;
  while (pos < n) {
    total += (unsigned)((int)a[pos] * (int)b[pos]);
    pos += jump;
  }
  acc_s[threadIdx.x] = total;
  __syncthreads();
  for (int half = 64; half >= 1; half >>= 1) {
    if (threadIdx.x < half) acc_s[threadIdx.x] = acc_s[threadIdx.x] + acc_s[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = acc_s[0];
}
""", 132, 128, "short", "dot", "unsigned"),
    # float max-abs: blockDim.x read for the block, the grid a constexpr in a namespace
    "f32_maxabs_while_constexpr": Case(r"""
namespace { constexpr int kBlocks = 96; }
extern "C" __global__ void k(float* peaks, const float* x, int n) {
  __shared__ float best[256];
  const unsigned t = threadIdx.x;
  float m = 0.0f;
  int e = blockIdx.x * blockDim.x + t;
  while (e < n) {
    m = fmaxf(m, fabsf(x[e]));
    e += kBlocks * blockDim.x;
  }
  best[t] = m;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (t < w) best[t] = fmaxf(best[t], best[t + w]);
    __syncthreads();
  }
  if (t == 0) peaks[blockIdx.x] = best[0];
}
""", 96, 256, "float", "maxabs", "float"),
    # byte sum: #ifndef defaults, the step the two macros' product in the other order
    "u8_sum_ifndef": Case(r"""
#ifndef THREADS_PER_BLOCK
#define THREADS_PER_BLOCK 64
#endif
#ifndef BLOCKS
#define BLOCKS 200  /* one per slot */
#endif
extern "C" __global__ void k(int* counts, const unsigned char* __restrict__ bytes, int n) {
  __shared__ int tally[THREADS_PER_BLOCK];
  int c = 0;
  for (int q = threadIdx.x + blockIdx.x * THREADS_PER_BLOCK; q < n;
       q += THREADS_PER_BLOCK * BLOCKS)
    c += bytes[q];
  tally[threadIdx.x] = c;
  __syncthreads();
  for (int s = THREADS_PER_BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) tally[threadIdx.x] += tally[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = tally[0];
}
""", 200, 64, "unsigned char", "sum", "int"),
    # a walk over block-sized chunks (block index stepping by gridDim.x, the chunk count
    # (n + 255) / 256), the guard inside, literals; a float sum of squares (whole numbers:
    # exact in any order at this size)
    "f32_sumsq_chunks": Case(r"""
extern "C" __global__ void k(float* sq, const float* __restrict__ x, int n) {
  __shared__ float red[256];
  float acc = 0.0f;
  for (int b = blockIdx.x; b < (n + 255) / 256; b += gridDim.x) {
    const int i = b * 256 + threadIdx.x;
    if (i < n) acc += x[i] * x[i];
  }
  red[threadIdx.x] = acc;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sq[blockIdx.x] = red[0];
}
""", 200, 256, "float", "sumsq", "float"),
    # chunks of an unsigned index stepping by the grid's macro, `chunk * BS < n`, a braced
    # guard, an int max
    "i32_max_chunks_macros": Case(r"""
#define BS 128
#define NB 150
extern "C" __global__ void k(int* hi, const int* v, int n) {
  __shared__ int top[BS];
  int m = -2147483647 - 1;
  for (unsigned chunk = blockIdx.x; chunk * BS < n; chunk += NB) {
    unsigned e = threadIdx.x + BS * chunk;
    if (e < n) { m = max(m, v[e]); }
  }
  top[threadIdx.x] = m;
  __syncthreads();
  for (int w = BS / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) top[threadIdx.x] = max(top[threadIdx.x], top[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) hi[blockIdx.x] = top[0];
}
""", 150, 128, "int", "max", "int"),
    # a pointer walk: the pointer starts at the thread's first element, ends at x + n
    "f32_sumsq_pointer_for": Case(r"""
extern "C" __global__ void k(float* part, const float* __restrict__ x, int n) {
  __shared__ float red[256];
  float s = 0.0f;
  for (const float* p = x + blockIdx.x * blockDim.x + threadIdx.x; p < x + n;
       p += blockDim.x * gridDim.x)
    s += *p * *p;
  red[threadIdx.x] = s;
  __syncthreads();
  for (int h = 128; h > 0; h >>= 1) {
    if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = red[0];
}
""", 160, 256, "float", "sumsq", "float"),
    # a while walk of a byte pointer through locals (its first element, its end, the
    # stride), read as q[0], the literal grid in the stride
    "u8_sum_pointer_while": Case(r"""
extern "C" __global__ void k(int* sums, const unsigned char* __restrict__ bytes, int n) {
  __shared__ int acc_s[64];
  const int gid = threadIdx.x + blockIdx.x * 64;
  const unsigned char* q = bytes + gid;
  const unsigned char* const stop = bytes + n;
  const int stride = 64 * 120;
  int total = 0;
  while (q < stop) {
    total += q[0];
    q += stride;
  }
  acc_s[threadIdx.x] = total;
  __syncthreads();
  for (int h = 32; h > 0; h /= 2) {
    if (threadIdx.x < h) acc_s[threadIdx.x] += acc_s[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = acc_s[0];
}
""", 120, 64, "unsigned char", "sum", "int"),
    # an unsigned byte dot, no casts (C's promotion), an unsigned accumulator: __dp4a's
    # unsigned form; the grid a commented macro in the step
    "u8_dot_unsigned_packed": Case(r"""
#define GRID 90  // blocks
extern "C" __global__ void k(unsigned* dots, const unsigned char* __restrict__ a,
                             const unsigned char* __restrict__ b, int n) {
  __shared__ unsigned part[128];
  unsigned acc = 0u;
  for (int t = threadIdx.x + 128 * blockIdx.x; t < n; t += GRID * 128) acc += a[t] * b[t];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int h = 64; h > 0; h >>= 1) {
    if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) dots[blockIdx.x] = part[0];
}
""", 90, 128, "unsigned char", "dot", "unsigned"),
}


def s8_template() -> tuple[KernelTemplate, Any]:
    result = offline_template(load_kernel_folder(S8))
    return result.template, result.lifted


def knobs(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


def test_s8_dot_blocks_lifts_the_reduction_knobs() -> None:
    _template, lifted = s8_template()
    spec = knobs(lifted)
    assert {"GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD", "FINAL", "BLOCK_THREADS"} <= set(spec), \
        lifted.notes
    # the expert's block counts and bytes per load are reachable
    assert {66, 132, 198, 264} <= set(spec["GRID_BLOCKS"]["values"])
    assert {1, 4, 16} <= set(spec["VEC"]["values"])
    assert "GRID_BLOCKS <= 264" in lifted.constraints
    note = next(n for n in lifted.notes if n.startswith("REDUCTION: applied"))
    assert "sum of int values is exact in any order" in note
    # whole vectors of 4 or 16 bytes take __dp4a on packed words (exact)
    assert any("x x y: bytes whose products" in n for n in lifted.notes), lifted.notes
    assert "#if VEC % 4 == 0" in lifted.source and "__dp4a(reinterpret_cast<const int*>" \
        in lifted.source


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_lifts_with_its_slots(name: str) -> None:
    case = CASES[name]
    lifted = case.lift(frozenset({"part", "peaks", "counts", "sq", "hi", "sums", "dots"}))
    spec = knobs(lifted)
    assert {"GRID_BLOCKS", "ITEMS_PER_THREAD", "FINAL", "VEC"} <= set(spec), lifted.notes
    assert f"GRID_BLOCKS <= {case.grid}" in lifted.constraints
    assert list(lifted.grid) == ["GRID_BLOCKS"]
    assert (16 in spec["VEC"]["values"]) == (case.elem == "unsigned char")
    packed = any("__dp4a" in n for n in lifted.notes)
    assert packed == (case.kind == "dot" and case.elem == "unsigned char"), lifted.notes
    note = next(n for n in lifted.notes if n.startswith("REDUCTION"))
    # integer sums and maxima: every order gives the same bits; a float sum's order moves it
    assert ("exact in any order" in note) == (case.kind != "sumsq"), note


def test_partials_compared_element_by_element_are_refused_with_the_line() -> None:
    lifted = CASES["u8_sum_ifndef"].lift(frozenset())
    found = [n for n in lifted.notes if n.startswith("REDUCTION: not applied")]
    assert found and "compared element by element" in found[0] and "(line 20)" in found[0]
    assert "GRID_BLOCKS" not in knobs(lifted)


@pytest.mark.parametrize(("old", "new", "why"), [
    # 264 blocks written in the step, 132 launched: the walk skips half the data
    ("i += NUM_BLOCKS * BLOCK", "i += 132 * BLOCK", "the loop steps by"),
    ("i += NUM_BLOCKS * BLOCK", "i += BLOCK * 528", "the loop steps by"),
])
def test_a_step_that_is_not_the_grid_is_refused(old: str, new: str, why: str) -> None:
    source = (S8 / "baseline.cu").read_text()
    assert old in source
    lifted = lift_kernel(source.replace(old, new), entry="s8_dot_blocks", grid=["264"],
                         block=["256"], scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("REDUCTION: not applied")]
    assert found and why in found[0] and "(line 14)" in found[0], lifted.notes


@pytest.mark.parametrize(("old", "new", "why"), [
    # floor: the last, partial chunk is never walked (the kernel as written drops it)
    ("b < (n + 255) / 256", "b < n / 256", "is not shown to reach n"),
    ("b += gridDim.x", "b += 2 * gridDim.x", "does not step by gridDim.x"),
    ("if (i < n) acc += x[i] * x[i];", "if (i < n) acc += x[i] * (float)b;",
     "reads the chunk index `b`"),
    ("const int i = b * 256 + threadIdx.x;", "const int i = b * 128 + threadIdx.x;",
     "is not b * B + threadIdx.x"),
])
def test_chunk_walks_that_differ_are_refused_with_the_line(old: str, new: str,
                                                           why: str) -> None:
    case = CASES["f32_sumsq_chunks"]
    assert old in case.source
    lifted = lift_kernel(case.source.replace(old, new), entry="k", grid=["200"],
                         block=["256"], scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("REDUCTION: not applied")]
    assert found and why in found[0] and "(line " in found[0], lifted.notes
    assert "GRID_BLOCKS" not in knobs(lifted)


@pytest.mark.parametrize(("old", "new", "why"), [
    ("s += *p * *p;", "s += *p * p[1];", "not only read as `*p`"),
    ("p < x + n;", "p < x + n - 1;", "not `x + n`"),
    ("for (const float* p = x + blockIdx.x * blockDim.x + threadIdx.x;",
     "for (const float* p = x + blockIdx.x * blockDim.x;", "the walking pointer starts at"),
])
def test_pointer_walks_that_differ_are_refused_with_the_line(old: str, new: str,
                                                             why: str) -> None:
    case = CASES["f32_sumsq_pointer_for"]
    assert old in case.source
    lifted = lift_kernel(case.source.replace(old, new), entry="k", grid=["160"],
                         block=["256"], scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("REDUCTION: not applied")]
    assert found and why in found[0] and "(line " in found[0], lifted.notes


def test_a_while_variable_read_before_the_loop_is_refused() -> None:
    source = CASES["s16_dot_while_literal_stride"].source.replace(
        "const int jump = 16896;", "const int jump = 16896;\n  const int first = pos;")
    lifted = lift_kernel(source, entry="k", grid=["132"], block=["128"], scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("REDUCTION: not applied")]
    assert found and "is read by a declaration between" in found[0], lifted.notes


# -- host runs ---------------------------------------------------------------------------

_HARNESS = COOPERATIVE_BLOCK + r"""
#include <cstdint>
template <typename T> static T __shfl_down_sync(unsigned, T v, int o) {
  static T slot[1024];
  const unsigned t = threadIdx.x;
  slot[t] = v;
  wb_yield();
  const T r = (t % 32) + o < 32 ? slot[t + o] : v;
  wb_yield();
  return r;
}
static float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
// the four byte products of two packed words added to c (wrapping, as the hardware's)
static int __dp4a(int a, int b, int c) {
  unsigned r = (unsigned)c;
  for (int k = 0; k < 4; ++k)
    r += (unsigned)((int)(signed char)(a >> (8 * k)) * (int)(signed char)(b >> (8 * k)));
  return (int)r;
}
static unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int k = 0; k < 4; ++k) c += ((a >> (8 * k)) & 255u) * ((b >> (8 * k)) & 255u);
  return c;
}
"""

_MAIN = r"""
int main() {
  const int n = %(n)d;
  std::vector<%(elem)s> a(n + 16), b(n + 16);
  for (int i = 0; i < n; ++i) { a[i] = (%(elem)s)((i * 37) %% 17 - %(shift)d);
                                b[i] = (%(elem)s)((i * 11) %% 13 - %(shift)d); }
  std::vector<%(acc)s> out(%(slots)d, (%(acc)s)%(poison)s);
  wb_launch({%(gx)d, 1, 1}, {%(bx)d, 1, 1}, [&] { %(entry)s(out.data(), %(args)s, n); });
  long long got = %(init)s, want = %(init)s;
  for (int i = 0; i < n; ++i) want = %(want)s;
  for (int s = 0; s < %(slots)d; ++s) got = %(fold)s;
  std::printf("%%lld %%lld\n", got, want);
  return 0;
}
"""


def _corner(template: KernelTemplate, env: dict[str, int]) -> dict[str, Any]:
    """Every knob at its most aggressive valid value at once, the fewest blocks."""
    space = [dict(c) for c in template.space(env)]
    return max(space, key=lambda c: (c.get("VEC", 1), c.get("ITEMS_PER_THREAD", 1),
                                     c.get("FINAL", 0), -int(c.get("GRID_BLOCKS", 0)),
                                     -int(c.get("BLOCK_THREADS", 0))))


#: the exact answer per reduction, folded over the inputs (C++ over want, a, b, i)
_WANT = {"dot": "want + (long long)a[i] * (long long)b[i]", "sum": "want + (long long)a[i]",
         "sumsq": "want + (long long)a[i] * (long long)a[i]",
         "maxabs": "std::max(want, (long long)std::fabs((double)a[i]))",
         "max": "std::max(want, (long long)a[i])"}


def _run(template: KernelTemplate, config: dict[str, Any], work: Path, *, n: int, elem: str,
         acc: str, kind: str, slots: int) -> tuple[int, int]:
    env = {"n": n, "elem_bytes": 4}
    launch = template.launch_for(config, env)
    source = template.render(config, "fp32").source
    want, fold = _WANT[kind], "got + (long long)out[s]"
    if kind.startswith("max"):
        fold = "std::max(got, (long long)out[s])"
    if acc == "unsigned":  # the kernel's wrapping unsigned sum of int products
        want = "(long long)(unsigned)((unsigned)want + (unsigned)((int)a[i] * (int)b[i]))"
        fold = "(long long)(unsigned)((unsigned)got + out[s])"
    main = _MAIN % {"n": n, "elem": elem, "acc": acc, "slots": slots, "poison": "12345",
                    "gx": launch.grid[0], "bx": launch.block[0], "entry": template.entry,
                    "args": "a.data(), b.data()" if kind == "dot" else "a.data()",
                    "want": want, "fold": fold, "init": "-(1LL << 62)" if kind == "max" else "0",
                    "shift": 0 if elem.startswith("unsigned") else 8}
    printed = run_on_host(work, "sim", _HARNESS + source + main, run_timeout_s=120)
    got, expected = map(int, printed.split())
    return got, expected


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
def test_s8_dot_blocks_partials_add_up_on_host(tmp_path: Path) -> None:
    template, _lifted = s8_template()
    env = {"n": 9001, "elem_bytes": 4}
    for config in host_sample([dict(template.default_config()), _corner(template, env)]):
        got, want = _run(template, config, tmp_path, n=9001, elem="signed char", acc="int",
                         kind="dot", slots=264)
        assert got == want, config


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_reduces_to_the_exact_answer_on_host(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    template = lifted_template(case.lift(), "k")
    env = {"n": 7003, "elem_bytes": 4}
    # the far corner on every run (s8_dot_blocks runs its default too); with
    # WORKBENCH_FULL_MATRIX=1 each spelling's default as well
    configs = [dict(template.default_config())] if FULL_MATRIX else []
    for config in [*configs, _corner(template, env)]:
        got, want = _run(template, config, tmp_path, n=7003, elem=case.elem, acc=case.acc,
                         kind=case.kind, slots=case.grid)
        assert got == want, config


@needs_nvcc
@pytest.mark.timeout(300)
def test_s8_dot_blocks_compiles_without_spills_at_its_ends(tmp_path: Path) -> None:
    template, _lifted = s8_template()
    env = {"n": 268435456, "elem_bytes": 4}
    for k, config in enumerate([dict(template.default_config()), _corner(template, env)]):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"s8_{k}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"


def test_size_t_walk_and_a_truthy_tree_condition_lift() -> None:
    """``size_t`` index with casts in the start and step, the tree from ``blockDim.x >> 1``
    while ``h`` (non-zero): the family's shape, lifted with VEC."""
    source = r"""
extern "C" __global__ void k(float* part, const float* __restrict__ x, long long n) {
  __shared__ float red[128];
  float s = 0.0f;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    s += x[i];
  red[threadIdx.x] = s;
  __syncthreads();
  for (unsigned h = blockDim.x >> 1; h; h >>= 1) {
    if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = red[0];
}
"""
    lifted = lift_kernel(source, entry="k", grid=["256"], block=["128"], scalars={"n": "n"},
                         compared_by_total=frozenset({"part"}))
    assert {"GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD", "FINAL"} <= set(knobs(lifted)), \
        lifted.notes
    assert "const size_t wb_stride" in lifted.source
