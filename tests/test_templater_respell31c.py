"""Round 31c (issue 28): six compute-bound corpus kernels, each written twice more by other
hands (a rule that matches only the corpus's spelling of a kernel is not stage 1):
gram_ata_ridge (a shared-memory tiled A^T A), verlet_orbit_tpl (a per-particle integrator,
a template instantiated by an extern "C" kernel), acklam_probit_f64 (branches and two Halley
steps in double, in helpers), crspline_rotmean (functors over a staged table, a grid-stride
loop), quintic_newton_f64 (a data-dependent Newton do-while in double) and upconv4x4_s2 (a
stride-2 transposed convolution picking its taps by parity). The respellings live in
tests/spellings_r31c/ (the kernel as written; the corpus folder's kernel.toml and
reference.py come with :func:`held_back_harness.respelled`): a constexpr tile with a
guarded-load helper and an early return, ``#ifndef`` tiles with an index macro, a ``while``
over the tiles and unsigned indices; plain C with the force in a helper writing through
references and a pointer to the record, float4 records through ``reinterpret_cast`` with a
helper returning ``float2`` and a ``while`` over the steps; namespaced constants with file
scope tables, a ``template <int M>`` Horner and a count-down ``while`` in a wrapped body, a
``size_t`` index with the Halley step a struct's member function and a Horner ``while``;
plain C helpers with a grid-stride ``for`` and an index macro, lambdas (one capturing the
staged knots by reference) in a ``while`` grid-stride loop staging with ``if (threadIdx.x <
64)``; a counted ``for`` with a ``break`` and the guess in a ternary, the step a helper
returning a struct by value with unsigned indices in a wrapped body; ``for`` loops with
``continue`` and index macros, a helper adding a channel's taps by reference with
``size_t`` plane offsets in a wrapped body.

What the respellings taught the templater:

- verlet_orbit_tpl_float4_while returns its force as ``make_float2(-r.x * inv3, ..)``:
  purity knew no vector constructor, so ``gravity`` was not shown pure, the items wrapped
  (no interleave) and FAST_MATH and UNROLL were lost. CUDA's ``make_<type><n>`` build a
  value from their arguments and nothing else, as a braced initializer does: they are now
  pure calls (purity.VECTOR_MAKERS): FAST_MATH and UNROLL, the items interleaved.
- quintic_newton_f64_helper_struct keeps its Newton step in ``newton_step(x, t)`` returning
  a struct, and acklam_probit_f64_struct_sizet its Halley step in a member function: DIV_RCP
  read only the divisions of the kernel's own body, so a division by a value each trip
  computes anew was missed in a helper the loop calls. DIV_RCP now also takes the double
  divisions of the helpers the kernel calls inside its loops (helper_scope's, as FAST_MATH
  and RCP read them) whose divisor reads the helper's own parameters or locals: DIV_RCP for
  both, and for the corpus acklam_probit_f64 too (its ``ack_halley``'s ``u / (1.0 + 0.5 * x
  * u)``; the inline spelling acklam_probit_f64_namespace_wrapped had it already).

- verlet_orbit_tpl_struct_record (a third spelling, beside the round's two) reads its record
  whole, ``Particle p = reinterpret_cast<const Particle*>(state)[i];``, and writes it so:
  STAGE read only a kernel pointer's elements ("`(state)` is not a record access"). A struct
  whose members all have the pointer's element type, unaligned, is R consecutive elements,
  so record_structs.py now reads such a read as ``Particle p{state[4 * i + 0], ..};`` and
  such a store as ``out[4 * i + c] = p.m;`` a member (the same bytes, the same program):
  STAGE, every knob of the corpus kernel (no corpus kernel's lift changed). Its host check
  then showed its items wrong at ITEMS_PER_THREAD = 2 (before the new pass too): the force
  helper, written into its calls, binds ``const Particle& wb_p = p[wb_it];`` and
  item_state.declarator_name read a reference's declarator as ``& wb_p``, no name, so the
  results ``ax``, ``ay`` it assigns from ``wb_p`` were one variable the items overwrote in
  turn. declarator_name now reads through ``&``: ``ax``, ``ay`` are the item's (bit for
  bit at the default and the mix; no corpus kernel's lift changed).

- verlet_orbit_tpl_ref_step (a fourth, beside the round's two) steps in ``kick_drift_kick(r,
  v, a, dt)``, which calls ``accel(r, a)`` as the kernel does once before its loop: the
  first ``accel`` was written into the kernel in one round, and in a later one the copy
  inside the written step was refused ("its body declares inv, a name the kernel declares
  too"), so the items wrapped and FAST_MATH and UNROLL were lost. A file-scope helper's
  local declared once in it is only ever that local (the kernel's names are not the
  helper's to read): where it is named like a local an earlier round's copy declared (no
  name of the kernel as written, none of the file), inline_bodies now writes it under a
  fresh name (``wb_inv``): every knob of the corpus kernel. (A clash with a name of the
  kernel as written is the same program renamed too, but stays refused: the staged walk's
  tests pin that refusal, another engineer's file this round.)

- gram_ata_ridge_tile_helper (a third, beside the round's two) loads each shared tile by
  ``load_tile(a, A, K, N, k0, ..)`` taking ``float (&t)[TS][TS]``: inline_bodies refused a
  parameter with an array declarator ("is not a named value or reference"). A reference
  to an array bound to an array's name is that array, as a scalar reference bound to a name
  is that variable: the helper is now written into its calls (an argument that is no name
  stays refused). It lifts TILE, not the corpus kernel's register tile (GAPS: regtile reads
  the two copies' ``r``, ``c`` as one local reassigned, and a tile load inside a block as
  no store of a shared tile: the other engineer's regtile modules this round).

- crspline_rotmean_method (a fourth, beside the round's two) keeps the spline in ``struct
  Spline { const float* k; __device__ float at(float t) const {..} };`` set by ``Spline sp;
  sp.k = knots;`` and called ``sp.at(..)``: functor_objects read an object's ``operator()``
  only, and only an object built by an initializer, so the per-element loop stayed behind a
  call and the grid-stride items, SPAN, UNROLL and INDEX_MASK were lost (BLOCK_THREADS
  only). A named member function called on a local object whose members are set once (by
  its initializer, or by plain assignments beside its declaration before any call) is the
  lambda functor_objects writes for ``operator()``: functor_objects now writes ``auto sp_at
  = [&](float t) -> float {..knots..};`` where the member is set and ``sp_at(..)`` at each
  call (refused, with the line, where a method writes a member, the object escapes, a
  member is set twice or after a call, a method is recursive, virtual or overloaded:
  tests/test_templater_functor_methods.py). Every knob of the corpus kernel (its
  ``1.0f / 64`` is no FAST_DIV since session 32: the compiler folds a division of
  constants).

Lifted as the corpus kernel already (no change needed): both gram_ata_ridge spellings,
verlet_orbit_tpl_c_helper, acklam_probit_f64_namespace_wrapped, both crspline_rotmean
spellings (crspline_rotmean_lambda_while with ``BLOCK_THREADS >= 64`` for its staging
test), quintic_newton_f64_for_break, both upconv4x4_s2 spellings. Some lift more than the
corpus kernel (EXTRA): quintic_newton_f64_for_break's counted ``for`` has UNROLL.
(crspline_rotmean_lambda_while's ``1.0f / kSamples`` and crspline_rotmean_method's ``1.0f /
64`` gave FAST_DIV until session 32; a division of constants is folded at build time, so
it is no knob.)

What is left (asserted in CASES and GAPS): gram_ata_ridge_tile_helper lacks the register
tile (above). verlet_orbit_tpl_float4_while has no STAGE, and that is the same program
rather than a gap: its records are read and written as one float4 a
thread (``reinterpret_cast<const float4*>(state)[i]``), a warp's accesses already
coalesced, which is what STAGE's staging through shared memory buys the corpus kernel's
four scalar accesses (STAGE: "`(state)` is not a record access").

Host (g++): every respelling, lifted, bit for bit against itself as written at the default
and a mix (the all-ends configs too under WORKBENCH_FULL_MATRIX=1); the knobs that round
differently (DIV_RCP, FAST_MATH, FAST_DIV: APPROXIMATE) within the folder's tolerance.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import held_back_unseen20
import held_back_unseen21
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.cuda_source import parse_cuda
from workbench.core.kernel_folder import KernelFolder
from workbench.templater import lift_kernel, offline_template
from workbench.templater.inline_bodies import expand_bodies
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.purity import device_purity, pure_calls
from workbench.templater.record_structs import record_structs

SPELLINGS = Path(__file__).resolve().parent / "spellings_r31c"

_GRAM = frozenset({"BM", "BN", "BK", "TM", "TN", "VEC"})
_VERLET = frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "FAST_MATH", "STAGE",
                     "MIN_BLOCKS_PER_SM"})
_ACKLAM = frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "DIV_RCP",
                     "MIN_BLOCKS_PER_SM"})
_SPLINE = frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "INDEX_MASK", "SPAN",
                     "MIN_BLOCKS_PER_SM"})
_QUINTIC = frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", "DIV_RCP", "MIN_BLOCKS_PER_SM"})
_UPCONV = frozenset({"BLOCK_X", "BLOCK_Y", "Z_ITEMS", "TAP_UNROLL", "MIN_BLOCKS_PER_SM"})

#: spelling -> (its set, the corpus kernel, knobs its lift has, knobs of the corpus
#: kernel's lift it lacks (the semantics differ, or what is left), a mix checked bit for bit)
CASES: dict[str, tuple[ModuleType, str, frozenset[str], frozenset[str], dict[str, int]]] = {
    "gram_ata_ridge_constexpr_helper": (
        held_back_unseen20, "gram_ata_ridge", _GRAM, frozenset(),
        {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4, "VEC": 4}),
    "gram_ata_ridge_macro_while": (
        held_back_unseen20, "gram_ata_ridge", _GRAM, frozenset(),
        {"BM": 32, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "VEC": 4}),
    # beside the round's two: the tiles loaded by a helper taking an array by reference
    # (written into its calls now; the register tile reads no tile load in a block: GAPS)
    "gram_ata_ridge_tile_helper": (
        held_back_unseen20, "gram_ata_ridge", frozenset({"TILE", "MIN_BLOCKS_PER_SM"}), _GRAM,
        {"TILE": 8}),
    "verlet_orbit_tpl_c_helper": (
        held_back_unseen20, "verlet_orbit_tpl", _VERLET, frozenset(),
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "UNROLL": 8, "STAGE": 1}),
    # float4 records: the author's one 16-byte access a thread is what STAGE stages to
    "verlet_orbit_tpl_float4_while": (
        held_back_unseen20, "verlet_orbit_tpl", _VERLET - {"STAGE"}, frozenset({"STAGE"}),
        {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 4, "UNROLL": 2}),
    # beside the round's two: the record a struct read and written whole
    "verlet_orbit_tpl_struct_record": (
        held_back_unseen20, "verlet_orbit_tpl", _VERLET, frozenset(),
        {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "UNROLL": 4, "STAGE": 1}),
    # beside the round's two: a step helper calling the force helper, both by reference
    "verlet_orbit_tpl_ref_step": (
        held_back_unseen20, "verlet_orbit_tpl", _VERLET, frozenset(),
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 2, "STAGE": 1}),
    "acklam_probit_f64_namespace_wrapped": (
        held_back_unseen20, "acklam_probit_f64", _ACKLAM, frozenset(),
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 2}),
    "acklam_probit_f64_struct_sizet": (
        held_back_unseen20, "acklam_probit_f64", _ACKLAM, frozenset(),
        {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 2, "UNROLL": 1}),
    "crspline_rotmean_c_helpers": (
        held_back_unseen20, "crspline_rotmean", _SPLINE, frozenset(),
        {"BLOCK_THREADS": 64, "SPAN": 4, "ITEMS_PER_THREAD": 2, "UNROLL": 4, "INDEX_MASK": 1}),
    # beside the round's two: the spline a named method of a struct, its member assigned
    "crspline_rotmean_method": (
        held_back_unseen20, "crspline_rotmean", _SPLINE, frozenset(),
        {"BLOCK_THREADS": 64, "SPAN": 8, "ITEMS_PER_THREAD": 2, "UNROLL": 4,
         "INDEX_MASK": 1}),
    "crspline_rotmean_lambda_while": (
        held_back_unseen20, "crspline_rotmean", _SPLINE, frozenset(),
        {"BLOCK_THREADS": 128, "SPAN": 16, "ITEMS_PER_THREAD": 4, "UNROLL": 1,
         "INDEX_MASK": 1}),
    "quintic_newton_f64_for_break": (
        held_back_unseen21, "quintic_newton_f64", _QUINTIC | {"UNROLL"}, frozenset(),
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 2}),
    "quintic_newton_f64_helper_struct": (
        held_back_unseen21, "quintic_newton_f64", _QUINTIC, frozenset(),
        {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 2}),
    "upconv4x4_s2_for_continue": (
        held_back_unseen21, "upconv4x4_s2", _UPCONV, frozenset(),
        {"BLOCK_X": 8, "BLOCK_Y": 4, "Z_ITEMS": 2, "TAP_UNROLL": 1}),
    "upconv4x4_s2_helper_sizet": (
        held_back_unseen21, "upconv4x4_s2", _UPCONV, frozenset(),
        {"BLOCK_X": 32, "BLOCK_Y": 2, "Z_ITEMS": 4, "TAP_UNROLL": 1}),
}

#: What a spelling's notes say where a missing knob stops (the parts of one note, in order:
#: which of the two copies' locals regtile names first follows a set's order).
GAPS: dict[str, tuple[str, ...]] = {
    "gram_ata_ridge_tile_helper": ("REGISTER_TILE: not applied: `",
                                   "` depends on the thread index and is reassigned (line 13)"),
}

#: Knobs whose value 1 rounds differently from the kernel as written (a reciprocal multiply,
#: a hardware approximation): checked within the folder's tolerance, at the mix with each
#: one the spelling lifts set.
APPROXIMATE = ("DIV_RCP", "FAST_MATH", "FAST_DIV")

#: The host forms of the intrinsics APPROXIMATE's knobs name (the division itself: the GPU's
#: gate checks the tolerance), and warpSize.
HOST_EXTRAS = "#define __fdividef(a, b) ((a) / (b))\nstatic const int warpSize = 32;\n"



def _folder(spelling: str, root: Path) -> KernelFolder:
    held, corpus = CASES[spelling][:2]
    return respelled(held.SET.root / corpus, root, (SPELLINGS / f"{spelling}.cu").read_text())


def _host(held: ModuleType) -> Any:
    def host(source: str) -> str:
        return held.SET.host_source(HOST_EXTRAS + source)
    return host


@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_lifts_the_corpus_kernels_knobs(spelling: str, tmp_path: Path) -> None:
    held, corpus, knobs, missing, _mix = CASES[spelling]
    lifted = offline_template(_folder(spelling, tmp_path)).lifted
    names = {p.name for p in lifted.params}
    own = {p.name for p in offline_template(held.SET.folder(corpus)).lifted.params}
    assert knobs == names, (names, lifted.notes)
    assert not missing & names and missing <= own and own - missing <= names, \
        (names, own, lifted.notes)
    if spelling in GAPS:
        first, *rest = GAPS[spelling]
        assert any(n.startswith(first) and all(part in n for part in rest)
                   for n in lifted.notes), lifted.notes


def test_the_float4_records_are_no_records_to_stage(tmp_path: Path) -> None:
    lifted = offline_template(_folder("verlet_orbit_tpl_float4_while", tmp_path)).lifted
    assert "STAGE: not applied: state (line 19): `(state)` is not a record access" in \
        lifted.notes, lifted.notes
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
    assert not set(mix) & set(APPROXIMATE)
    configs = default_and_mix(template, kf, mix)
    exact = [c for c in configs if not any(c.get(k) for k in APPROXIMATE)]
    assert same_as_written(kf, template, exact, _host(held), tmp_path / "run", host_flags) == \
        len(exact)
    approximate = {k: 1 for k in APPROXIMATE if k in template.param_names}
    if approximate:
        assert same_as_written(kf, template, [{**configs[1], **approximate}], _host(held),
                               tmp_path / "approx", host_flags, within_tolerance=True) == 1


def _lift(source: str, grid: list[str], block: list[str], scalars: dict[str, str]
          ) -> tuple[set[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="k", grid=grid, block=block, scalars=scalars)
    return {p.name for p in lifted.params}, lifted.notes, lifted.source


#: A value helper returning a vector (verlet_orbit_tpl_float4_while's ``gravity``).
MAKER = """__device__ float2 twice(float2 r) { return make_float2(2.0f * r.x, r.y + 1.0f); }
__device__ float2 peek(const float* p) { return make_float2(p[0], 1.0f); }

