"""Round 31b (issue 28): six memory-bound corpus kernels, each written twice more by other
hands (a rule that matches only the corpus's spelling of a kernel is not stage 1):
pixel_shuffle_r2 (a gather, one output a thread), adamw_step (an elementwise update of
four streams), nv12_to_rgba (a 2-D pixel map with a uchar4 store), row_firsthits_warp (a
warp a row voting with ballots), cummax_rows_cg (a warp a row scanning with shuffles) and
maxpool3s2_nchw (a 3 x 3 window at stride 2 over planes). The respellings live in
tests/spellings_r31b/ (the kernel as written; the corpus folder's kernel.toml and
reference.py come with :func:`held_back_harness.respelled`): a constexpr grid-stride loop
over a local count, unsigned indices with a shape struct by value and an index helper; C
with every expression written out and no ``__restrict__``, a ``size_t`` index with a lambda
and a struct's member function; int indices with index macros wrapped in the bounds test,
planes in a braced struct with a uchar4 helper and ``reinterpret_cast`` row pointers;
constexpr constants with a ``warpSize`` stride wrapped in the row test, cooperative groups
voting through ``tile.ballot``; ``__shfl_up_sync`` / ``__shfl_sync`` by hand, the tile's
scan in a helper taking the tile by reference; nested window loops under an index macro,
a helper folding a row by reference with unsigned indices.

What the respellings taught the templater:

- row_firsthits_warp_cg votes through ``tile.ballot(hit)``: the cooperative-groups pass did
  not model it and the kernel was refused whole ("nothing to lift"). A tile's ``ballot`` /
  ``any`` / ``all`` are now the warp's ``__ballot_sync`` over the tile's lanes, as the
  header's static tile computes them: every knob of the corpus kernel (its warps under the
  author's macro WARPS).
- cummax_rows_cg_helper calls its scan helper as an argument, ``fmaxf(inclusive_max(tile,
  v), carry)``: inlining took only a statement, an initializer or an assigned value, so the
  kernel was refused whole. A call's arguments are indeterminately sequenced and the
  enclosing call runs after them: the helper's body running first is an order the call
  allowed, so inline_site now reads a named call's argument as it reads an arithmetic
  operand (refused where another argument assigns, steps or calls, under ``&&``, ``||``,
  ``?:``, or through a pointer): every knob.
- nv12_to_rgba_int_wrapped wraps its pixel in ``if (x < w && y < h) { .. }``: VEC along x
  read only the row exit ``if (x >= w || ..) return;``. The wrap as the body's last
  statement (no else, the other conjuncts not reading x) is the same region; its test now
  stays on the thread's first position. Its store ``reinterpret_cast<uchar4*>(rgba)[..]``
  is the C cast's stream: every knob.
- nv12_to_rgba_struct_helper keeps its planes in ``const Planes planes{luma, chroma,
  pitch};`` and stores through ``uchar4* dst = reinterpret_cast<uchar4*>(rgba) + row * w``:
  struct_locals read only ``Signal s; s.x = ..;``, and a local pointer had to be a kernel
  pointer plus an offset. A braced aggregate sets each field once in order (a pointer field
  now a local with its value, a field of a parameter's own type that parameter), and a
  local pointer from a cast kernel pointer counts its offset in the cast's elements: VEC.
- pixel_shuffle_r2_gridstride loops ``for (int i = ..; i < total; i += kThreads *
  gridDim.x)`` with ``total = N * C * oh * ow`` a local: the launch runs it once a thread,
  but ilp_gridstride wanted a kernel argument as the bound, and the straight-line families
  read only the guarded form. once_loop now reads a never-assigned local whose value is the
  grid's count (the same integer polynomial of the sizes), and GRID_STRIDE_ONCE lifts such
  a loop also as ``T i = ..; if (i < total) ..``, kept where that lifts strictly more:
  ITEMS_PER_THREAD and VEC, every knob.
- maxpool3s2_nchw_helper_unsigned declares ``const unsigned p = blockIdx.y;`` after its
  exit and stores ``out[(size_t)p * count + t]``: the 1-D VEC's store after the lanes named
  ``p`` out of its scope, a lift that did not compile. A stream whose index reads a local the
  element declares is now refused with its line (GAPS: the value could stand in its place).

Lifted as the corpus kernel already (no change needed): pixel_shuffle_r2_helper_unsigned,
adamw_step_lambda_sizet, row_firsthits_warp_constexpr_wrapped, cummax_rows_cg_shfl.

What is left (asserted in CASES and GAPS; all three in vector.py, which this round leaves
to its owner):

- adamw_step_c_macro has no VEC: its pointers are not ``__restrict__``, so an output may
  alias an input (another program than the corpus kernel's). Its element reads all precede
  its first store, which vector_rows already takes as showing a vector legal
  (``reads_first``); vector.apply_vector's one-element region does not pass it.
- maxpool3s2_nchw_loops has no VEC: vector.vectorize refuses a body with a loop of its own
  (the window's) that reads the index as a value where the output is not ``__restrict__``.
- maxpool3s2_nchw_helper_unsigned has no VEC: vector.vector_moves spells the store's
  address with the element's local ``p``; ``p``'s value (``blockIdx.y``, lane-invariant)
  could stand in its place, as vector_rows._address does for a pointer local.

Host (g++): every respelling, lifted, bit for bit against itself as written at the default
and a mix (the all-ends configs too under WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import held_back_unseen13
import held_back_unseen20
import held_back_unseen21
import held_back_unseen22
import held_back_unseen23
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import lift_kernel, offline_template
from workbench.templater.coop_groups import inlined_after_groups
from workbench.templater.inline_calls import InlinedSource, inline_calls
from workbench.templater.struct_locals import struct_locals

SPELLINGS = Path(__file__).resolve().parent / "spellings_r31b"

_ONE = frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "VEC"})
_XY = frozenset({"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y", "VEC"})
_HITS = frozenset({"WARPS_PER_BLOCK", "ROWS", "LDG", "AHEAD"})
_SCAN = frozenset({"WARPS_PER_BLOCK", "ROWS", "LDG", "ITEMS_PER_THREAD", "VEC"})

#: spelling -> (its set, the corpus kernel, knobs its lift has, knobs of the corpus
#: kernel's lift it lacks (the semantics differ, or what is left: GAPS), a mix)
CASES: dict[str, tuple[ModuleType, str, frozenset[str], frozenset[str], dict[str, int]]] = {
    "pixel_shuffle_r2_gridstride": (
        held_back_unseen22, "pixel_shuffle_r2", _ONE, frozenset(),
        {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 2, "VEC": 2}),
    "pixel_shuffle_r2_helper_unsigned": (
        held_back_unseen22, "pixel_shuffle_r2", _ONE, frozenset(),
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "VEC": 2}),
    # no __restrict__: the outputs may alias the inputs (another program: GAPS says where
    # a rule could still show the vectors legal)
    "adamw_step_c_macro": (
        held_back_unseen22, "adamw_step", frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD"}),
        frozenset({"VEC"}), {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2}),
    "adamw_step_lambda_sizet": (
        held_back_unseen22, "adamw_step", _ONE, frozenset(),
        {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 2, "VEC": 4}),
    "nv12_to_rgba_int_wrapped": (
        held_back_unseen23, "nv12_to_rgba", _XY, frozenset(),
        {"BLOCK_X": 16, "BLOCK_Y": 4, "ITEMS_X": 2, "ITEMS_Y": 2, "VEC": 2}),
    "nv12_to_rgba_struct_helper": (
        held_back_unseen23, "nv12_to_rgba", _XY, frozenset(),
        {"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_Y": 4, "VEC": 2}),
    "row_firsthits_warp_constexpr_wrapped": (
        held_back_unseen20, "row_firsthits_warp", _HITS, frozenset(),
        {"WARPS_PER_BLOCK": 4, "ROWS": 2, "LDG": 1, "AHEAD": 2}),
    # the author's macro WARPS is the warps' knob under its own name
    "row_firsthits_warp_cg": (
        held_back_unseen20, "row_firsthits_warp", _HITS - {"WARPS_PER_BLOCK"},
        frozenset({"WARPS_PER_BLOCK"}), {"WARPS": 2, "ROWS": 4, "AHEAD": 2}),
    "cummax_rows_cg_shfl": (
        held_back_unseen21, "cummax_rows_cg", _SCAN, frozenset(),
        {"WARPS_PER_BLOCK": 2, "ROWS": 2, "ITEMS_PER_THREAD": 2, "VEC": 2}),
    "cummax_rows_cg_helper": (
        held_back_unseen21, "cummax_rows_cg", _SCAN, frozenset(),
        {"WARPS_PER_BLOCK": 4, "ROWS": 2, "ITEMS_PER_THREAD": 4, "VEC": 4}),
    "maxpool3s2_nchw_loops": (
        held_back_unseen13, "maxpool3s2_nchw", frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD"}),
        frozenset({"VEC"}), {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4}),
    "maxpool3s2_nchw_helper_unsigned": (
        held_back_unseen13, "maxpool3s2_nchw", _ONE - {"VEC"}, frozenset({"VEC"}),
        {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 2}),
}

#: What a spelling's notes say where a missing knob stops (a prefix of a note).
GAPS: dict[str, str] = {
    "adamw_step_c_macro": "VEC: not applied: `m_out` is written, is not __restrict__ and may "
                          "alias g, m, p, v",
    "maxpool3s2_nchw_loops": "VEC: not applied: `out` is written and not __restrict__, and `i` "
                             "is also read as a value (`i / wo`)",
    "maxpool3s2_nchw_helper_unsigned": "VEC: not applied: `out[(size_t)p * count + t]` reads p, "
                                       "declared after the exit",
}

#: Host forms beyond the sets' preludes: the plain shuffles a lifted cooperative-groups tile
#: reads (a lane reading below lane 0 of its group gets its own value, CUDA's rule), a
#: tile's ballot, and warpSize.
SHUFFLES = r"""
static const int warpSize = 32;
template <class T> static T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const unsigned lane = wb_lane();
  return wb_exchange(v, lane - delta, lane % unsigned(width) < delta);
}
template <class T> static T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const unsigned lane = wb_lane();
  return wb_exchange(v, lane - lane % unsigned(width) + unsigned(src) % unsigned(width), false);
}
"""



def _folder(spelling: str, root: Path) -> KernelFolder:
    held, corpus = CASES[spelling][:2]
    return respelled(held.SET.root / corpus, root, (SPELLINGS / f"{spelling}.cu").read_text())


def _host(held: ModuleType, source: str) -> str:
    """``source`` as the host compiles it: the shuffles, then (a kernel of another set naming
    cooperative groups) set 21's groups with a tile's ballot, then the set's own prelude."""
    extras = SHUFFLES
    if "cooperative_groups" in source and held is not held_back_unseen21:
        groups = held_back_unseen21.HOST_EXTRAS.split("namespace cooperative_groups", 1)[1]
        ballot = ("  unsigned ballot(int p) const { return __ballot_sync(0xffffffffu, p); }\n"
                  "  template <class T> T shfl(T v, int src) const")
        extras += "namespace cooperative_groups" + groups.replace(
            "  template <class T> T shfl(T v, int src) const", ballot)
        source = source.replace("#include <cooperative_groups.h>", "")
    return held.SET.host_source(extras + source)


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


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    held, mix = CASES[spelling][0], CASES[spelling][4]
    kf = _folder(spelling, tmp_path / "folder")
    template = offline_template(kf).template
    configs = default_and_mix(template, kf, mix)
    assert same_as_written(kf, template, configs, lambda s: _host(held, s), tmp_path / "run",
                           host_flags) == len(configs)


