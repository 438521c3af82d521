"""Session 32 (tiles): held-back unseen24's floyd_block_phase, a blocked Floyd-Warshall
phase a CTA per 32 x 32 data tile, lifted by the CTA-per-data-tile family
(:mod:`workbench.templater.tile_batch`) once it reads what the kernel's rows carry
(:mod:`workbench.templater.tile_batch_rows`):

- its whole-tile early exit ``if (blockIdx.x == kb || blockIdx.y == kb) { copy; return; }``
  before the first barrier (the test reads no thread's place: every thread of a tile takes
  it or none does): with rows a thread the ``return`` leaves the row (``continue``, the copy
  run for every row the thread owns) and the later phases' rows test it again; in one pass
  a flag guards what follows. Before, the family refused any ``return`` (TX: "a thread
  that leaves would skip the tiles its CTA runs after this one");
- ``cur``, the min-plus value a row keeps across the barrier: one register a row,
  ``cur[RPT]`` (before, RPT was refused: "lives across a barrier").

And it no longer lifts TILE: the block's 32 is also the pivot tile's (``kBase = kb *
Tile::kSide``: the argument kb counts tiles of it), so TILE = 16 computed another phase
(host: d_out differed at TILE 16 and 8). A tile size that multiplies a scalar argument the
kernel also compares with a block index (``blockIdx.x == kb``: it counts tiles as the grid
does) is now part of what the kernel computes (:func:`.smem_tiles._counts_tiles`), the
block kept.

Lifted: TX, TY (32 x 32 tiles a CTA across and down), RPT (rows a thread, the block's
height apart: the expert's TM over BY), CPT (columns a thread, the block's width apart: its
TN over BX; lifted where a phase's loop runs with the rows inside it, the min-plus over k:
each k step reads a row's and a column's pivot elements once for the RPT x CPT outputs, as
the expert's register tile does), PAD, MIN_BLOCKS_PER_SM.

depthwise_conv1d_k9, a 1-D apron (``win[kBlock + 2 * kHalo]`` staged by a cooperative loop,
``blockIdx.y`` the channel, one output a thread): the 2-D apron's outputs a thread read in
one dimension (:mod:`workbench.templater.apron_line`): BLOCK_THREADS, OUT_X (outputs a
thread, the block apart, as the 2-D apron's OUT_X; the line, its load and the grid
follow), PLANES (channels a block along threadIdx.y, each its own line; a plane past the
written grid's C loads and computes nothing: the expert's CH), MIN_BLOCKS_PER_SM. Before:
BLOCK_THREADS, MIN_BLOCKS_PER_SM (PLANES_PER_THREAD and ITEMS_PER_THREAD refused). The
expert's VEC (float4 staging) has no counterpart; its OPT outputs are consecutive and
slide a register window, the lift's are the block apart and read the line (the same
values).

Respellings (tests/spellings_s32_tile/), floyd: macros with a guarded-load helper, ``size_t`` row
offsets and a row pointer of the output, ``min()``; namespaced constants, unsigned
indices, the band test a named flag, the pivot slices stored by ``if``/``else``, the
relaxation an ``if``; the conv: ``#define`` sizes with the line ``NT + K - 1`` long, the
taps indexed in constant memory, ``size_t`` offsets, the work under an ``if``; a struct's
static members, the padded read a helper, ``fmaf``, unsigned positions. Each lifts its
kernel's knobs and computes as written (bit for bit).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen24
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s32_tile"
HELD = held_back_unseen24.SET
FLOYD = frozenset({"TX", "TY", "RPT", "CPT", "PAD", "MIN_BLOCKS_PER_SM"})
FLOYD_MIX = {"TX": 2, "TY": 2, "RPT": 8, "CPT": 4, "PAD": 1}



def _respelled(name: str, corpus: str, root: Path, edit: tuple[str, str] = ("", "")) -> KernelFolder:
    source = (SPELLINGS / f"{name}.cu").read_text() if name else \
        (HELD.root / corpus / "baseline.cu").read_text()
    return respelled(HELD.root / corpus, root, source.replace(*edit) if edit[0] else source)


def _knobs(kf: KernelFolder) -> tuple[set[str], tuple[str, ...]]:
    """The lifted knobs and the notes (nothing lifted: the error's findings)."""
    try:
        lifted = offline_template(kf).lifted
    except TemplateError as nothing:
        return set(), tuple(nothing.details["findings"])
    return {p.name for p in lifted.params}, lifted.notes


@pytest.mark.parametrize("name", ["", "floyd_block_phase_macro_helper",
                                  "floyd_block_phase_namespace_branches"])
def test_floyd_lifts_tiles_rows_and_padding(name: str, tmp_path: Path) -> None:
    names, notes = _knobs(_respelled(name, "floyd_block_phase", tmp_path))
    assert names == FLOYD, notes
    assert not any(n.startswith(("TILE", "RPT: not applied")) for n in notes), notes


def test_a_tile_size_an_argument_counts_is_kept(tmp_path: Path) -> None:
    """Where the family refuses (the grid's size read), the tied tile is read: its size
    scales the argument kb, so it is no block size."""
    kf = _respelled("", "floyd_block_phase", tmp_path,
                    ("j < n;", "j < n && blockIdx.x < gridDim.x;"))
    names, notes = _knobs(kf)
    assert "TILE" not in names, notes
    assert any(n.startswith("BLOCK_X: not applied: `kb * Tile::kSide`: the kernel's argument "
                            "counts tiles") for n in notes), notes


@pytest.mark.parametrize(("old", "new", "why"), [
    # a thread's place in the test: the tile's threads would not leave as one
    ("if (blockIdx.x == kb || blockIdx.y == kb) {", "if (blockIdx.x == kb || i >= n) {",
     "the exit's test `blockIdx.x == kb || i >= n` reads `i`, which reads `ti`, which reads `threadIdx.y`"),
    # a return after the first barrier
    ("    if (inside) d_out[i * n + j] = cur;\n}", "    if (!inside) return;\n    "
     "d_out[i * n + j] = cur;\n}", "a `return` that is no whole tile's exit"),
])
def test_an_exit_the_tiles_cannot_share_is_refused(old: str, new: str, why: str,
                                                   tmp_path: Path) -> None:
    names, notes = _knobs(_respelled("", "floyd_block_phase", tmp_path, (old, new)))
    assert "TX" not in names and "RPT" not in names, notes
    assert any(n.startswith("TX: not applied: ") and why in n for n in notes), notes


#: The min-plus values an array no row register holds: one pass, the exit a flag.
ONE_PASS = ("int cur = inside ? d_in[i * n + j] : Tile::kInf;\n"
            "    if (blockIdx.x == kb || blockIdx.y == kb) {\n"
            "        if (inside) d_out[i * n + j] = cur;",
            "int cur[2];\n    for (int s = 0; s < 2; ++s) cur[s] = inside ? d_in[i * n + j] : "
            "Tile::kInf;\n    if (blockIdx.x == kb || blockIdx.y == kb) {\n"
            "        if (inside) d_out[i * n + j] = cur[0];")


def _one_pass(root: Path) -> KernelFolder:
    source = (HELD.root / "floyd_block_phase" / "baseline.cu").read_text().replace(*ONE_PASS)
    source = source.replace("cur = via < cur ? via : cur;",
                            "for (int s = 0; s < 2; ++s) cur[s] = via < cur[s] ? via : cur[s];")
    source = source.replace("d_out[i * n + j] = cur;\n}", "d_out[i * n + j] = cur[1];\n}")
    return respelled(HELD.root / "floyd_block_phase", root, source)


def test_one_pass_keeps_the_exit_in_a_flag(tmp_path: Path) -> None:
    kf = _one_pass(tmp_path)
    lifted = offline_template(kf).lifted
    assert {p.name for p in lifted.params} == FLOYD - {"RPT", "CPT"}, lifted.notes
    assert any(n.startswith("RPT: not applied: `cur` lives across a barrier and is not a "
                            "scalar declared alone") for n in lifted.notes), lifted.notes
    assert "const bool wb_left = wb_bx == kb || wb_by == kb;" in lifted.source
    assert lifted.source.count("if (!wb_left) {") == 4, lifted.source


@needs_gxx
@pytest.mark.timeout(1200)
def test_floyd_computes_as_written(tmp_path: Path,
                                   host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = HELD.folder("floyd_block_phase")
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [FLOYD_MIX, {"TX": 4, "TY": 1, "RPT": 4},
                                           {"TY": 4, "RPT": 8, "MIN_BLOCKS_PER_SM": 2},
                                           {"TY": 2, "RPT": 2, "CPT": 4}])
    assert same_as_written(kf, template, configs, HELD.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", ["floyd_block_phase_macro_helper",
                                  "floyd_block_phase_namespace_branches", "one_pass"])
