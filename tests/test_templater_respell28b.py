"""Set 20's fixes read the semantics, not the corpus's spelling (issue 28, session 28's
RESPELL-B): each of crspline_rotmean, conv3x3_s2_sat and row_firsthits_warp written again by
two other hands, and a third for each fix of session 29 (tests/spellings_r28b/<spelling>/:
the kernel as written and the corpus folder's kernel.toml), lifted by ``offline_template``
and compared with the knobs of the corpus kernel's own lift.

What the respellings taught the templater:

- crspline_c89 (C89 declarations, a ``__device__`` helper with statements returning the
  spline, while loops, the segment clamped by ``if (seg > KNOTS - 1) seg = KNOTS - 1;``) and
  crspline_tpl (a ``template <int N>`` helper, ``seg = min(seg, N - 1)``, restrict pointers,
  the samples counted down): the block's staged knots reach the helper as an argument
  (``spline_at(knots, ..)``), which table_prologue now reads as the staged table where the
  helper's parameter is only read as ``k[..]``; the items interleave the samples' loop
  through the helper's call. Before: BLOCK_THREADS, VEC, ITEMS_PER_THREAD (vectors) and
  BLOCK_THREADS alone; now BLOCK_THREADS, SPAN, ITEMS_PER_THREAD, UNROLL. INDEX_MASK reads
  a helper's pointer parameter that every call binds to a declared array (``knots``) as the
  array: crspline_c89 has it too.
- The spline written in the kernel with its segment clamped on the local (``if (seg > 63)
  seg = 63;``, ``seg = seg > 63 ? 63 : seg;``, ``seg = min(seg, 63);``): table_lookup reads
  the local as every value written to it in the trip, so the knots are a lookup, not a walk
  (before: VEC took the items); a value that reads the counter stays a walk.
- conv_fields (``int2 o; o.x = ..; o.y = ..;``): point_split reads a vector set field by
  field as one local per component; before: BLOCK_X, BLOCK_Y alone; now ITEMS_X, ITEMS_Y.
- firsthits_stepped (the parameters stepped to the row, ``x += (size_t)row * cols``): ROWS
  repeated the step for each row (a wrong config: the host run aborted at ROWS 4), then was
  refused with the line (session 28); now each name declared before the item and written
  after it is copied at the item and set back from the copy at the start of every row
  (warp_row_items: each row derives its pointer from the original base, never stepping
  again), so ROWS lifts; firsthits_ptr_early (an early return, ``x = x + ..``, ``count +=
  row``, the count stored through the stepped pointer) too. A pre-item name whose address is
  taken after the item, or declared with no value to copy, is still refused with the line.
  Its do-while over the chunks is read as ``for (int c0 = 0; c0 == 0 || (c0 < cols); c0 +=
  32)`` (loop_forms_open: the first pass whatever the bound); AHEAD
  now reads that test (lane_bound.first_pass_bound: ``c0`` holds 0 on the first pass only,
  its step a constant above zero, so each step of a group is tested ``c0 == 0 || (c0 <
  cols)``) where before it was silently left; firsthits_do_c89 (C89 declarations, macros, a
  do-while stepped by ``base = base + WARP``) lifts AHEAD and ROWS too. A do it cannot read
  (its test reads the count, or its counter moves twice) says so with the line.
- crspline_tpl had no INDEX_MASK before session 29: its remainders are ``i % N`` of a
  template parameter inside ``ring<N>``. INDEX_MASK now reads a template parameter as the
  constants the file's instantiations bind it to (template_values: ``ring<N>`` inside
  ``catmull_rom<N>``, called as ``catmull_rom<kKnots>`` with ``constexpr int kKnots = 64``),
  a helper's pointer parameter bound through a templated call (``catmull_rom<kKnots>(knots,
  ..)``) as the array, and a helper that is one ``return i % N;`` whose every call is the whole
  subscript of such an array as that subscript's remainder. crspline_tpl_direct (a file-scope
  constexpr, ``spline<kKnotCount, float>``, the wrap ``knot[(seg + 1) % N]`` in the helper)
  lifts it too; an instantiation that is not a power of two, or ``ring``'s value kept in a
  local, is refused with the line.

Host (g++): every respelling's lift bit for bit against the respelling as written at the
default and one mix (the all-ends configs too under WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen20
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_r28b"
SET = held_back_unseen20.SET

#: spelling -> (the corpus kernel, the knobs its lift has, the corpus kernel's knobs it
#: still misses, one mix over the default checked on the host).
CASES: dict[str, tuple[str, frozenset[str], frozenset[str], dict[str, int]]] = {
    "crspline_c89": ("crspline_rotmean", frozenset({"BLOCK_THREADS", "SPAN", "ITEMS_PER_THREAD",
                                                    "UNROLL", "INDEX_MASK"}), frozenset(),
                     {"BLOCK_THREADS": 64, "SPAN": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 4,
                      "INDEX_MASK": 1}),
    "crspline_tpl": ("crspline_rotmean",
                     frozenset({"BLOCK_THREADS", "SPAN", "ITEMS_PER_THREAD", "UNROLL",
                                "INDEX_MASK"}), frozenset(),
                     {"BLOCK_THREADS": 96, "SPAN": 8, "ITEMS_PER_THREAD": 2, "UNROLL": 2,
                      "INDEX_MASK": 1}),
    "crspline_tpl_direct": ("crspline_rotmean",
                            frozenset({"BLOCK_THREADS", "SPAN", "ITEMS_PER_THREAD", "UNROLL",
                                       "INDEX_MASK"}), frozenset(),
                            {"BLOCK_THREADS": 128, "SPAN": 4, "ITEMS_PER_THREAD": 4,
                             "UNROLL": 8, "INDEX_MASK": 1}),
    "conv_fields": ("conv3x3_s2_sat", frozenset({"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y"}),
                    frozenset(), {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_X": 1, "ITEMS_Y": 4}),
    "conv_flat": ("conv3x3_s2_sat", frozenset({"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y"}),
                  frozenset(), {"BLOCK_X": 8, "BLOCK_Y": 16, "ITEMS_X": 2, "ITEMS_Y": 8}),
    "firsthits_any": ("row_firsthits_warp",
                      frozenset({"WARPS_PER_BLOCK", "ROWS", "LDG", "AHEAD"}), frozenset(),
                      {"WARPS_PER_BLOCK": 1, "ROWS": 4, "AHEAD": 2, "LDG": 0}),
    "firsthits_stepped": ("row_firsthits_warp",
                          frozenset({"WARPS_PER_BLOCK", "ROWS", "LDG", "AHEAD"}), frozenset(),
                          {"WARPS_PER_BLOCK": 2, "ROWS": 4, "LDG": 1, "AHEAD": 2}),
    "firsthits_ptr_early": ("row_firsthits_warp",
                            frozenset({"WARPS_PER_BLOCK", "ROWS", "LDG", "AHEAD"}), frozenset(),
                            {"WARPS_PER_BLOCK": 1, "ROWS": 2, "LDG": 0, "AHEAD": 8}),
    "firsthits_do_c89": ("row_firsthits_warp",
                         frozenset({"WARPS_PER_BLOCK", "ROWS", "LDG", "AHEAD"}), frozenset(),
                         {"WARPS_PER_BLOCK": 4, "ROWS": 2, "LDG": 1, "AHEAD": 4}),
}

#: What each short spelling's notes say where the missing knob stops (a prefix of a note).
GAPS: dict[str, str] = {}

#: Host forms of the built-ins the respellings and their lifts use beyond the set's
#: (``__any_sync`` a vote of the set's ``__ballot_sync``; FAST_DIV's ``__fdividef`` the
#: division, as other sets write it: the GPU's gate checks its tolerance).
HOST_EXTRAS = """static const int warpSize = 32;
static int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
#define __fdividef(a, b) ((a) / (b))
"""



def _source(spelling: str) -> str:
    return (SPELLINGS / spelling / f"{CASES[spelling][0]}.cu").read_text()


@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_lifts_the_corpus_kernels_knobs(spelling: str) -> None:
    corpus, knobs, missing, _mix = CASES[spelling]
    lifted = offline_template(load_kernel_folder(SPELLINGS / spelling)).lifted
    names = {p.name for p in lifted.params}
    own = {p.name for p in offline_template(SET.folder(corpus)).lifted.params}
    assert knobs <= names and knobs <= own, (names, lifted.notes)
    assert not missing & names and missing <= own, (names, lifted.notes)
    if spelling in GAPS:
        assert any(n.startswith(GAPS[spelling]) for n in lifted.notes), lifted.notes


@pytest.mark.parametrize("spelling", ["crspline_c89", "crspline_tpl", "crspline_tpl_direct"])
def test_a_table_passed_to_a_helper_that_only_reads_it_stays_staged(spelling: str) -> None:
    lifted = offline_template(load_kernel_folder(SPELLINGS / spelling)).lifted
    assert "VEC" not in {p.name for p in lifted.params}  # the items interleave, not lanes
    assert any(n.startswith("ITEMS_PER_THREAD: applied:") and "interleave the items" in n
               for n in lifted.notes), lifted.notes


@pytest.mark.parametrize(("old", "new"), [
    ("    p1 = k[seg];", "    p1 = k[seg];\n    ((float *)k)[seg] = p1;"),  # written through
    ("__device__ float spline_at(const float *k, float t)\n{",
     "__device__ float spline_at(const float *k, float t)\n{\n    const float *q = k + 1;"),
], ids=["written", "escapes"])
def test_a_helper_that_writes_or_passes_on_the_table_does_not_stage_it(
        tmp_path: Path, old: str, new: str) -> None:
    source = _source("crspline_c89")
    assert old in source
    kf = respelled(SET.root / "crspline_rotmean", tmp_path, source.replace(old, new))
    lifted = offline_template(kf).lifted
    assert not {"SPAN", "UNROLL"} & {p.name for p in lifted.params}, lifted.notes
    assert not any(n.startswith("ITEMS_PER_THREAD: applied:") and "interleave the items" in n
                   for n in lifted.notes), lifted.notes


def test_a_helper_parameter_bound_to_a_pointer_keeps_its_remainders(tmp_path: Path) -> None:
    """``table`` (a kernel pointer, which may point into the middle of a buffer) bound to the
    helper's parameter: a negative subscript may be defined, so no mask."""
    source = _source("crspline_c89").replace("spline_at(knots, ", "spline_at(table, ")
    kf = respelled(SET.root / "crspline_rotmean", tmp_path, source)
    lifted = offline_template(kf).lifted
    assert "ITEMS_PER_THREAD" in {p.name for p in lifted.params}, lifted.notes
    assert "INDEX_MASK" not in {p.name for p in lifted.params}, lifted.notes
    assert "WB_INDEX_MASK" not in lifted.source