extern "C" __global__ void k(float* out, const float* x, int n) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float2 v = make_float2(x[i], 0.0f);
  for (int s = 0; s < 8; ++s) v = twice(v);
  out[i] = v.x + v.y;
}
"""


def test_a_vector_constructor_is_a_pure_call() -> None:
    source = parse_cuda(MAKER, "k.cu")
    verdict = device_purity(source)
    assert verdict["twice"] is None, verdict
    assert verdict["peek"] is not None  # a memory read stays impure whatever it builds
    assert "make_float2" in pure_calls(source) and "make_uchar4" in pure_calls(source)
    names, notes, _source = _lift(MAKER, ["ceil_div(n, 128)"], ["128"], {"n": "n"})
    assert {"ITEMS_PER_THREAD", "UNROLL"} <= names, notes
    assert any(n.startswith("ITEMS_PER_THREAD: applied:") and "interleave the items" in n
               for n in notes), notes


#: A Newton step in a helper the loop calls (quintic_newton_f64_helper_struct's shape).
STEP = """__device__ double step(double x, double t) {
  const double df = 5.0 * x * x * x * x + 1.0;
  return x - (x * x * x * x * x + x - t) / df;
}

extern "C" __global__ void k(float* y, const float* a, int n) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  const double t = a[i];
  double x = t;
  for (int it = 0; it < 6; ++it) x = step(x, t);
  y[i] = (float)x;
}
"""


@pytest.mark.parametrize(("old", "new", "lifted"), [
    ("", "", True),
    # called once, outside every loop: no value the loop recomputes
    ("for (int it = 0; it < 6; ++it) x = step(x, t);", "x = step(x, t);", False),
    # the divisor a file constant: no value a call computes anew
    ("/ df;", "/ 3.0;", False),
    # a store of double: the quotient's ulp of double is no longer far below the store's
    ("float* y", "double* y", False),
], ids=["helper_in_loop", "outside_loop", "constant", "double_store"])
def test_a_division_in_a_helper_the_loop_calls_is_div_rcp(old: str, new: str,
                                                           lifted: bool) -> None:
    source = STEP.replace(old, new)
    names, notes, text = _lift(source, ["ceil_div(n, 128)"], ["128"], {"n": "n"})
    assert ("DIV_RCP" in names) == lifted, notes
    if lifted:
        assert "return x - WB_DRCP((x * x * x * x * x + x - t), df);" in text, text
        assert any(n.startswith("DIV_RCP: applied:") and "`step` (line 3)" in n
                   for n in notes), notes


#: A record read and written whole through a struct (verlet_orbit_tpl_struct_record's shape).
RECORD = """struct Rec { float a, b; float c; };

