"""First contact with held-back set 10's nbody_accel (issue 28): a tiled all-pairs walk whose
author wrote ``#pragma unroll 8`` on the walk of a staged tile.

On the H100 the lift was BLOCK_THREADS and MIN_BLOCKS_PER_SM (1.56x); the expert's THREADS,
ITEMS, JSPLIT, UNROLL reached 2.47x, its pick 128 threads, a body a thread, four rows of
threads splitting each tile, unrolled by 16. The author's unroll pragma became a knob only
where no other transform lifted anything (:func:`.named.lift_named`), so beside the lifted
block it stayed 8: an unroll factor changes no result, so it is now lifted beside any lift.
The pair term, a lambda with statements, is written into its call (:mod:`.inline_bodies`),
so the staged walk (:mod:`.staged_walk`) reads the running sums and lifts JSPLIT (rows of
threads sharing one body's walk of a staged tile, their sums added in row order) and ITEMS
(bodies a thread, BLOCK_THREADS apart, sharing each staged body): the expert's pick is
BLOCK_THREADS 128, ITEMS 1, JSPLIT 4 at UNROLL 8 (its 16 is above the unroll range).

On the host (g++) the folder and a second spelling (a device helper instead of a lambda, a
constexpr block, ``#pragma unroll(4)``, an if / else tile load) compute at every checked
config what they compute as written.

A third spelling, every size the literal 128, showed a wrong lift: the block lift resized
the shared tile and its load but left the walk's ``start += 128`` and ``q < 128``, so at 64
threads half the outputs were wrong on the host. A block whose lift would resize a shared
array while a literal of its size stays in the kernel is now kept as written, with the line.
A fourth, one output a body, was vectorized at its store after the walk (the index's
declaration moved into the store, the sum the thread's one value): a one-element region now
needs nothing before its guard to read its index or set a local it reads from the thread's
place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen10
import numpy as np
import pytest
from held_back_harness import BENCHMARKS
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs
from test_templater_const_via import write_folder

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult
from workbench.templater.semantic import lift_kernel

NBODY = BENCHMARKS / "corpus_compute_unseen10" / "nbody_accel"

#: The same all-pairs walk spelled otherwise: the pair term a device helper, the block a
#: constexpr, the tile loaded by an if / else, the unroll pragma with parentheses, two
#: field components a body.
FIELD2 = """\
constexpr int kBlock = 128;

__device__ __forceinline__ float pair_weight(float4 a, float4 b) {
  const float rx = b.x - a.x, ry = b.y - a.y, rz = b.z - a.z;
  return b.w * rsqrtf(rx * rx + ry * ry + rz * rz + 0.01f);
}