def _lift(source: str, grid: list[str], block: list[str], scalars: dict[str, str]
          ) -> tuple[set[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="k", grid=grid, block=block, scalars=scalars)
    return {p.name for p in lifted.params}, lifted.notes, lifted.source


#: A tile's votes (row_firsthits_warp_cg's ballot), of a tile of 32 and of 16.
VOTES = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(unsigned* out, const float* x, int n) {
  cg::thread_block_tile<S> t = cg::tiled_partition<S>(cg::this_thread_block());
  const int i = blockIdx.x * 256 + threadIdx.x;
  const bool hit = i < n && x[i] > 0.5f;
  out[i] = t.ballot(hit) + (t.any(hit) ? 2u : 0u) + (t.all(hit) ? 4u : 0u);
}
"""


@pytest.mark.parametrize(("size", "want"), [
    (32, ["__ballot_sync(0xffffffff, hit)", "(__ballot_sync(0xffffffff, hit) != 0)",
          "(__ballot_sync(0xffffffff, hit) == 0xffffffff)"]),
    (16, ["(__ballot_sync((0xffffu << (threadIdx.x & 16u)), hit) >> (threadIdx.x & 16u))",
          "(__ballot_sync((0xffffu << (threadIdx.x & 16u)), hit) != 0)",
          "(__ballot_sync((0xffffu << (threadIdx.x & 16u)), hit) == (0xffffu << "
          "(threadIdx.x & 16u)))"]),
])
def test_a_tiles_votes_are_the_warps_ballot(size: int, want: list[str]) -> None:
    source = VOTES.replace("<S>", f"<{size}>")
    got = inlined_after_groups(source, "k", "k.cu", ["256"])
    for spelled in want:
        assert spelled in got.text, got.text
    assert "t.ballot" not in got.text and got.text.count("\n") == source.count("\n")


#: A value helper called as an argument (cummax_rows_cg_helper's ``fmaxf(inclusive_max(..),
#: carry)``).
NESTED = """__device__ float twice(float v) {
  for (int d = 1; d < 4; d <<= 1) v += v;
  return v;
}

extern "C" __global__ void k(float* out, const float* x, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  const float carry = x[0];
  const float v = fmaxf(twice(x[i]), carry);
  out[i] = v;
}
"""


def test_a_call_as_a_named_calls_argument_is_inlined() -> None:
    got = inline_calls(NESTED, "k", "k.cu")
    assert "const float v = fmaxf(((float)(twice_v)), carry);" in got.text, got.text
    assert [f.applied for f in got.findings] == [True]


@pytest.mark.parametrize("value", [
    "fmaxf(twice(x[i]), x[i++])",  # another argument steps a local
    "fmaxf(twice(x[i]), expf(carry))",  # another argument calls
    "i > 3 && twice(x[i]) > 0.0f",  # evaluated only where the left holds
    "(*fp)(twice(x[i]))",  # a call through a pointer
])
def test_a_call_an_argument_may_skip_or_reorder_stays_a_call(value: str) -> None:
    source = NESTED.replace("fmaxf(twice(x[i]), carry)", value).replace(
        "const float carry", "float (*fp)(float) = nullptr; const float carry")
    got = inline_calls(source, "k", "k.cu")
    assert "twice(x[i])" in got.text
    assert "its result is used in an expression" in got.findings[0].reason, got.findings


#: nv12_to_rgba_int_wrapped's shape: a 2-D row region wrapped in the bounds test.
WRAPPED = """extern "C" __global__ void k(unsigned char* out, const unsigned char* x, int w, int h,
                          int pitch) {
  int col = blockIdx.x * 32 + threadIdx.x;
  int row = blockIdx.y * 8 + threadIdx.y;
  if (col < w && row < h) {
    reinterpret_cast<uchar4*>(out)[row * w + col] = make_uchar4(x[row * pitch + col], 0, 0, 1);
  }
}
"""
_2D = (["ceil_div(w, 32)", "ceil_div(h, 8)"], ["32", "8"], {"w": "w", "h": "h", "pitch": "pitch"})


def test_a_wrapped_row_region_vectorizes_along_x() -> None:
    names, notes, source = _lift(WRAPPED, *_2D)
    assert "VEC" in names, notes
    assert "if (col < w && row < h){  // VEC consecutive col a thread" in source, source
    assert "WbVec<uchar4, VEC>" in source


@pytest.mark.parametrize(("old", "new"), [
    ("  }\n}", "  } else {\n    out[0] = 0;\n  }\n}"),  # an else: no exit's reading
    ("if (col < w && row < h)", "if (col < w && (row < h || col < 3))"),  # x read again
    ("if (col < w && row < h)", "if (col <= w && row < h)"),  # another bound
], ids=["else", "x_again", "le"])
def test_a_wrap_that_is_no_row_exit_keeps_scalar_stores(old: str, new: str) -> None:
    source = WRAPPED.replace(old, new)
    assert source != WRAPPED
    names, notes, _source = _lift(source, *_2D)
    assert "VEC" not in names, notes


#: A stream's index reading a local the element declares (maxpool3s2_nchw_helper_unsigned's
#: ``const unsigned p = blockIdx.y;``): the lift named it out of scope; now refused.
PLANE = """extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ x,
                          int n) {
  const unsigned t = blockIdx.x * 128 + threadIdx.x;
  if (t >= (unsigned)n) return;
  const unsigned p = blockIdx.y;
  out[p * n + t] = x[p * n + t] * 2.0f;
}
"""


def test_a_stream_indexed_by_a_local_of_the_element_keeps_scalar_loads() -> None:
    names, notes, _source = _lift(PLANE, ["ceil_div(n, 128)", "4"], ["128"], {"n": "n"})
    assert "VEC" not in names
    assert "VEC: not applied: `out[p * n + t]` reads p, declared after the exit: the vector " \
        "load or store outside the lanes cannot read it (line 6)" in notes, notes
    hoisted = PLANE.replace("  const unsigned p = blockIdx.y;\n", "").replace(
        "  const unsigned t =", "  const unsigned p = blockIdx.y;\n  const unsigned t =")
    assert "VEC" in _lift(hoisted, ["ceil_div(n, 128)", "4"], ["128"], {"n": "n"})[0]


#: pixel_shuffle_r2_gridstride's shape: a grid-stride loop bounded by a local count.
STRIDE = """extern "C" __global__ void k(float* out, const float* x, int n, int c) {
  const int m = 2 * n;
  const int total = c * m;
  for (int i = blockIdx.x * 256 + threadIdx.x; i < total; i += 256 * gridDim.x) {
    const int j = i % m;
    out[i] = x[j] * 2.0f;
  }
}
"""


@pytest.mark.parametrize(("grid", "once"), [
    ("ceil_div(2 * c * n, 256)", True), ("ceil_div(n * c + c * n, 256)", True),
    ("ceil_div(c * n, 256)", False),  # another count: a thread may take two trips
    ("min(ceil_div(2 * c * n, 256), 1024)", False),  # a capped grid
])
def test_a_grid_stride_loop_over_a_local_count_is_the_guarded_item(grid: str,
                                                                     once: bool) -> None:
    names, notes, source = _lift(STRIDE, [grid], ["256"], {"n": "n", "c": "c"})
    assert ({"VEC", "ITEMS_PER_THREAD"} <= names) == once, notes
    assert any(n.startswith("GRID_STRIDE_ONCE: applied") for n in notes) == once, notes
    if once:
        assert "i += 256 * gridDim.x" not in source


#: nv12_to_rgba_struct_helper's shape: planes in a struct built by a braced initializer.
BRACED = """struct Planes {
  const float* y;
  int pitch;
  unsigned wide;
};

