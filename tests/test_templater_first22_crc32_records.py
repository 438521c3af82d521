"""First contact with held-back set 22's CRC-32 of records (session 29):
benchmarks/corpus_compute_unseen22/crc32_records computes zlib's CRC-32 of 64-byte records a
byte at a time, each step a lookup into a 256-entry ``__constant__`` table at an index made
from the running CRC and the record's byte: data the lanes of a warp hold apart, so constant
memory replays nearly every lookup once per distinct address. The lift was BLOCK_THREADS,
ITEMS_PER_THREAD (one item after another) and MIN_BLOCKS_PER_SM, 1.00x against the expert's
13.8x (TABLE=1, ITEMS=4, VEC=4). Now:

- CONST_VIA (:mod:`.const_via`): the lane analysis cannot tell whether the lanes agree (the
  index depends on a value read from memory); the copy holds the same bits, so the knob is
  offered (default: constant memory, as written) and the search decides. Its bytes are added
  to another transform's shared-memory limit (STAGE's records).
- ITEMS_PER_THREAD with independent state (:mod:`.ilp`), the records' CRC chains interleaved:
  the C89 locals read as declared where set (``const unsigned *p, *end;``: const of the
  target, :mod:`.late_init`; ``int b; .. for (b = 0; ..)``: :mod:`.header_counters`), the
  walk ``while (p < end) { w = *p++; .. }`` read as ``for (int wb_k = 0; wb_k < (long)
  (REC_WORDS); ++wb_k) { w = p[wb_k]; .. }`` (:mod:`.loop_forms_postinc`), and a lookup into a
  ``__constant__`` table taken for an operand, not a walk (:mod:`.table_lookup`). With it
  UNROLL and STAGE (the records through shared memory, coalesced: the expert's uint4 loads'
  gain).

Spellings: the folder (C89: declarations at the top, a pointer walked to an end pointer, the
bytes of a word shifted out); a second hand (a byte pointer by ``reinterpret_cast`` and
``auto``, the table step a function-like macro, ``~0u``, the work under ``if (i < nrec)``);
a third (C89, ``&rec[..]``, ``while (stop != q)``, ``unsigned w = *q++;`` declared in the
walk, two bytes a pass). Near misses: the step ``*p++`` under an ``if`` (the walk stays a
``while``: ITEMS_PER_THREAD with independent state refused, naming the line); the table's
address taken into a local pointer (CONST_VIA refused with the line); the table read at the
block's index only (warp-uniform: no knob). Host (g++, the cooperative block: shared memory
and the barriers as on the GPU): the three spellings at the default, mixes of every knob
(the shared copy with four and eight interleaved records, staged records, unroll factors, a
register cap, partial blocks) and the all-ends configs, bit for bit against the kernel as
written; held-back set 2's poly_root (the other kernel the CONST_VIA offer reaches) too.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen22
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.header_counters import header_counters
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.late_init import late_inits
from workbench.templater.loop_forms_postinc import postinc_walks
from workbench.templater.point_split import split_points
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen22.SET.root / "crc32_records"
_WRITTEN = (FOLDER / "crc32_records.cu").read_text()
#: The folder's table, as written (the spellings below share it).
TABLE = _WRITTEN[_WRITTEN.index("__constant__ unsigned"):_WRITTEN.index("};") + 2]

#: Mixes of every knob (1001 records): the expert's pick in the lift's knobs (64 threads of
#: four interleaved records, the table in shared memory: four blocks, the last partly); 32 of
#: eight, staged records, unrolled by eight (the all-ends: the whole loop); 160 of two, staged, unrolled by
#: two, two blocks an SM; constant memory, 224 of two staged, unrolled by four.
MIXES = ({"CONST_VIA": 1, "BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4},
         {"CONST_VIA": 1, "STAGE": 1, "BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 8,
          "UNROLL": 8},
         {"CONST_VIA": 1, "STAGE": 1, "BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 2,
          "UNROLL": 2, "MIN_BLOCKS_PER_SM": 2},
         {"CONST_VIA": 0, "STAGE": 1, "BLOCK_THREADS": 224, "ITEMS_PER_THREAD": 2,
          "UNROLL": 4})


#: The same kernel by another hand: a byte pointer over the record, the table step a
#: function-like macro, ``auto``, ``~0u``, the work under ``if``.
SECOND = """// CRC-32 (zlib's) of 64-byte records, a byte pointer walked over each record, the table
// step a macro; one record a thread.
#define RECORD_BYTES 64
#define CRC_STEP(c, byte) (crc_table[((c) ^ (byte)) & 0xffu] ^ ((c) >> 8))

