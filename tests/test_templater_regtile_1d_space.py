"""The register-tiled GEMM space narrowed by GEMM practice (issue 28, a 40-evaluation search).

Four constraints of every register-tiled lift (1-D and 2-D blocks alike) leave out configs
known to be slow, never the kernel as written: register tiles blocked in one dimension only
(1 x N: fewer FMAs than shared loads per k); 2 x 2 and 2 x 4 tiles past a 32 x 32 block tile
(4 x 4 covers it with fewer threads and twice the FMAs per load); a tile read along k across
the lanes of a warp neither padded nor k-major once TM * TN > 1 (an 8- to 32-way bank
conflict); a register cap (MIN_BLOCKS_PER_SM) below what a thread's tile needs (forced
spills, checked with ptxas). Each rejection names its constraint.
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


@pytest.mark.parametrize("name", sorted(ALL))
def test_register_tiles_block_both_dimensions_or_none(name: str) -> None:
    space, default = _space(ALL[name])
    assert space.rejection(default) is None  # the kernel as written stays
    tiled = {**default, "BM": 64, "BN": 64, "TM": 4, "TN": 4, "PAD": 1}
    assert space.rejection(tiled) is None
    for tm, tn in ((1, 8), (8, 1), (1, 4), (4, 1)):
        assert space.rejection({**tiled, "TM": tm, "TN": tn}) == \
            "TM * TN == 1 or (TM >= 2 and TN >= 2)"


@pytest.mark.parametrize("name", sorted(ALL))
def test_small_register_tiles_only_for_small_block_tiles(name: str) -> None:
    space, default = _space(ALL[name])
    small = {**default, "BM": 32, "BN": 32, "PAD": 1}
    for tm, tn in ((2, 2), (2, 4), (4, 2)):
        assert space.rejection({**small, "TM": tm, "TN": tn}) is None
        assert space.rejection({**small, "BN": 64, "TM": tm, "TN": tn}) == \
            "TM * TN >= 2 * (TM + TN) or BM * BN <= 1024"
    for tm, tn in ((4, 4), (4, 8), (8, 8)):
        assert space.rejection({**small, "BM": 128, "BN": 128, "TM": tm, "TN": tn}) is None


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_tile_read_across_lanes_along_k_is_padded_or_k_major_once_tiled(name: str) -> None:
    space, default = _space(ALL[name])
    tiled = {**default, "BM": 64, "BN": 64, "TM": 4, "TN": 4, "PAD": 0}
    if name not in NT:
        # A . B: B's tile is read along its rows (Bs[k][col]): no such constraint
        assert "B_KMAJOR" not in default and space.rejection(tiled) is None
        return
    conflict = {**tiled, "B_KMAJOR": 0}
    assert space.rejection(conflict) == "TM * TN == 1 or B_KMAJOR == 1 or PAD >= 1"
    assert space.rejection({**conflict, "B_KMAJOR": 1}) is None
    assert space.rejection({**conflict, "PAD": 1}) is None
    assert space.rejection({**conflict, "TM": 1, "TN": 1, "BM": 32, "BN": 32}) is None


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_register_cap_below_the_tile_is_rejected(name: str) -> None:
    space, default = _space(ALL[name])
    big = {**default, "BM": 128, "BN": 128, "TM": 8, "TN": 8, "PAD": 1, "MIN_BLOCKS_PER_SM": 2}
    assert space.rejection(big) is None  # 2 x 256 threads: 128 registers for 8 x 8
    assert space.rejection({**big, "MIN_BLOCKS_PER_SM": 4}).startswith("MIN_BLOCKS_PER_SM *")


def _ptxas(config: dict[str, Any]) -> str:
    s = SPELLINGS["corpus_sgemm_nt"]
    template = lifted_template(lift(s), s.entry)
    source = template.render({**template.default_config(), **config}, "fp32").source
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
def test_the_register_cap_rule_rejects_configs_ptxas_must_spill() -> None:
    big = {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "VEC": 4, "B_KMAJOR": 1,
           "A_KMAJOR": 1, "CONTIG_TILE": 1}
    kept = _ptxas({**big, "MIN_BLOCKS_PER_SM": 2})
    assert re.search(r"0 bytes spill stores", kept), kept
    rejected = _ptxas({**big, "MIN_BLOCKS_PER_SM": 4})  # 64 registers for an 8 x 8 tile
    spill = re.search(r"(\d+) bytes spill stores", rejected)
    assert spill is not None and int(spill.group(1)) > 0, rejected
