"""Six corpus kernels of six families, each written twice more by other hands (issue 28: a
rule that matches only the corpus's spelling of a kernel is not stage 1): gemm_atb_tiled
(a shared-memory tiled GEMM), conv5_channels (a 2-D convolution with a ``__constant__``
filter), moments_partials (a chunk a block to per-block partial sums), welford_rows_warp (a
warp a row), diffuse7_var (a 3-D stencil) and mc_hits_xorshift (a compute-bound stream with
a branch). The respellings live in tests/spellings_r30/ (the kernel as written; the corpus
folder's kernel.toml and reference.py come with :func:`held_back_harness.respelled`): a
constexpr tile and a guarded-load helper, ``#ifndef`` tiles with index macros and a
``while``; a lambda for the zero-padded read in a wrapped body, C89 with an image struct
passed by value; one shared array of two sums with a ``while``, a namespaced chunk and a
helper taking the sums by reference; Chan's merge as a helper by reference, file-scope
constexpr with ``warpSize``; an index macro under a wrapped body, a grid struct with member
functions and a pointer to the cell; a capture-less lambda step in a ``for``, a helper
stepping the state by reference in a count-down ``while``.

What the respellings taught the templater:

- conv5_lambda_wrapped wraps the work in ``if (x < w && y < h) { .. }``: USE_SMEM offered 0
  and 1 only ("the bounds check wraps the work: the tile's barriers need an early `return`
  to turn into a flag"). Under USE_SMEM == 2 (one tile refilled per channel) every thread
  must reach the refill's barriers; conv_refill now lets every thread into the wrapping
  ``if`` at that value (``if (USE_SMEM == 2 || (x < w && y < h))``) with the flag its test
  (``wb_live``), as it turns an early return into that flag: USE_SMEM 0, 1, 2 as the corpus
  kernel's.
- mc_lambda_for: ``auto next = [](unsigned s) { s ^= ..; return s; };`` was refused ("it
  captures `nothing`, not by reference only"): the items wrapped the stream (no interleave)
  and UNROLL was lost. A lambda that captures nothing copies nothing where it is defined
  (its body can read only its parameters and the file's names), so it is written into its
  calls as a by-reference one is; now ITEMS_PER_THREAD interleaves the samples and UNROLL
  lifts. It adds its count by ``count += c ? 1 : 0`` (no branch as written), so
  BRANCHLESS and ANY_BRANCH have nothing to choose. (Its ``1.0f / 16777216.0f`` sits in a
  macro; the corpus kernel's, in its text, is no FAST_DIV knob either since session 32: a
  division of constants is folded at build time.)
- mc_ref_countdown: ``__device__ float next_unit(unsigned& state) { ..; return ..; }``
  called as ``const float px = next_unit(state);`` was neither pure nor a ``void``
  updater: the items wrapped and ANY_BRANCH, FAST_DIV, UNROLL were lost. A ``__device__``
  function with a non-const reference parameter whose body ends in its one ``return
  value;`` is now written into its calls as a value lambda is (its statements before the
  call's statement, the call its value cast to the declared result type): ITEMS
  interleave, ANY_BRANCH and BRANCHLESS lift (FAST_DIV did, on ``1.0f / 16777216.0f``,
  until session 32 found a division of constants no knob). Its count-down ``int left =
  kSamples; while (left-- > 0) {..}`` was no counted loop (the step in the test), so UNROLL
  had none to unroll; loop_forms now reads it as ``for (int left = kSamples; left > 0;
  --left)`` where the body never names the counter, no ``continue`` is the loop's and
  nothing after reads it: UNROLL too (every knob of the corpus kernel).

- moments_macro_while: ``__shared__ double acc[2];`` (the sum and the sum of squares,
  named ``acc[0]``, ``acc[1]``) was no shared counter (FINAL reads ``atomicAdd(&C, E)`` on a
  shared scalar), and its run was read ``x[begin + j]`` from ``int j = tid`` (a copy of
  ``threadIdx.x``): it lifted BLOCK_THREADS alone. slot_arrays.py reads an array of at most
  8 slots named only at literal subscripts as one scalar a slot; reduce_atomic_vec reads a
  counting loop started at a local copy of ``threadIdx.x`` and a run read at one offset
  ``P[E + i]`` (E's terms aligned as a pointer's offset is): now FINAL, UNROLL, VEC. Its
  ``if (tid != 0) return;`` before the block's stores stopped CHUNKS ("a thread may leave
  before the slots are filled"); the slots past the grid are written by ``threadIdx.x ==
  0`` at the body's end, which a ``return;`` whose test is false for thread 0 never stops,
  so reduce_chunks now allows that one: CHUNKS too (every knob of the corpus kernel).
- moments_helper_sizet clamps its range as ``begin + cfg::chunk < (size_t)n ? begin +
  cfg::chunk : (size_t)n`` (``min`` written out, the chunk a namespaced constexpr): CHUNKS
  read the chunk only as a factor of the block's start or in ``min(..)`` and refused ("uses
  the chunk 4096 other than as the block's start or the clamp of its range"). It now reads a
  conditional that picks the smaller of its test's two sides (``a < b ? a : b``, ``a > b ?
  b : a``) as the clamp, and ``ns::K`` as K: CHUNKS lifts. Its walk ``for (size_t i = begin
  + threadIdx.x; i < end; ..)`` was no counting loop VEC read ("the counting loop's index
  does not start at threadIdx.x (an int)"): reduce_atomic_vec now reads a first element
  plus ``threadIdx.x`` (the run at ``P + begin``, of ``end - begin`` elements, ``begin``
  aligned as an offset is) in any integer index type, so VEC lifts too (session 31).

Lifted as the corpus kernel already (no change needed): gemm_atb_constexpr_helper,
gemm_atb_macro_while, conv5_c89_struct, welford_constexpr_ptr, diffuse7_macro_wrapped;
welford_macro_helper too, its warps' knob under the author's macro name (WARPS).

What is left (asserted in CASES): diffuse7_struct_ptr lifts ITEMS_X/Y/Z, not Z_ITEMS (its
neighbours read through ``const float* uc = u + c`` as ``*uc``, ``uc[-sz]``, and its bound
``g.nz`` a member of a struct built by ``Grid3 g{nx, ny, nz}``: the z-march reads kernel
pointers at the cell's index, and the grid's z from a guard on a kernel argument).

Host (g++): every respelling, lifted, bit for bit against itself as written at the default
and a mix (the all-ends configs too under WORKBENCH_FULL_MATRIX=1), but for knobs that move
which lane or slot holds a partial (REORDERING: their totals checked on their own).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import held_back_unseen4
import held_back_unseen6
import held_back_unseen14
import held_back_unseen15
import held_back_unseen18
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_reduce_atomic_sums import _configs as atomic_configs
from test_templater_reduce_atomic_sums import _host_check as host_check_totals

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.inline_bodies import expand_bodies
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import counted_whiles
from workbench.templater.slot_arrays import slot_arrays

SPELLINGS = Path(__file__).resolve().parent / "spellings_r30"

#: spelling -> (its set, the corpus kernel, knobs its lift has, knobs of the corpus
#: kernel's lift it lacks (the semantics differ, or what is left: GAPS), a mix)
CASES: dict[str, tuple[ModuleType, str, frozenset[str], frozenset[str], dict[str, int]]] = {
    "gemm_atb_constexpr_helper": (
        held_back_unseen15, "gemm_atb_tiled",
        frozenset({"BM", "BN", "BK", "TM", "TN", "VEC"}), frozenset(),
        {"BM": 32, "BN": 64, "BK": 8, "TM": 4, "TN": 4, "VEC": 4}),
    "gemm_atb_macro_while": (
        held_back_unseen15, "gemm_atb_tiled",
        frozenset({"BM", "BN", "BK", "TM", "TN", "VEC"}), frozenset(),
        {"BM": 64, "BN": 32, "BK": 16, "TM": 8, "TN": 4, "VEC": 4}),
    "conv5_lambda_wrapped": (
        held_back_unseen4, "conv5_channels",
        frozenset({"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM"}), frozenset(),
        {"BLOCK_X": 32, "BLOCK_Y": 8, "OUT_X": 2, "OUT_Y": 2, "USE_SMEM": 2}),
    "conv5_c89_struct": (
        held_back_unseen4, "conv5_channels",
        frozenset({"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM"}), frozenset(),
        {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_Y": 4, "USE_SMEM": 2}),
    "moments_macro_while": (
        held_back_unseen6, "moments_partials",
        frozenset({"BLOCK_THREADS", "FINAL", "UNROLL", "VEC", "CHUNKS"}), frozenset(),
        {"BLOCK_THREADS": 128, "FINAL": 1, "UNROLL": 2, "VEC": 4}),
    "moments_helper_sizet": (
        held_back_unseen6, "moments_partials",
        frozenset({"BLOCK_THREADS", "FINAL", "UNROLL", "VEC", "CHUNKS"}), frozenset(),
        {"BLOCK_THREADS": 64, "FINAL": 1, "UNROLL": 4, "VEC": 4}),
    # the author's macro WARPS is the warps' knob under its own name
    "welford_macro_helper": (
        held_back_unseen18, "welford_rows_warp",
        frozenset({"LANES", "VEC", "ITEMS_PER_THREAD"}), frozenset({"WARPS_PER_BLOCK"}),
        {"WARPS": 2, "ITEMS_PER_THREAD": 2}),
    "welford_constexpr_ptr": (
        held_back_unseen18, "welford_rows_warp",
        frozenset({"WARPS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD"}), frozenset(),
        {"WARPS_PER_BLOCK": 4, "ITEMS_PER_THREAD": 4}),
    "diffuse7_macro_wrapped": (
        held_back_unseen4, "diffuse7_var",
        frozenset({"BLOCK_X", "BLOCK_Y", "BLOCK_Z", "Z_ITEMS"}), frozenset(),
        {"BLOCK_X": 16, "BLOCK_Y": 2, "BLOCK_Z": 2, "Z_ITEMS": 4}),
    "diffuse7_struct_ptr": (
        held_back_unseen4, "diffuse7_var", frozenset({"BLOCK_X", "BLOCK_Y", "BLOCK_Z"}),
        frozenset({"Z_ITEMS"}),
        {"BLOCK_X": 8, "BLOCK_Y": 4, "BLOCK_Z": 2, "ITEMS_X": 2, "ITEMS_Y": 2, "ITEMS_Z": 2}),
    "mc_lambda_for": (
        held_back_unseen14, "mc_hits_xorshift",
        frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL"}),
        frozenset({"ANY_BRANCH", "BRANCHLESS"}),
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 2}),
    "mc_ref_countdown": (
        held_back_unseen14, "mc_hits_xorshift",
        frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "ANY_BRANCH", "BRANCHLESS",
                   "UNROLL"}),
        frozenset(),
        {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "ANY_BRANCH": 1, "BRANCHLESS": 1,
         "UNROLL": 4}),
}

#: Knobs that move which lane merges which element (Welford's float statistics in another
#: order: the GPU's gate checks the folder's tolerance; the corpus kernel's own lift is not bit
#: for bit there either) or which slot holds which partial (CHUNKS: the outputs are compared
#: by their total, checked below): the host checks bit for bit with them as written.
REORDERING = {"welford_rows_warp": ("LANES", "VEC"), "moments_partials": ("CHUNKS",)}

#: What a spelling's notes say where a missing knob stops (a prefix of a note).
GAPS: dict[str, str] = {}

#: The item loop interleaved (the items' registers side by side), not wrapped.
INTERLEAVED = {"mc_lambda_for", "mc_ref_countdown"}

#: FAST_DIV's ``__fdividef`` on the host: the division, as other sets write it (the GPU's gate
#: checks its tolerance).
HOST_EXTRAS = "#define __fdividef(a, b) ((a) / (b))\nstatic const int warpSize = 32;\n"



def _folder(spelling: str, root: Path) -> KernelFolder:
    held, corpus = CASES[spelling][:2]
    return respelled(held.SET.root / corpus, root, (SPELLINGS / f"{spelling}.cu").read_text())


@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_lifts_the_corpus_kernels_knobs(spelling: str, tmp_path: Path) -> None:
    held, corpus, knobs, missing, _mix = CASES[spelling]
    lifted = offline_template(_folder(spelling, tmp_path)).lifted
    names = {p.name for p in lifted.params}
    own = {p.name for p in offline_template(held.SET.folder(corpus)).lifted.params}
    assert knobs <= names and knobs <= own, (names, lifted.notes)
    assert not missing & names and missing <= own, (names, lifted.notes)
    if spelling in GAPS:
        assert any(n.startswith(GAPS[spelling]) for n in lifted.notes), lifted.notes
    if spelling in INTERLEAVED:
        assert any(n.startswith("ITEMS_PER_THREAD: applied:") and "interleave the items" in n
                   for n in lifted.notes), lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    held, mix = CASES[spelling][0], CASES[spelling][4]
    kf = _folder(spelling, tmp_path / "folder")
    template = offline_template(kf).template
    configs = default_and_mix(template, kf, mix)
    default = template.default_config()
    configs = [c for c in configs
               if all(c.get(k) == default.get(k) for k in REORDERING.get(CASES[spelling][1], ()))]

    def host(source: str) -> str:
        return held.SET.host_source(HOST_EXTRAS + source)

    assert same_as_written(kf, template, configs, host, tmp_path / "run", host_flags) == \
        len(configs)


def _bodies(source: str) -> InlinedSource:
    return expand_bodies(InlinedSource(source, "k.cu"), "k")


#: A capture-less lambda with statements, and a value helper stepping a reference.
STEPS = """__device__ __forceinline__ float unit(unsigned& s) {
  s ^= s << 13;
  return (float)(s >> 8);
}