extern "C" __global__ void k(float* out, const float* x, int n, int pitch) {
  const Planes pl{x + 1, pitch, pitch};
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) out[i] = pl.y[i] + pl.pitch + pl.wide;
}
"""


def test_a_braced_struct_reads_as_its_pointer_locals_and_parameters() -> None:
    got = struct_locals(InlinedSource(BRACED, "k.cu"), "k")
    assert "const Planes pl{x + 1, pitch, pitch}; const float * pl_y = x + 1;" in got.text, \
        got.text
    # the int field is the parameter; the unsigned one converts it: left as the field
    assert "out[i] = pl_y[i] + pitch + pl.wide;" in got.text, got.text
    assert got.text.count("\n") == BRACED.count("\n")
    plain = BRACED.replace(" + pl.wide", "")
    assert "  const float * pl_y = x + 1;\n" in struct_locals(InlinedSource(plain, "k.cu"),
                                                             "k").text


@pytest.mark.parametrize(("old", "new"), [
    ("pl{x + 1, pitch, pitch}", "pl{x + 1, pitch}"),  # a field value-initialised
    ("out[i] = pl.y[i]", "out[i] = (&pl)->y[i]"),  # addressed
])
def test_a_braced_struct_otherwise_stays_a_struct(old: str, new: str) -> None:
    source = BRACED.replace(old, new)
    assert source != BRACED
    assert struct_locals(InlinedSource(source, "k.cu"), "k").text == source
