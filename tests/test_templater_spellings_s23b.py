"""First contact with memory-bound kernels as other people write them (issue 28,
tests/spellings_s23b/): each folder's kernel lifted by the offline templater as the corpus's
folders are (``offline_template``), its knobs compared with what the family lifts for the
corpus's own spelling of the same kernel, and every checked config of the lift computing on
the host (g++) what the kernel as written computes, within the folder's tolerance.

Spellings (one folder each; the corpus kernel of the family in brackets):

- row sums, a warp a row, the fold a ``template <typename T> __device__`` helper halving
  its offset in ``while (offset)`` (row_logsumexp / segment_sums): refused before (the
  helper's shuffles stayed a call, and a ``while (offset) {..; offset >>= 1;}`` was no
  offset loop); now WARPS_PER_BLOCK, LANES, VEC, ITEMS_PER_THREAD;
- partial sums, ``size_t`` grid-stride indices through blockDim.x and gridDim.x,
  ``__ldg(&x[i])``, an unsigned tree from blockDim.x / 2 (partial_sum): VEC was missing
  (the address of ``x[i]`` taken: the ``__ldg``'s); now as partial_sum;
- partial sums of squares, constexpr warp and block sizes under ``#pragma unroll``, a shared
  slot a warp (partial_sum): the reduction read neither the loop body's local before its
  accumulation, ``{ const float v = x[i]; acc += v * v; }``, nor the last warp's ``lane <
  kWarps`` with ``constexpr int kWarps = kThreads / kWarp;`` (BLOCK_THREADS, VEC,
  ITEMS_PER_THREAD by the per-element families, with n % VEC == 0); both read now:
  BLOCK_THREADS, GRID_BLOCKS, VEC, ITEMS_PER_THREAD, FINAL as partial_sum;
- a 5-point heat step, edges clamped through ``max``/``min``, an ``AT`` macro (stencil5):
  BLOCK_X, BLOCK_Y, ITEMS_X, ITEMS_Y (the rows family's OUT_Y, OUT_X missing: it reads no
  neighbour row through a clamped index, and says nothing);
- a 7-point 3-D Laplacian, zero outside through ternaries, ``size_t`` stride locals
  (stencil3d): as stencil3d;
- a row argmax, a warp a row on a (32, 4) block, (value, index) pairs through xor shuffles,
  ``__ldg(xr + c)`` (row_top1 / warp rows): VEC and ITEMS_PER_THREAD were missing (the lane
  loop's only read was not a subscript); ``__ldg(P + I)`` and ``*(P + I)`` now read as
  ``P[I]``: WARPS_PER_BLOCK, LANES, VEC, ITEMS_PER_THREAD;
- a gather of rows by index, ``float4`` through ``reinterpret_cast``, one block a row
  (embedding): BLOCK_THREADS only (ITEMS_PER_THREAD, ROW_SPLIT missing);
- a transpose through a padded tile, ``#define TILE_DIM``, index macros, the tile's rows by
  ``k += blockDim.y`` from 0 (transpose): refused with the loop's line;
- bias + tanh GELU on half inputs, a grid-stride ``size_t`` loop (gelu): as gelu;
- RMS norm, a block a row, constexpr warp count under ``#pragma unroll``, an early return
  (rms_norm): as rms_norm;
- a row logsumexp, a warp a row, an online (max, sum) walking a bumped pointer
  ``for (; p < end; p += 32)`` (row_logsumexp): WARPS_PER_BLOCK, LANES (VEC and
  ITEMS_PER_THREAD missing: the walk starts at a run-time offset);
- an inclusive row scan, a block a row, chunks in a ``while``, an up-shuffle scan a warp
  (row_cumsum): as row_cumsum.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import held_back_unseen8
import pytest
from held_back_harness import same_as_written
from helpers_templater import FULL_MATRIX, end_configs, host_configs, needs_gxx
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_warp2 import SHFL_SYNC

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource, inline_calls
from workbench.templater.loop_forms import counted_whiles

HERE = Path(__file__).resolve().parent / "spellings_s23b"

#: The CUDA built-ins these kernels and their lifts use that the unseen3 host prelude has no
#: form of (set 8's half type and up shuffle, a broadcast's __shfl_sync).
HOST_EXTRAS = "static const int warpSize = 32;\n" + held_back_unseen8.HOST_EXTRAS + SHFL_SYNC
_HALF_HEADER = "#include <cuda_fp16.h>"

#: folder -> the knobs its lift holds, in order, and hand-picked mixes (over the default)
#: the all-ends configs do not reach.
LIFTS: dict[str, tuple[tuple[str, ...], list[dict[str, int]]]] = {
    "s23b_rowsum_while_helper": (("WARPS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD",
                                  "MIN_BLOCKS_PER_SM"),
                                 [{"WARPS_PER_BLOCK": 2, "LANES": 8, "VEC": 4,
                                   "ITEMS_PER_THREAD": 2}]),
    "s23b_partials_sizet_blockdim": (("BLOCK_THREADS", "GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD",
                                      "FINAL", "MIN_BLOCKS_PER_SM"),
                                     [{"BLOCK_THREADS": 1024, "GRID_BLOCKS": 132, "VEC": 4,
                                       "ITEMS_PER_THREAD": 2, "FINAL": 1}]),
    "s23b_sumsq_warp_slots_constexpr": (("BLOCK_THREADS", "GRID_BLOCKS", "VEC",
                                         "ITEMS_PER_THREAD", "FINAL", "MIN_BLOCKS_PER_SM"),
                                        [{"BLOCK_THREADS": 1024, "GRID_BLOCKS": 132, "VEC": 2,
                                          "ITEMS_PER_THREAD": 4, "FINAL": 0}]),
    "s23b_heat2d_clamp_macro": (("BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y",
                                 "MIN_BLOCKS_PER_SM"),
                                [{"BLOCK_X": 16, "BLOCK_Y": 4, "ITEMS_X": 2, "ITEMS_Y": 4}]),
    "s23b_lap3d_zero_ternary": (("BLOCK_X", "BLOCK_Y", "BLOCK_Z", "Z_ITEMS",
                                 "MIN_BLOCKS_PER_SM"),
                                [{"BLOCK_X": 16, "BLOCK_Y": 2, "BLOCK_Z": 4, "Z_ITEMS": 4}]),
    "s23b_argmax_warp_pairs": (("WARPS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD",
                                "MIN_BLOCKS_PER_SM"),
                               [{"WARPS_PER_BLOCK": 2, "LANES": 8, "VEC": 4,
                                 "ITEMS_PER_THREAD": 2}]),
    "s23b_gather_rows_float4": (("BLOCK_THREADS", "MIN_BLOCKS_PER_SM"),
                                [{"BLOCK_THREADS": 96}]),
    "s23b_bias_gelu_half": (("BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"),
                            [{"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2}]),
    "s23b_rmsnorm_block_slots": (("BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD",
                                  "MIN_BLOCKS_PER_SM"),
                                 [{"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2}]),
    "s23b_lse_ptr_bump": (("WARPS_PER_BLOCK", "LANES", "LDG", "MIN_BLOCKS_PER_SM"),
                          [{"WARPS_PER_BLOCK": 8, "LANES": 4, "LDG": 1}]),
    "s23b_rowscan_warp_chunks": (("BLOCK_THREADS", "ITEMS_PER_THREAD", "PAD",
                                  "MIN_BLOCKS_PER_SM"),
                                 [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 3, "PAD": 1}]),
}



def _folder(name: str) -> KernelFolder:
    return load_kernel_folder(HERE / name)


def _host(source: str) -> str:
    return HOST_EXTRAS + source.replace(_HALF_HEADER, "")


def _threads(template: Any, config: dict[str, Any], env: dict[str, Any]) -> int:
    x, y, z = template.launch_for(config, env).block
    return int(x) * int(y) * int(z)


@pytest.mark.parametrize("name", sorted(LIFTS))
def test_the_lift_holds_the_family_knobs(name: str) -> None:
    result = offline_template(_folder(name))
    assert tuple(p.name for p in result.lifted.params) == LIFTS[name][0], result.notes


@pytest.mark.parametrize("name", sorted(LIFTS))
def test_no_config_launches_more_than_1024_threads(name: str) -> None:
    kf = _folder(name)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    over = [c for c in template.space(env) if _threads(template, dict(c), env) > 1024]
    assert not over, over[:3]


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(LIFTS))
def test_every_checked_config_computes_what_the_kernel_as_written_computes(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(name)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, LIFTS[name][1])
    inputs = _inputs(kf)
    want = _run(kf, _host(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    runs = [(_host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        _assert_same(kf, got, want, f"{name} at {config}")


def test_a_warp_helper_is_inlined_and_its_while_offset_loop_read_as_its_for() -> None:
    """The helper's shuffles reach the warp family only written into the kernel: the call
    ``s = warp_sum(s);`` is inlined (its type deduced from ``s``), and its ``int offset =
    16; while (offset) {..; offset >>= 1;}`` is the offset loop ``for (..; offset; offset
    >>= 1)``, every line kept."""
    notes = offline_template(_folder("s23b_rowsum_while_helper")).notes
    assert any(n.startswith("INLINE: applied: warp_sum inlined into s23b_rowsum_while_helper: "
                            "T = float (from s)") for n in notes), notes
    source = "__global__ void k(float* y) {\n  int o = 16;\n  float v = y[0];\n" \
             "  while (o) {\n    v += 1.0f;\n    o >>= 1;\n  }\n  y[0] = v;\n}\n"
    done = counted_whiles(InlinedSource(source, "k.cu"), "k").text
    assert "for (int o = 16; o; o >>= 1) {" in done, done
    assert done.count("\n") == source.count("\n")


@pytest.mark.parametrize("step", ["o <<= 1;", "o *= 2;", "o = o / 2 + 1;"])
def test_a_while_stepped_other_than_by_a_step_or_a_halving_stays_as_written(step: str) -> None:
    source = "__global__ void k(float* y) {\n  int o = 1;\n  float v = y[0];\n" \
             f"  while (o < 32) {{\n    v += 1.0f;\n    {step}\n  }}\n  y[0] = v;\n}}\n"
    assert counted_whiles(InlinedSource(source, "k.cu"), "k").text == source


def test_a_warp_helper_called_twice_is_inlined_at_each_call() -> None:
    """A helper that keeps no state (no __shared__ or static storage) is inlined at each of
    its calls, a copy each (session 35: inline_site._only_call; one with __shared__ memory
    stays a call, tests/test_s35_robust.py)."""
    folder = _folder("s23b_rowsum_while_helper")
    source = (HERE / folder.name / f"{folder.name}.cu").read_text()
    twice = source.replace("  s = warp_sum(s);\n", "  s = warp_sum(s);\n  s = warp_sum(s);\n")
    assert twice != source
    done = inline_calls(twice, folder.name, "k.cu")
    body = done.text[done.text.index(f"void {folder.name}("):]
    assert "= warp_sum(s)" not in body
    assert [f.applied for f in done.findings if f.transform == "INLINE"] == [True, True]


@needs_gxx
def test_a_transpose_whose_tile_rows_start_at_zero_batches_its_tiles(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """The tied-tile family refused its load loop (``k`` from 0 by blockDim.y); a CTA per
    data tile is a tile batch now (tile_batch, 191c333): TX x TY of the written CTAs in one,
    each the kernel as written, bit for bit on the host at the default, a mix and the first and
    last all-ends configs (every one under WORKBENCH_FULL_MATRIX=1)."""
    kf = _folder("s23b_transpose_macro_tile")
    result = offline_template(kf)
    assert {"TX", "TY", "PAD"} <= {p.name for p in result.lifted.params}, result.notes
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(template, env)
    mix = {**dict(template.default_config()), "TX": 2, "TY": 2, "PAD": 1}
    assert template.space(env).rejection(mix) is None
    configs = [dict(template.default_config()), mix, *(ends if FULL_MATRIX else [ends[0], ends[-1]])]
    assert same_as_written(kf, template, configs, _host, tmp_path, host_flags) == len(configs)


@pytest.mark.parametrize(("old", "new", "vec"), [
    ("__ldg(xr + c)", "*(xr + c)", True),  # a dereference reads the element too
    ("__ldg(xr + c)", "__ldg(xr + c + 0)", False),  # (xr + c) + 0: no P + I to read
], ids=["deref", "offset-after"])
def test_a_pointer_read_is_a_lane_of_the_vector_only_as_p_plus_i(old: str, new: str,
                                                                 vec: bool,
                                                                 tmp_path: Path) -> None:
    folder = shutil.copytree(HERE / "s23b_argmax_warp_pairs", tmp_path / "argmax")
    cu = folder / "s23b_argmax_warp_pairs.cu"
    assert cu.read_text().count(old) == 1
    cu.write_text(cu.read_text().replace(old, new))
    lifted = offline_template(load_kernel_folder(folder)).lifted
    assert ("VEC" in {p.name for p in lifted.params}) == vec, lifted.notes


@needs_gxx
@pytest.mark.timeout(600)
def test_a_warp_count_folded_from_other_constants_reads_the_stage(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """``constexpr int kWarps = kThreads / kWarp;`` is 16 (file constants fold over the
    others): with the squares summed in one statement the last warp's ``lane < kWarps``
    stage is read and written anew (GRID_BLOCKS, FINAL), every checked config on the host
    against the kernel as written (the folder's own spelling, with its body's local, is
    checked by the tests above)."""
    name = "s23b_sumsq_warp_slots_constexpr"
    folder = shutil.copytree(HERE / name, tmp_path / name)
    cu = folder / f"{name}.cu"
    body = "{\n    const float v = x[i];\n    acc += v * v;\n  }"
    assert cu.read_text().count(body) == 1
    cu.write_text(cu.read_text().replace(body, "acc += x[i] * x[i];"))
    kf = load_kernel_folder(folder)
    template = offline_template(kf).template
    assert [p.name for p in template.params] == [
        "BLOCK_THREADS", "GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD", "FINAL",
        "MIN_BLOCKS_PER_SM"]
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(template, env)
    mix = {**dict(template.default_config()), "BLOCK_THREADS": 1024, "GRID_BLOCKS": 132,
           "VEC": 4, "ITEMS_PER_THREAD": 2, "FINAL": 0}
    assert template.space(env).rejection(mix) is None
    configs = [dict(template.default_config()), mix, *(ends if FULL_MATRIX else [ends[0], ends[-1]])]
    inputs = _inputs(kf)
    want = _run(kf, _host(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    runs = [(_host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        _assert_same(kf, got, want, f"{name} (one statement) at {config}")


def test_a_loop_body_local_that_is_not_const_keeps_the_reduction_out(tmp_path: Path) -> None:
    """Only ``const`` locals are written before each copy of the accumulation (a local the
    body may write is state the copies would share): ``float v`` leaves the reduction
    refused with its loop, the per-element families lifting as before."""
    name = "s23b_sumsq_warp_slots_constexpr"
    folder = shutil.copytree(HERE / name, tmp_path / name)
    cu = folder / f"{name}.cu"
    assert cu.read_text().count("const float v = x[i];") == 1
    cu.write_text(cu.read_text().replace("const float v = x[i];", "float v = x[i];"))
    lifted = offline_template(load_kernel_folder(folder)).lifted
    assert "GRID_BLOCKS" not in {p.name for p in lifted.params}
    assert any(n.startswith("REDUCTION: not applied") for n in lifted.notes), lifted.notes
