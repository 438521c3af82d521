"""First contact with held-back set 22's CRC-32 of records (session 29):
benchmarks/corpus_compute_unseen22/crc32_records computes zlib's CRC-32 of 64-byte records a
byte at a time, each step a lookup into a 256-entry ``__constant__`` table at an index made
from the running CRC and the record's byte: data the lanes of a warp hold apart, so constant
memory replays nearly every lookup once per distinct address. The lane analysis cannot tell
that (the index depends on a value read from memory) and CONST_VIA refused, leaving the lift
at 1.00x against the expert's 13.8x (TABLE=1, its shared copy, carries most of it). The copy
holds the same bits, so where the analysis cannot tell whether the lanes agree the knob is
now offered (default: constant memory, as written) and the search decides.

Spellings: the folder (C89: declarations at the top, a pointer walked to an end pointer, the
bytes of a word shifted out); a second hand (a byte pointer by ``reinterpret_cast`` and
``auto``, the table step a function-like macro, ``~0u``, the work under ``if (i < nrec)``).
Near misses: the table's address taken into a local pointer (a use that is not one element:
refused, the note naming the line); the table read at the block's index only (warp-uniform:
no knob, constant memory broadcasts). Host (g++, the cooperative block: shared memory and the
barrier as on the GPU): both spellings at the default, the shared copy with the items and
block ends and a register cap, and the all-ends configs, bit for bit against the kernel as
written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import held_back_unseen22
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import host_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen22.SET.root / "crc32_records"
_WRITTEN = (FOLDER / "crc32_records.cu").read_text()
#: The folder's table, as written (the spellings below share it).
TABLE = _WRITTEN[_WRITTEN.index("__constant__ unsigned"):_WRITTEN.index("};") + 2]

#: The shared copy at the block's ends, items and a register cap (1001 records: 32 threads
#: of eight records, four blocks, the last partly; 1024 threads of two, one block, half empty).
MIXES = ({"CONST_VIA": 1},
         {"CONST_VIA": 1, "BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 8},
         {"CONST_VIA": 1, "BLOCK_THREADS": 1024, "ITEMS_PER_THREAD": 2,
          "MIN_BLOCKS_PER_SM": 2},
         {"CONST_VIA": 0, "BLOCK_THREADS": 224, "ITEMS_PER_THREAD": 4})

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None,
                               reason="needs g++ for the host simulation")

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


def test_the_folder_lift_offers_the_table_copy() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    spec = {p.name: dict(p.spec) for p in lifted.params}
    assert spec["CONST_VIA"]["values"] == [0, 1] and spec["CONST_VIA"]["default"] == 0
    note = _const_note(lifted.notes)
    assert note.startswith("CONST_VIA: applied: cannot tell whether the lanes of a warp read "
                           "crc_table at one index: `crc_table[k]` depends on `k` <- `c` <- "
                           "a value read from memory"), note
    assert note.endswith("(line 75)"), note
    body = lifted.source[lifted.source.index('extern "C"'):]
    # the copy, then the one barrier, before the first item's guard; every read through it
    assert body.index("__shared__ unsigned int wb_crc_table_s[256];") < \
        body.index("__syncthreads();") < body.index("continue;")
    assert body.count("__syncthreads();") == 1
    assert "c = wb_crc_table_via[k] ^ (c >> 8);" in body


def test_the_second_spelling_offers_it_too() -> None:
    names, notes, source = _lift(SECOND)
    assert {"BLOCK_THREADS", "ITEMS_PER_THREAD", "CONST_VIA"} <= set(names), notes
    assert _const_note(notes).startswith("CONST_VIA: applied: cannot tell whether the lanes "
                                         "of a warp read crc_table")
    assert "c = (wb_crc_table_via[((c) ^ (bytes[t])) & 0xffu] ^ ((c) >> 8));" in source


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
def test_the_second_spelling_computes_as_written(tmp_path: Path,
                                                 host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SECOND)
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
