"""A 2-D block spelled by two names (:mod:`workbench.templater.smem_rect`): set 24's
sgemv_t_tiled (``#define STRIP 32``, ``ROWS_PER_PASS 8``, ``X_TILE 256``; block (32, 8) and
grid ``ceil_div(N, 32)`` written as literals) lifted nothing: the square-tile rule wanted one
macro for the block. Its two names are read by their uses (``blockIdx.x * STRIP``, the row
loop from ``threadIdx.y`` stepping by ``ROWS_PER_PASS``, ``part[ROWS_PER_PASS][STRIP + 1]``
at ``[ty][tx]``) as BLOCK_X and BLOCK_Y; the staged x tile, filled at the flat thread index,
becomes a loop over the tile and its own knob TILE. Two respellings by other hands
(tests/spellings_s32_gemv/: constexpr sizes with blockDim indexing; guarded macros, unsigned
thread indices and the partial sums added by a helper) lift the same knobs, as does a third
whose x tile (twice the block's threads) is filled by a cooperative loop already and a
fourth of enum sizes whose partial sums a halving tree over ``threadIdx.y`` adds.

Host (g++): the corpus kernel at the default, three mixes and the all-ends configs; each
respelling at the default and a mix: within the folder's tolerance against the kernel as
written (the thread rows split the rows another way, so the sum's order changes).
Refusals (pure): a size also written as a literal, a sum over a name that adds no partial
sums, a fill whose index is read again, a warp shuffle.
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

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s32_gemv"
CORPUS = held_back_unseen24.SET.root / "sgemv_t_tiled"
KNOBS = frozenset({"BLOCK_X", "BLOCK_Y", "TILE", "MIN_BLOCKS_PER_SM"})

#: spelling -> a mix checked on the host
CASES = {
    "sgemv_t_tiled_constexpr_blockdim": {"BLOCK_X": 16, "BLOCK_Y": 16, "TILE": 512},
    "sgemv_t_tiled_helper_reduce": {"BLOCK_X": 64, "BLOCK_Y": 2, "TILE": 128},
    # a third: the x tile (512, twice the block's threads) filled by a cooperative loop
    "sgemv_t_tiled_coop_fill": {"BLOCK_X": 8, "BLOCK_Y": 8, "TILE": 1024},
    # a fourth: enum sizes, the partial sums halved by a tree over threadIdx.y
    "sgemv_t_tiled_enum_tree": {"BLOCK_X": 16, "BLOCK_Y": 32, "TILE": 128},
}

#: mixes of the corpus kernel: a strip wider than 76 columns (one block, idle threads), more
#: thread rows than a small tile's share, a tile smaller than the block's threads
MIXES = [{"BLOCK_X": 64, "BLOCK_Y": 4, "TILE": 128},
         {"BLOCK_X": 16, "BLOCK_Y": 16, "TILE": 512, "MIN_BLOCKS_PER_SM": 2},
         {"BLOCK_X": 8, "BLOCK_Y": 32, "TILE": 1024}]



def _folder(spelling: str, root: Path) -> KernelFolder:
    return respelled(CORPUS, root, (SPELLINGS / f"{spelling}.cu").read_text())


def test_the_corpus_kernel_lifts_its_strip_rows_and_tile() -> None:
    result = offline_template(held_back_unseen24.SET.folder("sgemv_t_tiled"))
    assert {p.name for p in result.lifted.params} == KNOBS, result.notes
    template = result.template
    assert [e.text for e in template.launch.grid] == ["ceil_div(N, BLOCK_X)"]
    assert [e.text for e in template.launch.block] == ["BLOCK_X", "BLOCK_Y"]
    assert "#define STRIP BLOCK_X" in template.source
    assert "#define ROWS_PER_PASS BLOCK_Y" in template.source
    assert "#define X_TILE TILE" in template.source
    assert "for (int wb_t = t; wb_t < X_TILE; wb_t += blockDim.x * blockDim.y) xs[wb_t]" in \
        template.source
    assert "4 * (TILE) + 4 * (BLOCK_Y) * (BLOCK_X + 1) <= 49152" in \
        [c.text for c in template.constraints]


@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_lifts_the_same_knobs(spelling: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(spelling, tmp_path)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_corpus_kernel_computes_as_written(tmp_path: Path,
                                               host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = held_back_unseen24.SET.folder("sgemv_t_tiled")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    assert len(configs) >= 5
    assert same_as_written(kf, template, configs, held_back_unseen24.SET.host_source,
                           tmp_path, host_flags, within_tolerance=True) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(spelling, tmp_path / "folder")
    template = offline_template(kf).template
    configs = default_and_mix(template, kf, CASES[spelling])
    assert same_as_written(kf, template, configs, held_back_unseen24.SET.host_source,
                           tmp_path / "run", host_flags, within_tolerance=True) == len(configs)


KERNEL = (CORPUS / "baseline.cu").read_text()


def _lift(source: str, size: tuple[int, int] = (32, 8)) -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(source, entry="sgemv_t_tiled", grid=[f"ceil_div(N, {size[0]})"],
                         block=[str(s) for s in size], scalars={"M": "M", "N": "N"})
    return {p.name for p in lifted.params}, lifted.notes


def test_a_square_block_of_two_names_is_told_apart_by_their_uses() -> None:
    square = KERNEL.replace("#define STRIP 32", "#define STRIP 16").replace(
        "#define ROWS_PER_PASS 8", "#define ROWS_PER_PASS 16")
    names, notes = _lift(square, (16, 16))
    assert names == KNOBS, notes
    assert any(n.startswith("BLOCK_X: applied: STRIP sizes block x and ROWS_PER_PASS block "
                            "y") for n in notes), notes


FOLD = """    if (ty == 0 && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < ROWS_PER_PASS; ++k)
            sum += part[k][tx];
        y[col] = sum;
    }"""
TREE = """    for (int s = ROWS_PER_PASS / 2; s > 0; s >>= 1) {
        if (ty < s) part[ty][tx] += part[ty + s][tx];
        __syncthreads();
    }
    if (ty == 0 && col < N) y[col] = part[0][tx];"""


@pytest.mark.parametrize(("old", "new", "why"), [
    # the strip also written as a literal: not one quantity by name
    ("int col = blockIdx.x * STRIP + tx;", "int col = blockIdx.x * 32 + tx;",
     "the block size 32 is also written as a literal"),
    # a sum over the rows' name that adds the staged x, no thread rows' partial sums
    ("sum += part[k][tx];", "sum += xs[k];", "stores no thread's partial sum"),
    # the flat index read beside the fill
    ("xs[t] = (base + t < M) ? x[base + t] : 0.0f;",
     "xs[t] = (base + t < M) ? x[base + t] : 0.0f; (void)t;", "is read beside the fill"),
    # the tile filled with a thread's own value: a longer tile would repeat it
    ("xs[t] = (base + t < M) ? x[base + t] : 0.0f;",
     "xs[t] = (base + t < M) ? x[base + t] * (float)col : 0.0f;", "a thread's own value"),
    # the thread rows' accumulator written outside their split of the rows
    ("part[ty][tx] = acc;", "acc += 1.0f; part[ty][tx] = acc;",
     "is not a sum of a loop the thread rows split"),
    # a tree over the thread rows from a literal: it would not follow BLOCK_Y
    (FOLD, TREE.replace("ROWS_PER_PASS / 2", "4"), "halves a count from no block size"),
    # a tree over thread rows that each sum every row: not split, the total moves with BY
    (FOLD + "\n", TREE + "\n", ""),
    # lanes combined by a shuffle: the block's shape fixes them
    ("y[col] = sum;", "y[col] = __shfl_down_sync(0xffffffffu, sum, 1);",
     "combines the lanes of a warp"),
])
def test_what_the_rectangular_block_refuses(old: str, new: str, why: str) -> None:
    assert old in KERNEL
    source = KERNEL.replace(old, new)
    if not why:  # every thread row sums every row
        source = source.replace("r += ROWS_PER_PASS", "++r").replace("int r = ty;", "int r = 0;")
        why = "is not a sum of a loop the thread rows split"
    names, notes = _lift(source)
    assert not {"BLOCK_X", "BLOCK_Y", "TILE"} & names, notes
    assert any(n.startswith("BLOCK_X: not applied:") and why in n for n in notes), notes