@pytest.mark.parametrize(("old", "new"), [
    ("    o.y = blockIdx.y", "    const int early = o.y;\n    o.y = blockIdx.y"),  # read first
    ("    int2 half;",  # set twice
     "    o.x = blockIdx.x * blockDim.x + threadIdx.x;\n    int2 half;"),
], ids=["read_before_set", "set_twice"])
def test_a_vector_not_set_once_before_its_reads_stays_a_vector(
        tmp_path: Path, old: str, new: str) -> None:
    source = _source("conv_fields")
    assert old in source
    kf = respelled(SET.root / "conv3x3_s2_sat", tmp_path, source.replace(old, new))
    names = {p.name for p in offline_template(kf).lifted.params}
    assert not {"ITEMS_X", "ITEMS_Y"} & names, names


#: crspline_rotmean with the spline in the kernel's loop, its segment clamped on the local
#: (CLAMP below, three hands) as the kernel as written clamps it in its declaration.
INLINE = """extern "C" __global__ void crspline_rotmean(float* out, const float* u, const float* table,
                                            int n) {
  __shared__ float knots[64];
  for (int j = threadIdx.x; j < 64; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float x = u[i];
    float sum = 0.0f, phase = 0.0f;
    for (int k = 0; k < 64; ++k) {
      float t = x + phase;
      t = t >= 1.0f ? t - 1.0f : t;
      const float s = t * 64;
      int seg = (int)s;
      CLAMP
      const float f = s - seg;
      const float p0 = knots[(seg + 63) % 64], p1 = knots[seg];
      const float p2 = knots[(seg + 1) % 64], p3 = knots[(seg + 2) % 64];
      const float c1 = 0.5f * (p2 - p0);
      const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
      const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
      sum += ((c3 * f + c2) * f + c1) * f + p1;
      phase += 0.61803398875f;
      if (phase >= 1.0f) phase -= 1.0f;
    }
    out[i] = sum * (1.0f / 64);
  }
}
"""
CLAMPS = {"if": "if (seg > 63) seg = 63;", "ternary": "seg = seg > 63 ? 63 : seg;",
          "min": "seg = min(seg, 63);"}


