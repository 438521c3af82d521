"""First contact with tiled products, direct convolutions and per-element series as other
people write them (issue 28, tests/spellings_s23a/): each kernel written into a folder and
lifted by the offline templater (``offline_template``), the knobs it lifts compared with
what the family lifts for the corpus's own spelling (gemm_smem: BM, BN, BK, TM, TN, VEC;
conv2d_const: BLOCK_X, BLOCK_Y, OUT_X, OUT_Y, USE_SMEM; percell_compute and rk4_duffing:
BLOCK_THREADS, ITEMS_PER_THREAD, UNROLL), and every checked config printing on the host
(g++, the cooperative block) what the kernel as written prints, bit for bit.

Spellings (each lifts what the corpus's spelling of its family lifts unless said):
a product under ``__launch_bounds__`` with unsigned indices walking A and B by pointer bumps
(``A += TILE; B += TILE * N``); 1-D tiles indexed ``ty * TILE + tx``, a loop counting tiles
and each load through a ``__device__ __forceinline__`` helper returning the element or zero
through ``__ldg`` (was BM, BN, BK, TM, TN: the helper stayed a call, then ``__ldg(A + i)``
was not read as the load ``A[i]``, so no VEC); the tile a ``static constexpr`` struct
member under ``#pragma unroll`` with ``size_t`` offsets and an early ``return`` past C after
the last barrier (was TILE only: the register tile refused the exit); a batch on
``blockIdx.z`` with leading dimensions and function-like index macros over the batch's base
pointers; a rectangular 32 x 8 block over a k slice of 8 with a bias and tanh in the store;
A.B^T of ``__restrict__`` operands over a ``while`` on a running k offset, B's tile read
transposed; A.B^T through ``float4`` loads by a quarter of the threads (the register tile refuses the
fill with its line: TILE only); both tiles carved out of one ``extern __shared__`` buffer
sized at launch (was BLOCK_X and BLOCK_Y alone, wrong: now refused); a 5 x 5
``__constant__`` correlation with ``static constexpr`` extents (``W = 2 * R + 1``), unsigned
coordinates, ``__launch_bounds__`` and two early returns (was ITEMS_X, ITEMS_Y; on the way an
OUT_Y lift that stored past h); a 3 x 3 filter in global memory read through ``__ldg``, the
image through a macro inside a helper returning the pixel or zero (was ITEMS_X, ITEMS_Y); a
31-tap ``__constant__`` 1-D filter over taps ``-R .. R`` through a sample helper with an
early return (fir128_const's T_ITEMS and USE_SMEM; was ITEMS_PER_THREAD, UNROLL); a cosine
series in double with a ``break`` and a branch, a ``size_t`` index under
``__launch_bounds__``; a clipped map iterated through a branching step helper with an
``unsigned`` count; a Horner rule in double over a ``static constexpr`` count of
``__constant__`` coefficients in an unsigned grid-stride loop; a product with no bounds test
counting ``K / TILE`` whole tiles in the loop's test (was the tied TILE: the register tile
refused the count); a per-element rational sigmoid four elements a thread through ``float4``
reinterpretation and a branching helper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen4
import numpy as np
import pytest
from helpers_templater import host_configs
from test_corpus_unseen3 import _inputs, folder_runs
from test_templater_const_via import _knobs, write_folder

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template

HERE = Path(__file__).resolve().parent / "spellings_s23a"

GEMM = {"BM", "BN", "BK", "TM", "TN", "VEC"}
CONV = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM", "MIN_BLOCKS_PER_SM"}
ITEMS = {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "MIN_BLOCKS_PER_SM"}

MNK = [("M", "i32", "scalar", "M"), ("N", "i32", "scalar", "N"), ("K", "i32", "scalar", "K")]
HW = [("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")]
PRODUCT = [("C", "f32", "out", ["M", "N"]), ("A", "f32", "in", ["M", "K"]),
           ("B", "f32", "in", ["K", "N"]), *MNK]
IMAGE = [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", ["h", "w"]), *HW]
#: no size a multiple of 16 or 32; K a multiple of 4 (the float4 spelling's loads need it)
SIZES = {"M": 37, "N": 45, "K": 28}
GRID = ["ceil_div(N, 16)", "ceil_div(M, 16)"]
PICTURE = ["ceil_div(w, 16)", "ceil_div(h, 16)"]


#: name -> (grid, block, args, check sizes, constants, the knobs its lift holds)
KERNELS: dict[str, tuple[list[str], list[str], list[tuple[str, str, str, Any]],
                         dict[str, int], list[tuple[str, list[int]]], set[str]]] = {
    "gemm_bounds_bumped_2d": (GRID, ["16", "16"], PRODUCT, SIZES, [], GEMM),
    "gemm_flat_tiles_counted": (GRID, ["16", "16"], PRODUCT, SIZES, [], GEMM),
    "gemm_struct_constexpr_sizet": (GRID, ["16", "16"], PRODUCT, SIZES, [], GEMM),
    # no bounds test: every size a multiple of the tile (M, N, K % BM, BN, BK kept)
    "gemm_whole_tiles_counted_unroll": (GRID, ["16", "16"], PRODUCT,
                                        {"M": 48, "N": 80, "K": 32}, [], GEMM),
    "gemm_abt_scalar_restrict_while": (GRID, ["16", "16"],
                                       [*PRODUCT[:2], ("B", "f32", "in", ["N", "K"]), *MNK],
                                       SIZES, [], GEMM),
    "gemm_batched_macros_lds": (
        [*GRID, "bt"], ["16", "16"],
        [("C", "f32", "out", ["bt", "M", "N"]), ("A", "f32", "in", ["bt", "M", "K"]),
         ("B", "f32", "in", ["bt", "K", "N"]), *MNK, ("lda", "i32", "scalar", "K"),
         ("ldb", "i32", "scalar", "N"), ("ldc", "i32", "scalar", "N")],
        {**SIZES, "bt": 2}, [], GEMM),
    "gemm_rect_32x8_bias_tanh": (
        ["ceil_div(N, 32)", "ceil_div(M, 8)"], ["32", "8"],
        [*PRODUCT[:3], ("bias", "f32", "in", ["N"]), *MNK], SIZES, [], GEMM),
    # the register tile refuses the float4 fill under `if (tx < T / 4)` (not a store of a
    # shared tile, with the line): the tied tile lifts TILE
    "gemm_abt_float4_rows": (GRID, ["16", "16"],
                             [*PRODUCT[:2], ("B", "f32", "in", ["N", "K"]), *MNK], SIZES, [],
                             {"TILE", "MIN_BLOCKS_PER_SM"}),
    "conv_const_struct_unroll_unsigned": (PICTURE, ["16", "16"], IMAGE, {"h": 37, "w": 53},
                                          [("wts", [25])], CONV),
    "conv_global_filter_ldg_macro": (
        PICTURE, ["16", "16"],
        [*IMAGE[:2], ("filt", "f32", "in", [9]), *HW], {"h": 37, "w": 53}, [], CONV),
    "conv1d_const_helper_early": (
        ["ceil_div(n, 256)"], ["256"],
        [("y", "f32", "out", ["n"]), ("x", "f32", "in", ["n"]), ("n", "i32", "scalar", "n")],
        {"n": 1003}, [("taps", [31])],
        {"BLOCK_THREADS", "T_ITEMS", "USE_SMEM", "MIN_BLOCKS_PER_SM"}),
    # a double division by a function of the series' counter: RCP (ilp_rcp_counter)
    "series_f64_bounds_sizet": (
        ["ceil_div(n, 128)"], ["128"],
        [("out", "f32", "out", ["n"]), ("xs", "f32", "in", ["n"]), ("n", "i32", "scalar", "n")],
        {"n": 1003}, [], ITEMS | {"RCP"}),
    # the Horner loop keeps its own #pragma unroll; the items' loop's bare pragma gains
    # UNROLL (0 keeps it as written; a316be9); the double division by 1 + x * x, which the kernel never writes: DIV_RCP (c270e92)
    "horner_f64_member_unroll": (
        ["ceil_div(n, 256)"], ["256"],
        [("out", "f32", "out", ["n"]), ("in", "f32", "in", ["n"]), ("n", "u32", "scalar", "n")],
        {"n": 1003}, [("coef", [9])],
        {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "BRANCHLESS", "DIV_RCP",
         "MIN_BLOCKS_PER_SM"}),
    # one float4 a thread (the grid as the author wrote it: n / 4 threads); items only
    "sigmoid_poly_float4_items": (
        ["ceil_div(n // 4, 256)"], ["256"],
        [("out", "f32", "out", ["n"]), ("in", "f32", "in", ["n"]), ("n", "i32", "scalar", "n")],
        {"n": 4004}, [], {"BLOCK_THREADS", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"}),
    "iterate_f32_helper_unsigned": (
        ["ceil_div(n, 256)"], ["256"],
        [("out", "f32", "out", ["n"]), ("x0", "f32", "in", ["n"]),
         ("rate", "f32", "in", ["n"]), ("n", "u32", "scalar", "n")],
        {"n": 1003}, [], ITEMS | {"FAST_MATH"}),
}


def _folder(name: str, root: Path) -> KernelFolder:
    grid, block, args, sizes, constants, _knobs_lifted = KERNELS[name]
    return write_folder(root / name, (HERE / f"{name}.cu").read_text(), grid, block, args,
                        sizes, constants)


def _assert_prints_as_written(kf: KernelFolder, template: Any,
                              configs: list[dict[str, Any]], work: Path) -> None:
    """Each config of ``template`` prints, bit for bit, what ``kf``'s kernel as written
    prints on the check shape's inputs (one merged host program; the fast intrinsics a
    FAST_MATH config writes as their libm forms, held-back set 4's host extras)."""
    env = kf.env(kf.check_shape, "fp32")
    for config in configs:
        assert template.space(env).rejection(config) is None, config
    host = held_back_unseen4.HOST_EXTRAS
    runs = [(host + kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((host + template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), work)
    assert all(not np.isnan(v).any() for v in want.values())
    for config, outputs in zip(configs, got, strict=True):
        for arg, values in want.items():
            assert np.array_equal(outputs[arg].view(np.uint32), values.view(np.uint32)), \
                f"{kf.name} {arg} at {config}"


def test_a_tile_in_launch_sized_shared_memory_keeps_its_block(tmp_path: Path) -> None:
    """Both tiles of a literal 16 carved out of ``extern __shared__`` memory: before, the
    block lift took ``blockIdx.y * TILE`` as the block's size and lifted BLOCK_X and BLOCK_Y
    alone, the tiles' 16 and the launch's buffer as written (at 32 x 32 the threads stored
    across each other's rows of As). Now nothing is lifted, with the line."""
    kf = write_folder(tmp_path / "gemm_extern_shared",
                      (HERE / "gemm_extern_shared.cu").read_text(), GRID, ["16", "16"],
                      PRODUCT, SIZES, [])
    with pytest.raises(TemplateError) as raised:
        offline_template(kf)
    for dim in ("x", "y"):
        assert f"BLOCK_{dim.upper()}: not applied: `extern __shared__ float smem[];` is sized " \
            "at launch (kernel.toml's smem_bytes), which a lifted block size would not " \
            f"follow, and `As[ty * TILE + tx]` (line 12) indexes it by threadIdx.{dim}: " \
            "another block would index past it or across another thread's part; the block " \
            "stays as written" in str(raised.value)


def test_an_output_exit_after_the_last_barrier_is_each_virtual_threads(tmp_path: Path) -> None:
    """``if (r >= M || c >= N) return;`` after the loop over tiles: before, the register
    tile refused it (an early exit the coarsened threads cannot share) and only TILE lifted.
    The epilogue runs once per output of the TM x TN tile in one loop: the exit is that
    loop's ``continue`` (the next output's store still runs)."""
    result = offline_template(_folder("gemm_struct_constexpr_sizet", tmp_path))
    epilogue = result.lifted.source.rsplit("__syncthreads();", 1)[1]
    assert "for (int wb_j = 0; wb_j < TN; ++wb_j) {\n    if ((blockIdx.y * BM + (threadIdx.y " \
        "+ wb_i * THREADS_Y)) >= M || (blockIdx.x * BN + (threadIdx.x + wb_j * THREADS_X)) " \
        ">= N) continue;\n    C[" in epilogue
    assert "return" not in epilogue


def test_two_adjacent_exits_are_read_as_one_bounds_check(tmp_path: Path) -> None:
    """``if (x >= w) return; if (y >= h) return;`` is the check ``x >= w || y >= h``
    (inline_exits): each output of OUT_Y x OUT_X is stored under both. Before, the second
    exit stayed a whole thread's return after the check OUT_Y read, so the rows past a
    thread's first were stored past h (the host run aborted at OUT_Y 8)."""
    source = offline_template(_folder("conv_const_struct_unroll_unsigned", tmp_path)).lifted.source
    assert "  if ((x >= (unsigned)w) || (y >= (unsigned)h)) return;\n" in source
    assert "if (!(((x + wb_q) >= (unsigned)w) || ((y + wb_k) >= (unsigned)h))) out[" in source


def test_an_exit_after_the_convolutions_check_is_refused_with_its_line(tmp_path: Path) -> None:
    """The second exit one statement later is not part of the check the family reads: the
    window family refuses with the line (before, it lifted OUT_Y and stored past h)."""
    grid, block, args, sizes, constants, _ = KERNELS["conv_const_struct_unroll_unsigned"]
    written = (HERE / "conv_const_struct_unroll_unsigned.cu").read_text()
    apart = written.replace("  if (y >= (unsigned)h) return;\n  float acc = 0.0f;\n",
                            "  float acc = 0.0f;\n  if (y >= (unsigned)h) return;\n")
    assert apart != written
    result = offline_template(write_folder(tmp_path / "apart", apart, grid, block, args, sizes,
                                           constants))
    assert "OUT_Y" not in _knobs(result)
    assert "OUT_Y: not applied: `if (y >= (unsigned)h) return;` leaves after the bounds " \
        "check `if (x >= (unsigned)w) return;`: the check is read from one statement " \
        "(line 15)" in result.notes, result.notes


def test_a_count_of_whole_tiles_follows_the_depth_it_divides(tmp_path: Path) -> None:
    """``t < K / TILE`` over a product that bounds nothing by K: the register tile keeps K a
    multiple of BK, so the count is exact at every BK (before: refused, `K / TILE` counts
    whole tiles of the written size, and the tied tile lifted). The same count in a local
    (``tiles = K / TILE``) is not the loop's test the depth is read from: still refused."""
    result = offline_template(_folder("gemm_whole_tiles_counted_unroll", tmp_path))
    assert "(K) % BK == 0" in result.lifted.constraints
    assert "for (int t = 0; t < K / BK; ++t) {" in result.lifted.source
    grid, block, args, sizes, constants, _ = KERNELS["gemm_whole_tiles_counted_unroll"]
    written = (HERE / "gemm_whole_tiles_counted_unroll.cu").read_text()
    local = written.replace("  for (int t = 0; t < K / TILE; ++t) {",
                            "  const int tiles = K / TILE;\n  for (int t = 0; t < tiles; ++t) {")
    assert local != written
    kept = offline_template(write_folder(tmp_path / "local", local, grid, block, args, sizes,
                                         constants))
    assert "BM" not in _knobs(kept)
    assert "REGISTER_TILE: not applied: `K / TILE` counts whole tiles of the written size (it " \
        "assumes a multiple of 16); a deeper tile would drop the remainder (line 10)" \
        in kept.notes


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_spelling_lifts_what_the_family_lifts(name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    assert set(_knobs(result)) == KERNELS[name][5], result.notes


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path) -> None:
    kf = _folder(name, tmp_path / "folders")
    result = offline_template(kf)
    configs = host_configs(result.template, kf.env(kf.check_shape, "fp32"))
    _assert_prints_as_written(kf, result.template, configs, tmp_path)