extern "C" __global__ void k(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  auto next = [](unsigned s) {
    s ^= s >> 17;
    return s;
  };
  unsigned s = i + 1u;
  float acc = 0.0f;
  for (int j = 0; j < 8; ++j) {
    s = next(s);
    const float u = unit(s);
    acc += u;
  }
  out[i] = acc;
}
"""


def test_a_lambda_capturing_nothing_and_a_value_helper_by_reference_are_written_in() -> None:
    got = _bodies(STEPS)
    assert "next(" not in got.text.split("auto next")[0] and "unit(s)" not in got.text
    assert "s ^= s << 13; const float u = ((float)((float)(s >> 8)));" in got.text, got.text
    assert got.text.count("\n") == STEPS.count("\n")  # every line keeps its number
    notes = [str(f) for f in got.findings]
    assert any(n.startswith("INLINE_BODY: applied: next (a lambda)") for n in notes), notes
    assert any(n.startswith("INLINE_BODY: applied: unit (a __device__ function)")
               for n in notes), notes


@pytest.mark.parametrize(("old", "new", "why"), [
    ("  auto next = [](unsigned s) {", "  auto next = [=](unsigned s) {",
     "INLINE_BODY: not applied: next (a lambda) is not written into its calls: it captures "
     "`=`, not by reference only: a copy is taken where it is defined (line 9)"),
    ("  return (float)(s >> 8);\n}", "  if (s == 0u) return 0.0f;\n  return (float)(s >> 8);\n}",
     "INLINE_BODY: not applied: unit (a __device__ function) is not written into its calls: "
     "its body holds a return (`return 0.0f;`) (line 3)"),
], ids=["copies", "returns_early"])
def test_a_callable_that_copies_or_returns_early_stays_a_call(old: str, new: str,
                                                               why: str) -> None:
    source = STEPS.replace(old, new)
    assert source != STEPS
    got = _bodies(source)
    assert why in [str(f) for f in got.findings], [str(f) for f in got.findings]


#: moments_macro_while's shape: two totals in one shared array, the run read at an offset.
PAIR = """extern "C" __global__ void k(float* sums, float* sumsq, const float* x, int n) {
  __shared__ double acc[2];
  const unsigned tid = threadIdx.x;
  if (tid == 0) {
    acc[0] = 0.0;
    acc[1] = 0.0;
  }
  __syncthreads();
  const size_t begin = (size_t)blockIdx.x * 4096;
  const int count = min(4096, (int)(n - begin));
  double s = 0.0, q = 0.0;
  for (int j = tid; j < count; j += blockDim.x) {
    const double v = x[begin + j];
    s += v;
    q += v * v;
  }
  atomicAdd(&acc[0], s);
  atomicAdd(&acc[1], q);
  __syncthreads();
  if (tid == 0) {
    sums[blockIdx.x] = (float)acc[0];
    sumsq[blockIdx.x] = (float)acc[1];
  }
}
"""


def test_an_array_of_slots_named_only_at_literals_is_one_scalar_a_slot() -> None:
    got = slot_arrays(InlinedSource(PAIR, "k.cu"), "k")
    assert "__shared__ double acc_0; __shared__ double acc_1;" in got.text, got.text
    assert "atomicAdd(&acc_0, s);" in got.text and "acc[" not in got.text
    assert got.text.count("\n") == PAIR.count("\n")
    assert [str(f) for f in got.findings] == [
        "SLOT_ARRAYS: applied: `acc` (2 slots, each named only at a literal subscript) is read "
        "as one scalar a slot (line 2)"]
    local = PAIR.replace("  double s = 0.0, q = 0.0;", "  double part[2] = {0.0, 1.0};")
    assert "double part_0 = 0.0; double part_1 = 1.0;" in slot_arrays(
        InlinedSource(local, "k.cu"), "k").text


@pytest.mark.parametrize(("old", "new"), [
    ("    acc[1] = 0.0;", "    acc[tid & 1] = 0.0;"),  # an index that is no literal
    ("    acc[1] = 0.0;", "    acc[1] = 0.0;\n    double* p = acc;"),  # the array escapes
    ("    acc[1] = 0.0;", "    acc[2] = 0.0;"),  # past the end: left for the compiler
    ("  __shared__ double acc[2];", "  __shared__ double acc[2][1];"),  # two dimensions
], ids=["variable", "escapes", "past_end", "two_dims"])
def test_an_array_named_otherwise_stays_an_array(old: str, new: str) -> None:
    source = PAIR.replace(old, new)
    assert source != PAIR
    got = slot_arrays(InlinedSource(source, "k.cu"), "k")
    assert got.text == source and not got.findings


def _pair_lift(source: str, tmp_path: Path) -> tuple[set[str], tuple[str, ...]]:
    kf = respelled(held_back_unseen6.SET.root / "moments_partials", tmp_path,
                   source.replace("void k(", "void moments_partials("))
    lifted = offline_template(kf).lifted
    return {p.name for p in lifted.params}, lifted.notes


@pytest.mark.parametrize("read", ["x[begin + j]", "x[j + begin]"])
def test_a_run_read_at_an_offset_from_a_thread_alias_vectorizes(read: str,
                                                                tmp_path: Path) -> None:
    names, notes = _pair_lift(PAIR.replace("x[begin + j]", read), tmp_path)
    assert {"FINAL", "UNROLL", "VEC", "CHUNKS"} <= names, notes


@pytest.mark.parametrize(("read", "why"), [
    ("x[begin + 2 + j]", "VEC: not applied: vector loads of the count: offset `2` of `x` is not "
     "shown to be a multiple of 4 floats (16-byte vectors) (line 12)"),
    ("x[begin - j]", "VEC: not applied: vector loads of the count: `j` is used other than as "
     "the index of one array read (line 13)"),
    ("x[begin + j] + x[j]", "VEC: not applied: vector loads of the count: the loop reads 1 "
     "arrays at `[j]` (one is needed, at one offset) (line 12)"),
], ids=["misaligned", "backwards", "two_offsets"])
def test_a_run_at_an_offset_that_is_no_aligned_run_keeps_scalar_loads(
        read: str, why: str, tmp_path: Path) -> None:
    names, notes = _pair_lift(PAIR.replace("x[begin + j]", read), tmp_path)
    assert "VEC" not in names and why in notes, notes


#: PAIR's stores behind an early return of every thread but thread 0 (moments_macro_while's).
STORES = """  if (tid == 0) {
    sums[blockIdx.x] = (float)acc[0];
    sumsq[blockIdx.x] = (float)acc[1];
  }