@pytest.mark.parametrize("clamp", sorted(CLAMPS))
def test_a_segment_clamped_on_its_local_is_a_lookup(clamp: str, tmp_path: Path) -> None:
    kf = respelled(SET.root / "crspline_rotmean", tmp_path, INLINE.replace("CLAMP",
                                                                           CLAMPS[clamp]))
    names = {p.name for p in offline_template(kf).lifted.params}
    assert {"SPAN", "ITEMS_PER_THREAD", "UNROLL"} <= names and "VEC" not in names, names


def test_a_segment_the_counter_moves_is_a_walk(tmp_path: Path) -> None:
    """The local's values are followed: one that reads the samples' counter moves with the
    trips, so the knots' reads walk memory and the samples' loop is not interleaved."""
    kf = respelled(SET.root / "crspline_rotmean", tmp_path,
                   INLINE.replace("CLAMP", "seg = (seg + k) % 64;"))
    names = {p.name for p in offline_template(kf).lifted.params}
    assert not {"SPAN", "UNROLL"} & names, names


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    corpus, _knobs, _missing, mix = CASES[spelling]
    kf = respelled(SET.root / corpus, tmp_path / "folder", _source(spelling))
    assert _same_as_written(kf, mix, tmp_path, host_flags) >= 2


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_clamped_segment_computes_as_written(tmp_path: Path,
                                                 host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(SET.root / "crspline_rotmean", tmp_path / "folder",
                   INLINE.replace("CLAMP", CLAMPS["min"]))
    mix = {"BLOCK_THREADS": 64, "SPAN": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 4}
    assert _same_as_written(kf, mix, tmp_path, host_flags) >= 2


def _same_as_written(kf: KernelFolder, mix: dict[str, int], tmp_path: Path,
                     flags: tuple[str, ...]) -> int:
    """The lift of ``kf`` bit for bit with ``kf`` as written on the host at the default and
    ``mix`` (and the all-ends configs under WORKBENCH_FULL_MATRIX=1); the configs run."""
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), [mix])
    if not FULL_MATRIX:
        configs = configs[:2]  # the default and the mix
    return same_as_written(kf, template, configs, _host, tmp_path / "run", flags)