extern "C" __global__ void k(float* field, const float* pts, int n) {
  __shared__ float4 stage[kBlock];
  const float4* pt = (const float4*)pts;
  int t = threadIdx.x;
  int p = t + kBlock * blockIdx.x;
  float4 self = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (p < n) self = pt[p];
  float fx = 0.0f, fy = 0.0f;
  for (int start = 0; start < n; start += kBlock) {
    if (start + t < n) stage[t] = pt[start + t];
    else stage[t] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    #pragma unroll(4)
    for (int q = 0; q < kBlock; q++) {
      const float c = pair_weight(self, stage[q]);
      fx += c * (stage[q].x - self.x);
      fy += c * (stage[q].y - self.y);
    }
    __syncthreads();
  }
  if (p < n) {
    field[2 * p] = fx;
    field[2 * p + 1] = fy;
  }
}
"""


def _field2(root: Path) -> KernelFolder:
    return write_folder(root / "field2", FIELD2, ["ceil_div(n, 128)"], ["128"],
                        [("field", "f32", "out", ["n", 2]), ("pts", "f32", "in", ["n", 4]),
                         ("n", "i32", "scalar", "n")], {"n": 300}, [])


def _knobs(result: TemplaterResult) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in result.lifted.params}


# -- the lift ------------------------------------------------------------------------------


def test_the_folder_lifts_the_tile_walks_unroll_beside_the_block() -> None:
    result = offline_template(load_kernel_folder(NBODY))
    knobs = _knobs(result)
    assert list(knobs) == ["BLOCK_THREADS", "UNROLL", "ITEMS", "JSPLIT", "MIN_BLOCKS_PER_SM"]
    assert knobs["UNROLL"]["values"] == [1, 2, 4, 8] and knobs["UNROLL"]["default"] == 8
    assert knobs["JSPLIT"]["values"] == [1, 2, 4, 8] and knobs["ITEMS"]["values"] == [1, 2, 4]
    assert result.lifted.block == ("BLOCK_THREADS", "JSPLIT")
    assert result.lifted.grid == ("ceil_div(n, BLOCK_THREADS * ITEMS)",)
    origin = next(p.origin for p in result.lifted.params if p.name == "UNROLL")
    assert origin == "baseline.cu:29: #pragma unroll 8"
    source = result.lifted.source
    assert "#pragma unroll (wb_unroll)\n    for (int k = 0; k < TILE; ++k)" in source
    assert "constexpr int wb_unroll = UNROLL;" in source
    # the expert's pick as far as the lift's knobs spell it (128 threads, a body a thread,
    # four rows; its unroll 16 above the range: 8) is in the space at the timed shape
    kf = load_kernel_folder(NBODY)
    pick = {"BLOCK_THREADS": 128, "UNROLL": 8, "ITEMS": 1, "JSPLIT": 4, "MIN_BLOCKS_PER_SM": 0}
    assert result.template.space(kf.env("large", "fp32")).rejection(pick) is None


def test_another_spelling_lifts_the_same_knobs(tmp_path: Path) -> None:
    result = offline_template(_field2(tmp_path))
    knobs = _knobs(result)
    assert list(knobs) == ["BLOCK_THREADS", "UNROLL", "ITEMS", "JSPLIT", "MIN_BLOCKS_PER_SM"], \
        result.notes
    assert knobs["UNROLL"]["values"] == [1, 2, 4, 8] and knobs["UNROLL"]["default"] == 4
    # the walk's bound over the staged slots follows the block (block_slots, 6225b47): the
    # same number kBlock names, now that kBlock reads BLOCK_THREADS
    assert "#pragma unroll (wb_unroll)\n    for (int q = 0; q < BLOCK_THREADS; q++)" in \
        result.lifted.source
    assert "constexpr int kBlock = BLOCK_THREADS;" in result.lifted.source


def test_a_bare_unroll_pragma_beside_a_lifted_block_stays_the_compilers_choice() -> None:
    """``#pragma unroll`` with no count names no factor: no knob, the line as written."""
    source = FIELD2.replace("#pragma unroll(4)", "#pragma unroll")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert [p.name for p in lifted.params] == ["BLOCK_THREADS", "ITEMS", "JSPLIT",
                                               "MIN_BLOCKS_PER_SM"]
    assert "    #pragma unroll\n    for (int q = 0;" in lifted.source


# -- the host simulation -------------------------------------------------------------------


def _same_or_close(kf: KernelFolder, config: dict[str, Any], got: dict[str, np.ndarray],
                   plain: dict[str, np.ndarray]) -> None:
    """As the folder compares them with one row (JSPLIT 1: every sum in the order written);
    with rows, whose sums are added row by row, within 1e-5 relative and absolute (the
    second spelling's field moved by at most 2.4e-6, on a component of -0.052)."""
    if config.get("JSPLIT", 1) == 1:
        _assert_same(kf, got, plain, f"lift at {config}")
        return
    for name, want in plain.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} of the lift at {config}")


def _checked(result: TemplaterResult, kf: KernelFolder,
             picks: list[dict[str, int]]) -> list[dict[str, Any]]:
    """The default, the all-ends configs (the first and last without
    ``WORKBENCH_FULL_MATRIX=1``) and the mixes, each valid at the check shape."""
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(result.template, env)
    assert ends
    space = result.template.space(env)
    base = dict(result.template.default_config())
    mixes = [{**base, **pick} for pick in picks]
    for mix in mixes:
        assert space.rejection(mix) is None, (mix, space.rejection(mix))
    picked = [base, *(ends if FULL_MATRIX else [ends[0], ends[-1]]), *mixes]
    return [c for i, c in enumerate(picked) if c not in picked[:i]]


def _host_runs(kf: KernelFolder, result: TemplaterResult,
               configs: list[dict[str, Any]], work: Path) -> list[dict[str, np.ndarray]]:
    """The plain kernel's outputs first, then each config's, from one host compile."""
    env = kf.env(kf.check_shape, "fp32")
    host = held_back_unseen10.SET.host_source
    runs = [(host(kf.baseline.render({}, "fp32").source), kf.baseline.launch_for({}, env))]
    runs += [(host(result.template.render(c, "fp32").source),
              result.template.launch_for(c, env)) for c in configs]
    return folder_runs(kf, runs, _inputs(kf), work)