"""


@pytest.mark.parametrize(("leave", "why"), [
    ("tid != 0", None), ("threadIdx.x > 0", None), ("0 < tid", None), ("tid", None),
    ("tid == 0", "CHUNKS: not applied: chunks a block: `return;`: a thread may leave before "
     "the slots are filled (line 20)"),
    ("blockIdx.x > 0", "CHUNKS: not applied: chunks a block: `return;`: a thread may leave "
     "before the slots are filled (line 20)"),
], ids=["ne", "gt", "lt", "bare", "thread0_leaves", "a_block_leaves"])
def test_an_early_return_thread0_never_takes_keeps_chunks(leave: str, why: str | None,
                                                          tmp_path: Path) -> None:
    source = PAIR.replace(STORES, f"  if ({leave}) return;\n  sums[blockIdx.x] = (float)acc[0];"
                                  "\n  sumsq[blockIdx.x] = (float)acc[1];\n")
    assert source != PAIR
    names, notes = _pair_lift(source, tmp_path)
    assert ("CHUNKS" in names) == (why is None), notes
    assert why is None or why in notes, notes


@needs_gxx
@pytest.mark.timeout(600)
def test_the_chunked_respelling_totals_right_on_host(tmp_path: Path) -> None:
    """moments_macro_while and moments_helper_sizet at several chunks a block: their slots
    total what reference.py totals (one block of 8 slots, 7 zeroed; 2 chunks, 4 blocks)."""
    for spelling in ("moments_macro_while", "moments_helper_sizet"):
        kf = _folder(spelling, tmp_path / spelling)
        sampled = [{"BLOCK_THREADS": 96, "FINAL": 1, "UNROLL": 4, "VEC": 4, "CHUNKS": 8},
                   {"BLOCK_THREADS": 224, "FINAL": 0, "UNROLL": 2, "VEC": 2, "CHUNKS": 2}]
        host_check_totals(kf, atomic_configs(kf, sampled), tmp_path / "run" / spelling)


#: moments_helper_sizet's clamp, and clamps that are not the smaller of two values.
CLAMP = "  const size_t end = begin + cfg::chunk < (size_t)n ? begin + cfg::chunk : (size_t)n;\n"


@pytest.mark.parametrize(("clamp", "chunks"), [
    (CLAMP, True),
    ("  const size_t end = (size_t)n > begin + cfg::chunk ? begin + cfg::chunk : (size_t)n;\n",
     True),  # `b > a ? a : b`: the smaller too
    ("  const size_t end = begin + cfg::chunk > (size_t)n ? begin + cfg::chunk : (size_t)n;\n",
     False),  # the larger: the block would read past n
    ("  const size_t end = begin + cfg::chunk <= (size_t)n ? begin + cfg::chunk : (size_t)n;\n",
     True),
], ids=["lt", "gt_swapped", "larger", "le"])
def test_a_clamp_written_out_is_read_as_min(clamp: str, chunks: bool, tmp_path: Path) -> None:
    source = (SPELLINGS / "moments_helper_sizet.cu").read_text()
    assert CLAMP in source
    kf = respelled(held_back_unseen6.SET.root / "moments_partials", tmp_path,
                   source.replace(CLAMP, clamp))
    lifted = offline_template(kf).lifted
    assert ("CHUNKS" in {p.name for p in lifted.params}) == chunks, lifted.notes
    if not chunks:
        assert "CHUNKS: not applied: chunks a block: `begin + cfg::chunk` uses the chunk 4096 " \
            "other than as the block's start or the clamp of its range (line 18)" in \
            lifted.notes, lifted.notes


#: A count-down loop with its step in its test (mc_ref_countdown's).
DOWN = """extern "C" __global__ void k(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  int left = 8;
  while (left-- > 0) {
    acc += 0.5f;
  }
  out[i] = acc;
}
"""


def test_a_count_down_with_its_step_in_its_test_is_a_for_loop() -> None:
    got = counted_whiles(InlinedSource(DOWN, "k.cu"), "k").text
    assert "  for (int left = 8; left > 0; --left) {" in got, got
    assert got.count("\n") == DOWN.count("\n")


@pytest.mark.parametrize(("old", "new"), [
    ("    acc += 0.5f;", "    acc += left;"),  # the body reads the stepped counter
    ("  out[i] = acc;", "  out[i] = acc + left;"),  # read after the loop (-1, not 0)
    ("    acc += 0.5f;", "    if (acc > 2.0f) continue;\n    acc += 0.5f;"),
    ("  while (left-- > 0) {", "  while (left-- > 1) {"),  # another bound
], ids=["read_inside", "read_after", "continue", "other_bound"])
def test_a_count_down_that_is_not_that_loop_stays_a_while(old: str, new: str) -> None:
    source = DOWN.replace(old, new)
    assert source != DOWN
    assert "while (left--" in counted_whiles(InlinedSource(source, "k.cu"), "k").text


@needs_gxx
@pytest.mark.timeout(600)
def test_the_wrapped_convolution_refills_its_tile_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """conv5_lambda_wrapped at USE_SMEM 2 over block shapes and outputs a thread (the check
    shape 23 x 37: partial blocks on both axes): bit for bit as written."""
    kf = _folder("conv5_lambda_wrapped", tmp_path / "folder")
    lifted = offline_template(kf)
    assert "  if (USE_SMEM == 2 || (x < w && y < h)) {" in lifted.lifted.source
    assert "  const bool wb_live = (x < w && y < h);" in lifted.lifted.source
    default = dict(lifted.template.default_config())
    configs = [{**default, **mix} for mix in (
        {"USE_SMEM": 2}, {"BLOCK_X": 8, "BLOCK_Y": 4, "OUT_Y": 8, "USE_SMEM": 2},
        {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_X": 4, "OUT_Y": 1, "USE_SMEM": 2})]

    def host(source: str) -> str:
        return held_back_unseen4.SET.host_source(HOST_EXTRAS + source)

    assert same_as_written(kf, lifted.template, configs, host, tmp_path / "run",
                           host_flags) == 3