def _host(source: str) -> str:
    return SET.host_source(HOST_EXTRAS + source)


#: firsthits_stepped's do-while over the chunks, and edits of it AHEAD cannot read.
DO_TAIL = "      c0 += 32;\n    } while (c0 < cols);\n"


@pytest.mark.parametrize("tail", [
    "      c0 += 32;\n    } while (c0 < cols && total < kKeep);\n",  # a test of the count
    "      c0 += 16;\n      c0 += 16;\n    } while (c0 < cols);\n",  # the counter moved twice
], ids=["reads_the_count", "moved_twice"])
def test_a_do_ahead_cannot_read_says_why_with_its_line(tail: str, tmp_path: Path) -> None:
    source = _source("firsthits_stepped")
    assert DO_TAIL in source
    kf = respelled(SET.root / "row_firsthits_warp", tmp_path, source.replace(DO_TAIL, tail))
    lifted = offline_template(kf).lifted
    assert "AHEAD" not in {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith("AHEAD: not applied: the `do` loop is not read as a counted `for`")
               and n.endswith("(line 20)") for n in lifted.notes), lifted.notes


@pytest.mark.parametrize(("old", "new", "why"), [
    ("      sum += catmull_rom<kKnots>(knots, frac1(x + phase));",
     "      sum += catmull_rom<kKnots>(knots, frac1(x + phase)) +\n"
     "             0.0f * catmull_rom<48>(knots, 0.5f);",
     "`% N`: the template parameter `N` is not a power of two in every instantiation (its "
     "instantiations bind it to 48, 64) (line 7)"),
    ("  const float p2 = knot[ring<N>(seg + 1)];",
     "  const int next = ring<N>(seg + 1);\n  const float p2 = knot[next];",
     "`ring` returns a remainder, but `ring<N>` is not the whole subscript of an array (its "
     "value may be negative where it is read) (line 19)"),
], ids=["not_a_power_of_two", "kept_in_a_local"])
def test_a_template_remainder_that_may_not_be_masked_says_why(
        tmp_path: Path, old: str, new: str, why: str) -> None:
    source = _source("crspline_tpl")
    assert old in source
    kf = respelled(SET.root / "crspline_rotmean", tmp_path, source.replace(old, new))
    lifted = offline_template(kf).lifted
    assert "INDEX_MASK" not in {p.name for p in lifted.params}, lifted.notes
    assert f"INDEX_MASK: not applied: {why}" in lifted.notes, lifted.notes


@pytest.mark.parametrize(("old", "new", "why"), [
    ("    x += (size_t)row * cols;\n",
     "    const float** at = &x;\n    *at += (size_t)row * cols;\n",
     "ROWS: not applied: `&x` takes the address of x, declared before the item: a row's value "
     "could outlive the row (line 16)"),
    ("  const int row = (threadIdx.x >> 5) + kWarps * blockIdx.x;\n",
     "  int last;\n  const int row = (threadIdx.x >> 5) + kWarps * blockIdx.x;\n",
     "ROWS: not applied: `last = c0` writes last, declared before the item, which has no "
     "value at its declaration to copy"),
], ids=["address_taken", "no_value"])
def test_a_row_state_that_cannot_be_set_back_keeps_rows_refused(
        tmp_path: Path, old: str, new: str, why: str) -> None:
    """A name declared before the item that each row cannot set back from a copy: its
    address taken after the item, or no value to copy (``last``, set in the chunks' loop)."""
    source = _source("firsthits_stepped")
    assert old in source
    source = source.replace(old, new)
    if "int last;" in new:
        source = source.replace("      c0 += 32;\n", "      last = c0;\n      c0 += 32;\n")
        source = source.replace("    if (lane == 0) count[row] = total;",
                                "    if (lane == 0) count[row] = total + 0 * last;")
    kf = respelled(SET.root / "row_firsthits_warp", tmp_path, source)
    lifted = offline_template(kf).lifted
    assert "ROWS" not in {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith(why) for n in lifted.notes), lifted.notes