""" + TABLE + """

extern "C" __global__ void crc32_records(unsigned int* __restrict__ crc,
                                         const unsigned int* __restrict__ rec, int nrec) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nrec) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(rec) + (size_t)i * RECORD_BYTES;
    unsigned int c = ~0u;
    for (int t = 0; t < RECORD_BYTES; ++t) {
      c = CRC_STEP(c, bytes[t]);
    }
    crc[i] = ~c;
  }
}
"""

#: A third hand, C89: ``&rec[..]``, a walk to a stop pointer compared ``stop != q``, the word
#: declared in the walk, two bytes a pass of the byte loop.
THIRD = """/* CRC-32 of 16-word records, C89: every local at the top, the record walked by a pointer
   to a stop pointer, two bytes a pass of the byte loop. */
#define NW 16

""" + TABLE + """

extern "C" __global__ void crc32_records(unsigned int *crc, const unsigned int *rec, int nrec)
{
    int i, b;
    unsigned int c;
    const unsigned int *q, *stop;

    i = threadIdx.x + blockDim.x * blockIdx.x;
    if (i < nrec) {
        q = &rec[(size_t)i * NW];
        stop = q + NW;
        c = ~0u;
        while (stop != q) {
            unsigned int w = *q++;
            for (b = 0; b < 2; b++) {
                c = crc_table[(c ^ w) & 0xffu] ^ (c >> 8);
                w >>= 8;
                c = crc_table[(c ^ w) & 0xffu] ^ (c >> 8);
                w >>= 8;
            }
        }
        crc[i] = ~c;
    }
}
"""

#: Near miss: the walk's step under a branch (``if (p < end) w = *p++;``: it may run zero
#: times a trip, so the walk is no counted loop and stays a ``while`` on the item's pointer).
BRANCH_STEP = _WRITTEN.replace("        w = *p++;\n", "        if (p < end) w = *p++;\n")

#: Near miss: the table's address in a local pointer, read through it (a use of the array
#: that is not one element: the copy would need the pointer redirected).
THROUGH_POINTER = _WRITTEN.replace(
    "const unsigned int *p, *end;", "const unsigned int *p, *end, *t;").replace(
    "    c = 0xffffffffu;\n    while", "    c = 0xffffffffu;\n    t = crc_table;\n    while"
).replace("c = crc_table[k]", "c = t[k]")

#: Near miss: the table read at the block's index only (a per-block seed: every lane of a
#: warp reads one entry, constant memory broadcasts it): no knob.
UNIFORM = _WRITTEN.replace("c = crc_table[k] ^ (c >> 8);", "c = (c >> 8) ^ (unsigned)k;").replace(
    "c = 0xffffffffu;", "c = crc_table[blockIdx.x & 0xffu];")


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="crc32_records", grid=["ceil_div(nrec, 128)"],
                         block=["128"], scalars={"nrec": "nrec"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def _const_note(notes: tuple[str, ...]) -> str:
    return next(n for n in notes if n.startswith("CONST_VIA"))


def test_the_folder_lift_offers_the_table_copy_and_interleaved_records() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    spec = {p.name: dict(p.spec) for p in lifted.params}
    assert list(spec) == ["BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "STAGE", "CONST_VIA",
                          "MIN_BLOCKS_PER_SM"], lifted.notes
    assert spec["CONST_VIA"]["values"] == [0, 1] and spec["CONST_VIA"]["default"] == 0
    note = _const_note(lifted.notes)
    assert note.startswith("CONST_VIA: applied: cannot tell whether the lanes of a warp read "
                           "crc_table at one index: `crc_table[k]` depends on `k` <- `c` <- "
                           "a value read from memory"), note
    assert note.endswith("(line 75)"), note
    assert "ITEMS_PER_THREAD: applied: 5 item-dependent local(s) (c, i, k, p, w) get one copy " \
        "per item; 2 loop(s) of item-independent length interleave the items (line 65)" \
        in lifted.notes
    body = lifted.source[lifted.source.index('extern "C"'):]
    # the copy, then the one barrier of its own, before the items; every read through it
    assert body.index("__shared__ unsigned int wb_crc_table_s[256];") < \
        body.index("__syncthreads();  // every thread is here") < body.index("wb_live[")
    assert "c[wb_it] = wb_crc_table_via[k[wb_it]] ^ (c[wb_it] >> 8);" in body
    # the walk read as its index loop, the pointer at its base
    assert "for (int wb_k = 0; wb_k < (long)(REC_WORDS); ++wb_k) {" in body
    assert "w[wb_it] = p[wb_it][wb_k];" in body
    # the copy and the staged records share the block's static shared memory
    assert "CONST_VIA == 0 or STAGE == 0 or ((BLOCK_THREADS * ITEMS_PER_THREAD) * (68)) + " \
        "1024 <= 49152" in lifted.constraints


def test_the_second_spelling_lifts_the_copy_and_the_items() -> None:
    names, notes, source = _lift(SECOND)
    assert {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "CONST_VIA"} <= set(names), notes
    assert _const_note(notes).startswith("CONST_VIA: applied: cannot tell whether the lanes "
                                         "of a warp read crc_table")
    assert any(n.startswith("ITEMS_PER_THREAD: applied: 3 item-dependent local(s) (bytes, c, "
                            "i) get one copy per item") for n in notes), notes
    assert "wb_crc_table_via[((c[wb_it]) ^ (bytes[wb_it][t])) & 0xffu]" in source, source


def test_the_third_spelling_lifts_the_same_knobs() -> None:
    names, notes, source = _lift(THIRD)
    assert names == ["BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "STAGE", "CONST_VIA",
                     "MIN_BLOCKS_PER_SM"], notes
    assert "for (int wb_k = 0; wb_k < (long)(NW); ++wb_k) {" in source
    assert "w[wb_it] = q[wb_it][wb_k];" in source


def test_a_step_under_a_branch_keeps_the_walk_and_refuses_shared_loops() -> None:
    names, notes, source = _lift(BRANCH_STEP)
    assert "UNROLL" not in names and "CONST_VIA" in names, notes
    assert "while (p < end) {" in source
    assert "ITEMS_PER_THREAD: not applied: items with independent state: `w = *p++` gives the " \
        "item's value to a name declared outside the item's statements (a parameter, or a " \
        "local before the index): the thread's items would share it (line 72)" in notes, notes


def test_a_table_read_through_a_pointer_is_refused_with_the_line() -> None:
    names, notes, _source = _lift(THROUGH_POINTER)
    assert "CONST_VIA" not in names
    note = _const_note(notes)
    assert note.startswith("CONST_VIA: not applied: crc_table: `crc_table` uses crc_table "
                           "other than as one element"), note
    assert note.endswith("(line 71)"), note


def test_a_warp_uniform_table_read_keeps_constant_memory() -> None:
    names, notes, _source = _lift(UNIFORM)
    assert "CONST_VIA" not in names
    assert _const_note(notes).startswith("CONST_VIA: not applied: crc_table is read at a "
                                         "warp-uniform index everywhere")


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [{k: v for k, v in mix.items()
                                            if k in template.param_names} for mix in MIXES])
    assert any(c.get("CONST_VIA") == 1 for c in configs)
    return same_as_written(kf, template, configs, held_back_unseen22.SET.host_source,
                           tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 6


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", ["second", "third"])
def test_the_other_spellings_compute_as_written(spelling: str, tmp_path: Path,
                                                host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", {"second": SECOND, "third": THIRD}[spelling])
    assert _same_outputs(kf, tmp_path, host_flags) >= 6


POLY_ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen2" / \
    "poly_root"


@needs_gxx
@pytest.mark.timeout(1200)
def test_a_coefficient_table_picked_by_a_loaded_selector_computes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """Held-back set 2's poly_root reads its ``__constant__`` coefficients at ``sel[i] *
    (DEG + 1)``, a selector read from memory: the other corpus kernel the offer reaches. Its
    lift gains CONST_VIA (the rest as before), bit for bit at the copy's configs."""
    kf = load_kernel_folder(POLY_ROOT)
    template = offline_template(kf).template
    assert "CONST_VIA" in template.param_names
    env = kf.env(kf.check_shape, "fp32")
    mixes = [{"CONST_VIA": 1}, {"CONST_VIA": 1, "ITEMS_PER_THREAD": 4}]
    configs = host_configs(template, env, [{k: v for k, v in m.items()
                                            if k in template.param_names} for m in mixes])
    assert same_as_written(kf, template, configs, lambda source: source, tmp_path,
                           host_flags) >= 4


