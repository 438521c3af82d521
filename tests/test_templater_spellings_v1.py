"""Tiled products and convolutions as other people write them, at first contact (issue 28):
the kernels of tests/spellings_v1/ lifted by the offline templater, their knobs compared with
what the family lifts for the corpus's own spelling (gemm_smem, sgemm_nt and hgemm_scaled:
BM, BN, BK, TM, TN, VEC; conv2d_const: BLOCK_X, BLOCK_Y, OUT_X, OUT_Y, USE_SMEM), and every
checked config computing on the host (g++, the cooperative block) what the kernel as
written computes: the float GEMMs within 1e-3 of the product in double, the half A.B^T and
the convolutions bit for bit against the kernel as written.

Spellings: a 1-D block split by ``/`` and ``%`` with 1-D tiles indexed by hand and the
matrices walked by bumping their pointers; a batch on ``blockIdx.z`` with the arguments a
struct passed by value, an index helper, ``__ldg`` loads, a ``constexpr`` tile, a ``while``
over k and an alpha/beta epilogue; A.B^T of halves summed in float through index lambdas
with a padded tile; a padded tile walked by a ``do``-``while`` counting stages (read as the
``for`` that keeps its first pass, ``t == 0 || (t * T < K)``: the register tile's knobs);
the kernel a ``template <int T> __global__`` (refused with the line: the workbench launches
a kernel by its name); a 3 x 3 convolution over three
channels with the output channel on ``blockIdx.z`` and an index lambda; a depthwise 3 x 3
staging its apron in a 1-D shared tile by a flat strided loop over a square block (before
workbench/templater/block.py read the loop's ``TW * TH`` step as one factor a dimension,
both factors followed BLOCK_X: wrong at every non-square block); a 5 x 5 ``__constant__``
filter on a 1-D block split into 32 x 8 by ``%`` and ``/`` with ``while`` loops over the
taps and two early returns (items only: the 2-D families read a 2-D block); a product with
no bounds test at all, right only where M, N, K are multiples of its tile (before
workbench/templater/regtile_shapes.py kept them multiples of the lifted tile, a 32-tile
config read past A and B at 48 x 80 x 48); the samples' matrixMul, its indices walked in
the loop's header (the register tile refuses it with the line; the tied tile lifts TILE, whose
32 read and wrote past C at 48 x 80 x 48 before the same rule kept the sizes multiples of
it); A^T.B with a bias
and ReLU in the store, a function-like index macro and a ``while`` over a precomputed count of
k-tiles; a 7 x 7 clamped ``__constant__`` filter walked by ``do``-``while`` loops from ``-KR``
to ``KR`` (before workbench/templater/loop_forms_open.py read the macro, the loops stayed
``do`` loops and the convolution family did not apply: items only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import end_configs, host_sample, lifted_template
from regtile_spellings import Spelling, lift, worst_error
from test_corpus_unseen3 import host_flags  # noqa: F401  (the session fixture)
from test_templater_const_via import _knobs, assert_prints_as_written, write_folder
from test_templater_regtile_half_spellings import HalfGemm, _host_run, _lifted_run

from workbench.core.errors import KernelFolderError
from workbench.core.kernel_folder import KernelFolder
from workbench.templater import lift_kernel, offline_template

HERE = Path(__file__).resolve().parent / "spellings_v1"
GEMM_KNOBS = {"BM", "BN", "BK", "TM", "TN", "VEC"}
CONV_KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM"}
GRID = ("ceil_div(N, 16)", "ceil_div(M, 16)")
MNK = {"M": "M", "N": "N", "K": "K"}
ENV = {"batch": 2, "M": 37, "N": 45, "K": 29}


def _source(name: str) -> str:
    return (HERE / f"{name}.cu").read_text()


# -- tiled products ------------------------------------------------------------------------

GEMMS: dict[str, Spelling] = {
    "gemm_1d_tiles_pointer_bump": Spelling(
        _source("gemm_1d_tiles_pointer_bump"), GRID, ("256",), MNK, "k(C, A, B, M, N, K)",
        a_index="(size_t)r * K + k", b_index="(size_t)k * N + c", c_index="(size_t)r * N + c"),
    "gemm_batched_struct_ldg_epilogue": Spelling(
        _source("gemm_batched_struct_ldg_epilogue"), (*GRID, "batch"), ("16", "16"),
        {"p": "p"}, "k(GemmArgs{A, B, C, M, N, K, 1.5f, 0.5f})", alpha="1.5", beta="0.5"),
    "gemm_padded_do_while": Spelling(
        _source("gemm_padded_do_while"), GRID, ("16", "16"), MNK, "k(C, A, B, M, N, K)",
        a_index="(size_t)r * K + k", b_index="(size_t)k * N + c", c_index="(size_t)r * N + c"),
}
#: what each lifts (the register tile's knobs, or the refusal and what lifts instead)
GEMM_LIFTS = {"gemm_1d_tiles_pointer_bump": GEMM_KNOBS,
              "gemm_batched_struct_ldg_epilogue": GEMM_KNOBS,
              "gemm_padded_do_while": GEMM_KNOBS}


@pytest.mark.parametrize("name", sorted(GEMMS))
def test_each_gemm_spelling_lifts_what_the_family_lifts(name: str) -> None:
    lifted = lift(GEMMS[name])
    assert {p.name for p in lifted.params} == GEMM_LIFTS[name], lifted.notes


def test_a_do_while_walk_over_the_tiles_keeps_its_first_pass() -> None:
    lifted = lift(GEMMS["gemm_padded_do_while"])
    assert "  for (int t = 0; t == 0 || (t * BK < K); ++t) {" in lifted.source, lifted.source


def test_a_template_kernel_is_refused_with_its_line() -> None:
    s = GEMMS["gemm_padded_do_while"]
    lifted = lift(Spelling(_source("gemm_template_kernel_padded"), s.grid, s.block, MNK, ""))
    assert not {"BM", "TILE"} & {p.name for p in lifted.params}
    assert any(n.startswith("INLINE: not applied: the kernel k is itself a function template "
                            "(<int T>)") and n.endswith("(line 5)") for n in lifted.notes)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(GEMMS))
def test_every_checked_gemm_config_computes_the_product(name: str, tmp_path: Path) -> None:
    s = GEMMS[name]
    template = lifted_template(lift(s), s.entry)
    ends = end_configs(template, {**ENV, "elem_bytes": 4})
    for config in [dict(template.default_config()), *host_sample(ends)]:
        assert worst_error(s, template, config, ENV, tmp_path) < 1e-3, config


UNGUARDED = Spelling(_source("gemm_unguarded_whole_tiles"), GRID, ("16", "16"), MNK,
                     "k(C, A, B, M, N, K)", a_index="(size_t)r * K + k",
                     b_index="(size_t)k * N + c", c_index="(size_t)r * N + c")
#: multiples of the tile as written (16), of no larger tile: 48 rows, 80 columns, depth 48
WHOLE = {"batch": 1, "M": 48, "N": 80, "K": 48}


def test_an_unguarded_product_keeps_each_size_a_multiple_of_the_lifted_tile() -> None:
    """As written it is right only where M, N, K are multiples of 16; before the space said
    so, BM = BN = BK = 32 at this shape read past A and B (a crash on the host)."""
    lifted = lift(UNGUARDED)
    assert {p.name for p in lifted.params} == GEMM_KNOBS, lifted.notes
    assert {"(M) % BM == 0", "(N) % BN == 0", "(K) % BK == 0"} <= set(lifted.constraints)
    template = lifted_template(lifted, "k")
    wide = {**template.default_config(), "BM": 32, "BN": 32, "BK": 32}
    assert template.space({**WHOLE, "elem_bytes": 4}).rejection(wide) == "(N) % BN == 0"
    guarded = lift(GEMMS["gemm_1d_tiles_pointer_bump"]).constraints  # bounds every size
    assert not any(c.endswith(("% BM == 0", "% BN == 0", "% BK == 0")) for c in guarded)


@pytest.mark.timeout(900)
def test_every_checked_unguarded_config_computes_the_product(tmp_path: Path) -> None:
    template = lifted_template(lift(UNGUARDED), "k")
    ends = end_configs(template, {**WHOLE, "elem_bytes": 4})
    mix = {**template.default_config(), "BM": 16, "BN": 16, "BK": 16, "TM": 2, "TN": 2}
    for config in [dict(template.default_config()), *host_sample(ends), mix]:
        assert worst_error(UNGUARDED, template, config, WHOLE, tmp_path) < 1e-3, config


SAMPLES = Spelling(_source("gemm_samples_walked_indices"), GRID, ("16", "16"), MNK,
                   "k(C, A, B, M, N, K)", a_index="(size_t)r * K + k",
                   b_index="(size_t)k * N + c", c_index="(size_t)r * N + c")


def test_the_samples_walk_lifts_its_tile_with_whole_tiles_only() -> None:
    """The register tile refuses the walked indices (the line named); the tied tile lifts
    TILE, each size a multiple of it (before, TILE 32 at N = 80 read and wrote past C)."""
    lifted = lift(SAMPLES)
    assert {p.name for p in lifted.params} == {"TILE", "MIN_BLOCKS_PER_SM"}, lifted.notes
    assert "REGISTER_TILE: not applied: the load `A[a + K * ty + tx]` of tile sA cannot be " \
        "shown to move by one block along rows when the tile position moves by 16 (line 12)" \
        in lifted.notes
    assert {"(N) % TILE == 0", "(M) % TILE == 0", "(K) % TILE == 0"} <= set(lifted.constraints)


@pytest.mark.timeout(600)
def test_every_checked_samples_config_computes_the_product(tmp_path: Path) -> None:
    template = lifted_template(lift(SAMPLES), "k")
    ends = end_configs(template, {**WHOLE, "elem_bytes": 4})
    assert {c["TILE"] for c in ends} == {8}  # the ends 8 and 32: 32 divides neither 48 nor 80
    for config in [dict(template.default_config()), *ends]:  # the default: TILE 16
        assert worst_error(SAMPLES, template, config, WHOLE, tmp_path) < 1e-3, config


HALF_ABT = HalfGemm(_source("gemm_abt_lambda_half"), "k", MNK, "k(c, a, b, M, N, K)", "c")
HALF_ENV = {"M": 37, "N": 45, "K": 29}


def test_the_half_abt_spelling_lifts_the_register_tile_and_eight_halves_a_load() -> None:
    lifted = HALF_ABT.lift()
    assert {p.name for p in lifted.params} == GEMM_KNOBS, lifted.notes
    assert next(p for p in lifted.params if p.name == "VEC").spec["values"] == [1, 8]


@pytest.mark.timeout(600)
def test_every_checked_half_abt_config_writes_the_bits_of_the_kernel_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    template = lifted_template(HALF_ABT.lift(), "k")
    grid = [-(-HALF_ENV["N"] // 16), -(-HALF_ENV["M"] // 16)]
    written, _ = _host_run(HALF_ABT, HALF_ABT.source, (grid, [16, 16]), HALF_ENV,
                           tmp_path / "written", host_flags)
    m, n, k = HALF_ENV["M"], HALF_ENV["N"], HALF_ENV["K"]
    a = np.array([((i * 37) % 33 - 16) / 8.0 for i in range(m * k)]).reshape(m, k)
    b = np.array([((i * 29) % 31 - 15) / 8.0 for i in range(n * k)]).reshape(n, k)
    assert np.allclose(written, a @ b.T, rtol=1e-5, atol=1e-5)
    ends = end_configs(template, {**HALF_ENV, "elem_bytes": 4})
    for i, config in enumerate([dict(template.default_config()), *host_sample(ends)]):
        got, _ = _lifted_run(HALF_ABT, template, config, HALF_ENV, tmp_path / f"c{i}",
                             host_flags)
        assert np.array_equal(got, written), config


# -- convolutions (and a GEMM whose epilogue reads a bias: a kernel folder, bit for bit) -----

HW = [("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")]
#: name -> (grid, block, args, check sizes, constants, the knobs it lifts)
CONVS: dict[str, tuple[list[str], list[str], list[tuple[str, str, str, Any]], dict[str, int],
                       list[tuple[str, list[int]]], set[str]]] = {
    "conv_multichannel_lambda_zout": (
        ["ceil_div(w, 16)", "ceil_div(h, 16)", "4"], ["16", "16"],
        [("out", "f32", "out", [4, "h", "w"]), ("in", "f32", "in", [3, "h", "w"]), *HW],
        {"h": 37, "w": 53}, [("wts", [4, 3, 3, 3])], {*CONV_KNOBS, "MIN_BLOCKS_PER_SM"}),
    "dwconv_apron_tile_zbatch": (
        ["ceil_div(w, 16)", "ceil_div(h, 16)", "C"], ["16", "16"],
        [("out", "f32", "out", ["C", "h", "w"]), ("in", "f32", "in", ["C", "h", "w"]),
         ("wt", "f32", "in", ["C", 9]), *HW],
        {"h": 37, "w": 53, "C": 3}, [], {"BLOCK_X", "BLOCK_Y", "MIN_BLOCKS_PER_SM"}),
    "conv_const_clamp_do_while_blockdim": (
        ["ceil_div(W, 32)", "ceil_div(H, 4)"], ["32", "4"],
        [("src", "f32", "in", ["H", "W"]), ("dst", "f32", "out", ["H", "W"]),
         ("W", "i32", "scalar", "W"), ("H", "i32", "scalar", "H")],
        {"H": 37, "W": 53}, [("g", [49])], {*CONV_KNOBS, "MIN_BLOCKS_PER_SM"}),
    "gemm_atb_macro_index_while_relu": (
        ["ceil_div(N, 16)", "ceil_div(M, 16)"], ["16", "16"],
        [("C", "f32", "out", ["M", "N"]), ("A", "f32", "in", ["K", "M"]),
         ("B", "f32", "in", ["K", "N"]), ("bias", "f32", "in", ["N"]),
         ("M", "i32", "scalar", "M"), ("N", "i32", "scalar", "N"),
         ("K", "i32", "scalar", "K")],
        {"M": 37, "N": 45, "K": 29}, [], GEMM_KNOBS),
    "conv_const_1d_block_while_taps": (
        ["ceil_div(w, 32)", "ceil_div(h, 8)"], ["256"],
        [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", ["h", "w"]), *HW],
        {"h": 37, "w": 53}, [("taps", [25])], {"ITEMS_PER_THREAD"}),
}


def _conv(name: str, root: Path) -> KernelFolder:
    grid, block, args, sizes, constants, _knobs_lifted = CONVS[name]
    return write_folder(root / name, _source(name), grid, block, args, sizes, constants)


@pytest.mark.parametrize("name", sorted(CONVS))
def test_each_folder_spelling_lifts_what_the_family_lifts(name: str, tmp_path: Path) -> None:
    result = offline_template(_conv(name, tmp_path))
    assert set(_knobs(result)) == CONVS[name][5], result.notes


def test_the_apron_tiles_flat_stride_follows_both_block_sizes(tmp_path: Path) -> None:
    source = offline_template(_conv("dwconv_apron_tile_zbatch", tmp_path)).lifted.source
    assert "#define TW BLOCK_X\n#define TH BLOCK_Y\n" in source
    assert "t += TW * TH" in source


def test_the_hand_indexed_apron_tile_is_read_as_rows_and_refused_with_its_line(
        tmp_path: Path) -> None:
    """The 1-D tile indexed by hand is read as the 2-D one it is (:mod:`.apron_flat`); the
    apron family then names its refusal, the channel's z index, with the line."""
    result = offline_template(_conv("dwconv_apron_tile_zbatch", tmp_path))
    assert "__shared__ float tile[AH][AW];" in result.lifted.source
    assert "OUT_XY: not applied: `blockIdx.z`: a z index is not modelled (line 10)" in \
        result.notes


def test_a_template_conv_kernel_is_refused_with_its_line(tmp_path: Path) -> None:
    """The folder refuses it (its entry is no extern "C" kernel), and so does the lift."""
    source = _source("conv_global_filter_template_ldg")
    with pytest.raises(KernelFolderError, match='expected an extern "C" __global__ function'):
        write_folder(tmp_path / "t", source, ["ceil_div(w, 16)", "ceil_div(h, 16)"],
                     ["16", "16"], [("out", "f32", "out", ["h", "w"]),
                                    ("in", "f32", "in", ["h", "w"]), ("wt", "f32", "in", [49]),
                                    *HW], {"h": 37, "w": 53}, [])
    notes = lift_kernel(source, entry="k", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                        block=["16", "16"], scalars={"h": "h", "w": "w"}).notes
    assert any(n.startswith("INLINE: not applied: the kernel k is itself a function template "
                            "(<int R>)") and n.endswith("(line 7)") for n in notes), notes


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(CONVS))
def test_every_checked_folder_config_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path) -> None:
    kf = _conv(name, tmp_path / "folders")
    result = offline_template(kf)
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    assert_prints_as_written(kf, result, [dict(template.default_config()), *host_sample(ends)],
                             tmp_path)