#: Mixes over the default: the expert's 128 threads not unrolled with four blocks an SM; 64
#: threads with two bodies each (300 bodies in three blocks, the last of 44) unrolled by 2;
#: both with one row (the sums in body order: bit for bit where the folder asks it). The
#: block keeps to powers of two beside the rows (the space's size)
MIXES = [{"BLOCK_THREADS": 128, "UNROLL": 1, "MIN_BLOCKS_PER_SM": 4},
         {"BLOCK_THREADS": 64, "UNROLL": 2, "MIN_BLOCKS_PER_SM": 0, "ITEMS": 2}]
#: The expert's pick (four rows of 128, a body a thread) and rows with items: two rows of 256
#: threads with two bodies each, eight rows of 32 with four
SPLITS = [{"BLOCK_THREADS": 128, "UNROLL": 8, "ITEMS": 1, "JSPLIT": 4},
          {"BLOCK_THREADS": 256, "UNROLL": 2, "ITEMS": 2, "JSPLIT": 2},
          {"BLOCK_THREADS": 32, "UNROLL": 1, "ITEMS": 4, "JSPLIT": 8, "MIN_BLOCKS_PER_SM": 4}]


@pytest.mark.timeout(600)
def test_the_folder_computes_what_the_kernel_as_written_computes(tmp_path: Path) -> None:
    kf = load_kernel_folder(NBODY)
    result = offline_template(kf)
    configs = _checked(result, kf, MIXES + SPLITS)
    assert {c["JSPLIT"] for c in configs} == {1, 2, 4, 8} and \
        {c["ITEMS"] for c in configs} == {1, 2, 4}
    assert {c["UNROLL"] for c in configs} >= {1, 8} and \
        {c["BLOCK_THREADS"] for c in configs} >= {32, 1024}
    plain, *got = _host_runs(kf, result, configs, tmp_path)
    assert not np.isnan(plain["acc"]).any() and np.abs(plain["acc"]).max() > 0
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, plain, f"lift at {config}")


@pytest.mark.timeout(600)
def test_the_second_spelling_computes_what_it_computes_as_written(tmp_path: Path) -> None:
    """Bit for bit with one row (the folder's tolerance is 0): every thread still sums its
    pairs in body order, an item's as a thread's; a massless pad body adds a zero. With
    rows the sums are added row by row (:func:`_same_or_close`)."""
    kf = _field2(tmp_path)
    result = offline_template(kf)
    configs = _checked(result, kf, [*MIXES, {**SPLITS[1], "BLOCK_THREADS": 64}, SPLITS[2]])
    plain, *got = _host_runs(kf, result, configs, tmp_path / "runs")
    assert not np.isnan(plain["field"]).any() and np.abs(plain["field"]).max() > 0
    for config, outputs in zip(configs, got, strict=True):
        _same_or_close(kf, config, outputs, plain)


# -- a tile the block lift would leave half lifted -----------------------------------------

#: The all-pairs walk with every size a literal: the tile's extent is the block's size, but
#: so are the walk over tiles (``start += 128``) and the loop over a tile (``q < 128``).
LITERAL = """\
extern "C" __global__ void k(float* phi, const float* pts, int n) {
  __shared__ float stage[128];
  int t = threadIdx.x;
  int p = t + 128 * blockIdx.x;
  const float self = p < n ? pts[p] : 0.0f;
  float sum = 0.0f;
  for (int start = 0; start < n; start += 128) {
    stage[t] = start + t < n ? pts[start + t] : 0.0f;
    __syncthreads();
    for (int q = 0; q < 128; q++) sum += self * stage[q];
    __syncthreads();
  }
  if (p < n) {
    phi[2 * p] = sum;
    phi[2 * p + 1] = self;
  }
}
"""