extern "C" __global__ void k(float* out, const float* x, int n) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  Rec r = reinterpret_cast<const Rec*>(x)[i];
  r.a += r.b * r.c;
  reinterpret_cast<Rec*>(out)[i] = r;
}
"""


def test_a_record_struct_read_whole_is_its_elements() -> None:
    got = record_structs(InlinedSource(RECORD, "k.cu"), "k").text
    assert "  Rec r{x[3 * i + 0], x[3 * i + 1], x[3 * i + 2]};\n" in got, got
    assert "  out[3 * i + 0] = r.a; out[3 * i + 1] = r.b; out[3 * i + 2] = r.c;\n" in got, got
    assert got.count("\n") == RECORD.count("\n")
    c_cast = RECORD.replace("reinterpret_cast<const Rec*>(x)[i]", "((const Rec*)x)[i + 1]")
    assert "Rec r{x[3 * (i + 1) + 0], x[3 * (i + 1) + 1], x[3 * (i + 1) + 2]};" in \
        record_structs(InlinedSource(c_cast, "k.cu"), "k").text
    names, notes, _text = _lift(RECORD, ["ceil_div(n, 128)"], ["128"], {"n": "n"})
    assert "STAGE" in names, notes


@pytest.mark.parametrize(("old", "new", "kept"), [
    ("struct Rec { float a, b; float c; };", "struct __align__(16) Rec { float a, b, c; };",
     "<const Rec*>(x)[i];"),  # one vector access as written
    ("struct Rec { float a, b; float c; };", "struct Rec { float a, b; int c; };",
     "<const Rec*>(x)[i];"),  # mixed types
    ("struct Rec { float a, b; float c; };", "struct Rec { float a, b, c[1]; };",
     "<const Rec*>(x)[i];"),  # an array member
    ("const float* x, int n", "const double* x, int n", "<const Rec*>(x)[i];"),  # a double
    ("(x)[i]", "(x)[i++]", "<const Rec*>(x)[i++];"),  # an index that steps
    ("(out)[i] = r;", "(out)[i] = r, n = 0;", "(out)[i] = r, n = 0;"),  # no store alone
], ids=["aligned", "mixed", "array", "element", "steps", "comma"])
def test_a_struct_that_is_no_record_of_the_pointer_stays_as_written(old: str, new: str,
                                                                       kept: str) -> None:
    source = RECORD.replace(old, new)
    assert source != RECORD
    got = record_structs(InlinedSource(source, "k.cu"), "k").text
    assert kept in got, got


#: verlet_orbit_tpl_struct_record's record read as its elements (record_structs' reading):
#: its force helper, written into its calls, binds ``const Particle& wb_p = p;`` and assigns
#: ``ax``, ``ay`` from ``wb_p``; the items' analysis read no name in a reference's
#: declarator, so ``ax``, ``ay`` were one variable the items overwrote in turn.
BY_REFERENCE = ("Particle p = reinterpret_cast<const Particle*>(state)[i];",
                "Particle p{state[4 * i + 0], state[4 * i + 1], state[4 * i + 2], "
                "state[4 * i + 3]};")


@pytest.mark.parametrize("read", ["as_written", "as_elements"])
def test_a_local_assigned_through_a_reference_to_an_item_is_the_items(read: str) -> None:
    source = (SPELLINGS / "verlet_orbit_tpl_struct_record.cu").read_text()
    assert BY_REFERENCE[0] in source
    if read == "as_elements":
        source = source.replace(*BY_REFERENCE)
    lifted = lift_kernel(source, entry="verlet_orbit_tpl", grid=["ceil_div(n, 128)"],
                         block=["128"], scalars={"n": "n"})
    items = next(n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: applied:"))
    assert "item-dependent local(s) (ax, ay, i, p)" in items, items
    assert "float ax[ITEMS_PER_THREAD]" in lifted.source, lifted.source


#: Two helpers by reference, one calling the other (verlet_orbit_tpl_ref_step's shape): the
#: inner one written into the kernel first, then again inside the outer one's copy.
NESTED_REF = """__device__ void half(float x, float& h) {
  const float t = 0.5f * x;
  h = t;
}
__device__ void step(float& x, float& h) {
  x += h;
  half(x, h);
}