def test_the_floyd_respelling_computes_as_written(name: str, tmp_path: Path,
                                                  host_flags: tuple[str, ...]  # noqa: F811
                                                  ) -> None:
    kf = _one_pass(tmp_path / "folder") if name == "one_pass" else \
        _respelled(name, "floyd_block_phase", tmp_path / "folder")
    template = offline_template(kf).template
    mix = {"PAD": 1} if name == "one_pass" else \
        {"TX": 1, "TY": 2, "RPT": 4, "CPT": 2, "PAD": 1}
    configs = default_and_mix(template, kf, mix)
    assert same_as_written(kf, template, configs, HELD.host_source, tmp_path / "run",
                           host_flags) == len(configs)


CONV = frozenset({"BLOCK_THREADS", "OUT_X", "PLANES", "MIN_BLOCKS_PER_SM"})
CONV_SPELLINGS = ["", "depthwise_conv1d_k9_macros", "depthwise_conv1d_k9_struct_helper",
                  "depthwise_conv1d_k9_derived_macros"]


@pytest.mark.parametrize("name", CONV_SPELLINGS)
def test_the_conv_lifts_outputs_a_thread_over_its_line(name: str, tmp_path: Path) -> None:
    names, notes = _knobs(_respelled(name, "depthwise_conv1d_k9", tmp_path))
    assert names == CONV, notes
    assert any(n.startswith("OUT_X: applied: a 1-D apron line") for n in notes), notes