# -- the pre-passes on their own ----------------------------------------------------------

_C89 = """extern "C" __global__ void k(float* y, const float* x, int n) {
  int j, b;
  float s;
  j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  s = 0.0f;
  for (b = 0; b < 4; b++) s += x[4 * j + b];
  for (b = 1; b < 3; ++b) s *= 0.5f;
  y[j] = s;
}
"""


def _passes(source: str) -> str:
    current = split_points(InlinedSource(source, "k.cu"), "k")
    return postinc_walks(header_counters(late_inits(current, "k"), "k"), "k").text


def test_a_counter_set_in_each_loop_header_is_each_loops_own() -> None:
    text = _passes(_C89)
    assert "for (int b = 0; b < 4; b++)" in text and "for (int b = 1; b < 3; ++b)" in text
    # every line in its place (point_split gave `int j, b;` a line a declarator)
    assert len(text.splitlines()) == len(_C89.splitlines()) + 1


@pytest.mark.parametrize("change", [
    # read after a loop: the value it leaves is used
    ("  y[j] = s;", "  y[j] = s + b;"),
    # nested loops sharing it: the inner loop stepped the outer's counter as written
    ("  for (b = 0; b < 4; b++) s += x[4 * j + b];",
     "  for (b = 0; b < 4; b++) for (b = 1; b < 2; b++) s += x[4 * j + b];"),
    # set by a plain statement first: not a loop's own
    ("  s = 0.0f;", "  s = 0.0f; b = 2;"),
])
def test_a_counter_whose_value_reaches_past_a_loop_stays(change: tuple[str, str]) -> None:
    text = _passes(_C89.replace(*change))
    assert "for (b = 0; " in text and "for (int b" not in text