def test_a_tile_whose_walk_keeps_the_literal_block_size_keeps_the_block() -> None:
    """Lifted, the tile and its load followed BLOCK_THREADS while the walk kept 128: at 64
    threads half of the 600 outputs were wrong on the host (the walk read past the tile and
    loaded half of each 128)."""
    lifted = lift_kernel(LITERAL, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "BLOCK_THREADS" not in [p.name for p in lifted.params]
    assert lifted.block == ("128",) and "__shared__ float stage[128];" in lifted.source
    assert any(n.startswith("BLOCK_THREADS: not applied: `start += 128` keeps the literal "
                            "128 in a kernel whose shared array of 128 would follow the "
                            "block") and "(line 7)" in n for n in lifted.notes), lifted.notes


def test_the_literal_tile_lifts_once_its_walk_says_the_block_size() -> None:
    """The same kernel with the walk's sizes spelled by the thread count: all follow."""
    source = LITERAL.replace("start += 128", "start += blockDim.x").replace(
        "q < 128", "q < blockDim.x")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "BLOCK_THREADS" in [p.name for p in lifted.params], lifted.notes
    assert "__shared__ float wb_rows_stage[BLOCK_THREADS * JSPLIT];" in lifted.source
    assert "float* const stage = wb_rows_stage + threadIdx.y * (blockDim.x);" in lifted.source


def test_a_stray_literal_without_a_lifted_tile_still_lets_the_block_lift() -> None:
    """No shared array follows the block: the literal is a number, listed and kept."""
    source = """\
extern "C" __global__ void k(float* y, const float* x, int n) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)(i % 128);
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "BLOCK_THREADS" in [p.name for p in lifted.params]
    assert "(float)(i % 128)" in lifted.source


@pytest.mark.timeout(600)
def test_the_tile_spelled_by_the_thread_count_computes_as_written(tmp_path: Path) -> None:
    source = LITERAL.replace("start += 128", "start += blockDim.x").replace(
        "q < 128", "q < blockDim.x")
    kf = write_folder(tmp_path / "tiles", source, ["ceil_div(n, 128)"], ["128"],
                      [("phi", "f32", "out", ["n", 2]), ("pts", "f32", "in", ["n"]),
                       ("n", "i32", "scalar", "n")], {"n": 300}, [])
    result = offline_template(kf)
    configs = _checked(result, kf, [{"BLOCK_THREADS": 64}])
    assert {c["BLOCK_THREADS"] for c in configs} >= {32, 64, 1024}
    plain, *got = _host_runs(kf, result, configs, tmp_path / "runs")
    for config, outputs in zip(configs, got, strict=True):
        _same_or_close(kf, config, outputs, plain)


# -- a one-element region after per-thread work -------------------------------------------

#: The walk with the tile spelled by the thread count and one output a body: the store
#: ``if (p < n) phi[p] = sum;`` looks like a one-element region, but the body's place is read
#: before it (``if (p < n) self = pts[p];``) and its sum was made from it.
PLACED = """\
extern "C" __global__ void k(float* phi, const float* pts, int n) {
  __shared__ float stage[128];
  int t = threadIdx.x;
  int p = t + 128 * blockIdx.x;
  float self = 0.0f;
  if (p < n) self = pts[p];
  float sum = 0.0f;
  for (int start = 0; start < n; start += blockDim.x) {
    stage[t] = start + t < n ? pts[start + t] : 0.0f;
    __syncthreads();
    for (int q = 0; q < blockDim.x; q++) sum += self * stage[q];
    __syncthreads();
  }
  if (p < n) phi[p] = sum;
}
"""


def _vec_notes(source: str, block: str = "128") -> tuple[list[str], list[str]]:
    lifted = lift_kernel(source, entry="k", grid=[f"ceil_div(n, {block})"], block=[block],
                         scalars={"n": "n"})
    return [p.name for p in lifted.params], [n for n in lifted.notes if n.startswith("VEC")]


def test_a_store_after_the_walk_is_no_one_element_region() -> None:
    """Vectorized, the index's declaration moved into the store (``p`` undeclared where the
    body is read: no config compiled) and every lane stored the thread's one sum."""
    params, notes = _vec_notes(PLACED)
    assert params[0] == "BLOCK_THREADS" and "VEC" not in params
    assert notes == ["VEC: not applied: `if (p < n) self = pts[p];` reads p before its "
                     "guard: the index becomes each item's own inside the region (line 6)"]


def test_a_sum_made_from_the_threads_place_keeps_its_element() -> None:
    """The body read through its own expression (no read of ``p`` before the guard): the
    sum still holds the thread's one body. Vectorized (before this rule), 299 of 300
    outputs were wrong at VEC 2 and 172 at ITEMS_PER_THREAD 2 on the host."""
    source = PLACED.replace("if (p < n) self = pts[p];",
                            "self = pts[min(t + 128 * (int)blockIdx.x, n - 1)];")
    params, notes = _vec_notes(source)
    assert "VEC" not in params
    assert notes == ["VEC: not applied: the region reads sum, set before it from the "
                     "thread's place: each vector lane and item would read the thread's one "
                     "value (line 14)"]


def test_locals_every_lane_shares_still_let_the_region_vectorize() -> None:
    """A scale from the parameters and a row from blockIdx.y are every element's."""
    source = """\
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x,
                             float alpha, int n) {
  const float a = 2.0f * alpha;
  const int row = blockIdx.y;
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) y[row * n + i] = a * x[row * n + i];
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 256)", "4"], block=["256"],
                         scalars={"n": "n", "alpha": "1"})
    assert "VEC" in [p.name for p in lifted.params], lifted.notes
    assert "VEC: applied: region over i vectorized (line 6)" in lifted.notes
