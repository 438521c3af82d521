"""The register-tiled GEMM space narrowed by GEMM practice (issue 28, a 40-evaluation search).

Searched: BM, BN, BK, TM, TN and VEC; decided by the analysis (no knob): the thread mapping,
the k-major layout with an odd row length of a tile read along k, and the register cap.
Three rules leave out configs known to be slow, never the kernel as written: register tiles
blocked in one dimension only or more than 2:1 (1 x N, 2 x 8: more shared loads per FMA than
a near-square tile of as many accumulators); 2 x 2 and 2 x 4 tiles past a 32 x 32 block tile
(4 x 4 covers it with fewer threads and twice the FMAs per load); register-tiled configs with
scalar tile loads (the float4 path falls back to the loads as written where it cannot
apply). Each rejection names its constraint; the largest tiles compile without spills.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import NVCC, needs_nvcc
from helpers_templater import lifted_template
from regtile_spellings import Spelling, lift
from test_templater_regtile_1d import B_T, SPELLINGS
from test_templater_regtile_kmajor import A_BT
from test_templater_regtile_spellings import SPELLINGS as SPELLINGS_2D

ALL: dict[str, Spelling] = {**SPELLINGS, **SPELLINGS_2D, "a_bt_2d": A_BT}
NT = {"corpus_sgemm_nt", "ifndef_2d_tiles_batched_bt", "a_bt_2d", "const_int_local_mask_bt"}
LARGE = {"batch": 1, "M": 2048, "N": 2048, "K": 512, "elem_bytes": 4}


def _space(s: Spelling) -> tuple[Any, dict[str, Any]]:
    template = lifted_template(lift(s), s.entry)
    return template.space(LARGE), dict(template.default_config())


def test_every_spelling_is_read_as_nt_or_nn_as_written() -> None:
    assert {n for n, s in ALL.items() if s.b_index == B_T or s is A_BT} == NT


DECIDED = {"A_KMAJOR", "B_KMAJOR", "CONTIG_TILE", "PAD", "MIN_BLOCKS_PER_SM"}
REGISTER_TILE_RULE = "TM * TN == 1 or (TM >= 2 and TN >= 2 and TM <= 2 * TN and TN <= 2 * TM)"


@pytest.mark.parametrize("name", sorted(ALL))
def test_only_the_tiles_and_the_load_width_are_searched(name: str) -> None:
    space, default = _space(ALL[name])
    assert set(default) == {"BM", "BN", "BK", "TM", "TN", "VEC"}
    assert not DECIDED & set(default)
    assert space.rejection(default) is None  # the kernel as written stays


@pytest.mark.parametrize("name", sorted(ALL))
def test_register_tiles_are_near_square_in_both_dimensions_or_none(name: str) -> None:
    space, default = _space(ALL[name])
    tiled = {**default, "BM": 64, "BN": 64, "TM": 4, "TN": 4, "VEC": 4}
    kept = [(tm, tn) for tm in (1, 2, 4, 8) for tn in (1, 2, 4, 8)
            if space.rejection({**tiled, "BM": 32, "BN": 32, "TM": tm, "TN": tn}) is None]
    assert kept == [(1, 1), (2, 2), (2, 4), (4, 2), (4, 4), (4, 8), (8, 4)]  # 8 x 8: 16 threads
    assert space.rejection({**tiled, "TM": 8, "TN": 8}) is None
    for tm, tn in ((1, 8), (8, 1), (1, 4), (4, 1), (2, 8), (8, 2)):
        assert space.rejection({**tiled, "TM": tm, "TN": tn}) == REGISTER_TILE_RULE


@pytest.mark.parametrize("name", sorted(ALL))
def test_small_register_tiles_only_for_small_block_tiles(name: str) -> None:
    space, default = _space(ALL[name])
    small = {**default, "BM": 32, "BN": 32, "VEC": 4}
    for tm, tn in ((2, 2), (2, 4), (4, 2)):
        assert space.rejection({**small, "TM": tm, "TN": tn}) is None
        assert space.rejection({**small, "BN": 64, "TM": tm, "TN": tn}) == \
            "TM * TN >= 2 * (TM + TN) or BM * BN <= 1024"
    for tm, tn in ((4, 4), (4, 8), (8, 8)):
        assert space.rejection({**small, "BM": 128, "BN": 128, "TM": tm, "TN": tn}) is None


@pytest.mark.parametrize("name", sorted(ALL))
def test_register_tiled_configs_load_with_the_widest_vector(name: str) -> None:
    space, default = _space(ALL[name])
    tiled = {**default, "BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4}
    assert space.rejection({**tiled, "VEC": 4}) is None
    # the extents the rule names are those of the tiles whose loads have the float4 path
    assert re.fullmatch(r"TM \* TN == 1 or VEC == 4 or not \((B[KN] % 4 == 0( and )?)+\)",
                        space.rejection({**tiled, "VEC": 1}) or "")
    for vec in (1, 4):  # one output per thread: both widths, as written and vectorized
        assert space.rejection({**default, "VEC": vec}) is None


def _ptxas(config: dict[str, Any]) -> str:
    s = SPELLINGS["corpus_sgemm_nt"]
    template = lifted_template(lift(s), s.entry)
    config = {**template.default_config(), **config}
    assert template.space(LARGE).rejection(config) is None
    source = template.render(config, "fp32").source
    assert NVCC is not None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(source)
        done = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-o",
                               str(Path(tmp) / "k.cubin"), str(src)], capture_output=True,
                              text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


@needs_nvcc
@pytest.mark.timeout(600)
def test_the_largest_register_tile_compiles_without_spills_under_the_block_bound() -> None:
    # __launch_bounds__(256) and no minimum of blocks: ptxas gives 8 x 8 what it needs
    report = _ptxas({"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "VEC": 4})
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", report), report
    registers = re.search(r"Used (\d+) registers", report)
    assert registers is not None and 64 + 16 < int(registers.group(1)) <= 255, report