_WALK = """extern "C" __global__ void k(unsigned* out, const unsigned* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned* p = in + 8 * i;
  const unsigned* end = p + 8;
  unsigned s = 0;
  while (p < end) {
    unsigned w = *p++;
    s = s * 31u + w;
  }
  out[i] = s;
}
"""


def test_a_post_increment_walk_is_its_index_loop() -> None:
    text = _passes(_WALK)
    assert "for (int wb_k = 0; wb_k < (long)(8); ++wb_k) {" in text
    assert "unsigned w = p[wb_k];" in text and "const unsigned* end" not in text


@pytest.mark.parametrize("change, loop", [
    # the end pointer read elsewhere too: the bound stays its difference
    (("  out[i] = s;", "  out[i] = s + (unsigned)(end - in);"),
     "for (int wb_k = 0; wb_k < (end) - p; ++wb_k) {"),
    # the pointer read after the walk: the value it leaves is used
    (("  out[i] = s;", "  out[i] = s + *p;"), "while (p < end) {"),
    # a second read of the pointer in the body
    (("    s = s * 31u + w;", "    s = s * 31u + w + *p;"), "while (p < end) {"),
    # the step skipped by a continue of the walk
    (("    s = s * 31u + w;", "    if (w == 0u) continue;\n    s = s * 31u + w;"),
     "while (p < end) {"),
    # the step under a condition
    (("    unsigned w = *p++;", "    unsigned w = s > 9u ? *p++ : 0u;"), "while (p < end) {"),
])
def test_a_walk_the_index_loop_would_change_stays(change: tuple[str, str], loop: str) -> None:
    assert loop in _passes(_WALK.replace(*change))