extern "C" __global__ void k(float* out, const float* in, int n) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float x = in[i], h;
  half(x, h);
  for (int s = 0; s < 8; ++s) step(x, h);
  out[i] = x + h;
}
"""


def test_a_helpers_local_named_like_an_earlier_copys_is_written_fresh() -> None:
    got = expand_bodies(InlinedSource(NESTED_REF, "k.cu"), "k")
    assert "{ float wb_x = x; const float t = 0.5f * wb_x; h = t; }" in got.text, got.text
    assert "{ float wb_x_2 = x; const float wb_t = 0.5f * wb_x_2; h = wb_t; }" in got.text, \
        got.text
    assert all(f.applied for f in got.findings), got.findings
    # a file-scope t: a mention of t in the helper could be it; refused as before
    shadowed = "float t;\n" + NESTED_REF
    refused = expand_bodies(InlinedSource(shadowed, "k.cu"), "k")
    assert any("its body declares t, a name the kernel declares too" in f.reason
               for f in refused.findings), refused.findings


#: A tile loaded by a helper taking the shared array by reference (gram_ata_ridge_tile_helper).
TILE_REF = """__device__ void load(float (&t)[8][8], const float* x, int n, int base) {
  const int c = base + threadIdx.x;
  t[threadIdx.y][threadIdx.x] = c < n ? x[c] : 0.0f;
}

extern "C" __global__ void k(float* out, const float* x, int n) {
  __shared__ float a[8][8];
  load(a, x, n, blockIdx.x * 8);
  __syncthreads();
  out[blockIdx.x * 8 + threadIdx.x] = a[threadIdx.x][threadIdx.y];
}
"""


def test_an_array_passed_by_reference_is_the_callers_array() -> None:
    got = expand_bodies(InlinedSource(TILE_REF, "k.cu"), "k")
    assert "a[threadIdx.y][threadIdx.x] = c < wb_n ? wb_x[c] : 0.0f; }" in got.text, got.text
    assert [f.applied for f in got.findings] == [True], got.findings
    # no array's name at the call: the reference cannot be read as a name
    other = TILE_REF.replace("__shared__ float a[8][8];", "__shared__ float a[2][8][8];")
    other = other.replace("load(a,", "load(a[1],").replace("a[threadIdx.x][threadIdx.y]",
                                                          "a[1][threadIdx.x][threadIdx.y]")
    refused = expand_bodies(InlinedSource(other, "k.cu"), "k")
    assert "load(a[1]," in refused.text
    assert any("passes `a[1]` for the array reference `t`" in f.reason
               for f in refused.findings), refused.findings