@pytest.mark.parametrize(("old", "new", "why"), [
    # the line read at another thread's point
    ("win[threadIdx.x + k]", "win[2 * threadIdx.x + k]",
     "depends on the thread or the block other than through the output point"),
    # the load's value reading the thread other than through its position
    ("? xc[t] : 0.0f;", "? xc[t] + threadIdx.x : 0.0f;",
     "in the line's load depends on the position or the block"),
    # the block size where the analysis does not know its meaning
    ("const int c = blockIdx.y;", "const int c = blockIdx.y + kBlock;",
     "(the block size) is used where the analysis does not know its meaning"),
])
def test_a_line_the_outputs_cannot_share_is_refused(old: str, new: str, why: str,
                                                     tmp_path: Path) -> None:
    names, notes = _knobs(_respelled("", "depthwise_conv1d_k9", tmp_path, (old, new)))
    assert "OUT_X" not in names, notes
    assert any(n.startswith("OUT_X: not applied: ") and why in n for n in notes), notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", CONV_SPELLINGS)
def test_the_conv_computes_as_written(name: str, tmp_path: Path,
                                      host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _respelled(name, "depthwise_conv1d_k9", tmp_path / "folder")
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    # C = 7 channels: PLANES 2 and 4 leave the last block's last planes past the grid
    mixes = [{"BLOCK_THREADS": 64, "OUT_X": 4, "PLANES": 2},
             {"BLOCK_THREADS": 128, "OUT_X": 2, "PLANES": 4}]
    configs = host_configs(template, env, mixes) if not name else \
        default_and_mix(template, kf, mixes[0])
    assert same_as_written(kf, template, configs, HELD.host_source, tmp_path / "run",
                           host_flags) == len(configs)
