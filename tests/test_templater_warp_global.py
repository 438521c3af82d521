"""Warp-per-row kernels whose block size only the launch says (warp.py, warp_global.py).

A row named by the global warp index, ``(blockIdx.x * blockDim.x + threadIdx.x) / 32``
(through a local global thread index whose ``% 32`` is the lane, or in place with ``>> 5``),
or by ``blockIdx.x * F + warp`` with F a ``constexpr`` in a namespace (the corpus's
row_logsumexp, whose launch of 256 threads appears nowhere in the kernel) lifts LANES,
WARPS_PER_BLOCK and VEC; the default and far configs compute on the host what the kernel as
written computes. A global thread index used for anything but the row and the lane, and a
constant F the kernel reads elsewhere, are refused with the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import corner_configs, host_sample, lifted_template
from test_corpus_unseen3 import _SPILLS, _ptxas_log
from test_templater_warp2 import COLS, ENV, ROWS, host_outputs, lift, params

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import lift_kernel, offline_template

LSE = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen4" / \
    "row_logsumexp"

# name -> (source, grid, block, (role, element count) per pointer argument)
CASES: dict[str, tuple[str, list[str], list[str], list[tuple[str, int]]]] = {
    # the global thread index a local; the row its / 32, the lane its % 32; an if-block guard
    "maxabs_gtid_local": (r"""
extern "C" __global__ void k(float* peak, const float* __restrict__ a, int rows, int cols) {
  int gtid = blockIdx.x * blockDim.x + threadIdx.x;
  int row = gtid / 32;
  int lane = gtid % 32;
  if (row < rows) {
    float best = 0.0f;
    for (int c = lane; c < cols; c += 32) best = fmaxf(best, fabsf(a[(size_t)row * cols + c]));
    for (int o = 16; o > 0; o >>= 1) best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, o));
    if (lane == 0) peak[row] = best;
  }
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", ROWS), ("in", ROWS * COLS)]),
    # in place with >> 5 (terms in the other order), the lane `& 31`, shfl_down to lane 0,
    # a commented #define the kernel never reads
    "matvec_inline_shift": (r"""
#define ROWS_PER_CTA 2  // 64 threads, a warp a row
extern "C" __global__ void k(float* y, const float* __restrict__ m, const float* __restrict__ v,
                             int rows, int cols) {
  const int r = (threadIdx.x + blockDim.x * blockIdx.x) >> 5;
  const int l = threadIdx.x & 31;
  if (r >= rows) return;
  const float* mr = m + (long long)r * cols;
  float acc = 0.0f;
  for (int c = l; c < cols; c += 32) acc += mr[c] * v[c];
  for (int o = 16; o >= 1; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (l == 0) y[r] = acc;
}
""", ["ceil_div(rows, 2)"], ["64"], [("out", ROWS), ("in", ROWS * COLS), ("in", COLS)]),
    # warpSize for the lane, the warp and the steps; the block's warps read as
    # blockDim.x / warpSize in the row's factor
    "l2_warpsize_blockdim_factor": (r"""
extern "C" __global__ void k(float* out, const float* __restrict__ x, int rows, int cols) {
  const int warp = threadIdx.x / warpSize;
  const int lane = threadIdx.x % warpSize;
  const int row = blockIdx.x * (blockDim.x / warpSize) + warp;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += warpSize)
    s += x[(size_t)row * cols + c] * x[(size_t)row * cols + c];
  for (int o = warpSize / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) out[row] = sqrtf(s);
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", ROWS), ("in", ROWS * COLS)]),
}
#: what the host simulation needs of CUDA's built-in warpSize
WARP_SIZE = "static const int warpSize = 32;\n"


def test_row_logsumexp_lifts_lanes_warps_and_vectors() -> None:
    result = offline_template(load_kernel_folder(LSE))
    knobs = {p.name: dict(p.spec) for p in result.lifted.params}
    assert {"LANES", "WARPS_PER_BLOCK", "VEC"} <= set(knobs), result.notes
    assert knobs["WARPS_PER_BLOCK"]["default"] == 8 and knobs["LANES"]["default"] == 32
    assert result.lifted.grid == ("ceil_div(rows, WARPS_PER_BLOCK * (32 // LANES))",)
    assert result.lifted.block == ("32 * WARPS_PER_BLOCK",)
    # the expert's lanes, warps and widths are all in the space
    assert knobs["LANES"]["kind"] == "pow2" and knobs["LANES"]["min"] <= 4
    assert {1, 2, 4} <= set(knobs["VEC"]["values"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_global_warp_spellings_lift_the_warp_knobs(name: str) -> None:
    source, grid, block, _args = CASES[name]
    lifted = lift(source, grid, block)
    knobs = params(lifted)
    assert {"LANES", "WARPS_PER_BLOCK", "VEC"} <= set(knobs), lifted.notes
    assert knobs["WARPS_PER_BLOCK"]["default"] == int(block[0]) // 32
    assert lifted.grid == ("ceil_div(rows, WARPS_PER_BLOCK * (32 // LANES))",)
    assert lifted.block == ("32 * WARPS_PER_BLOCK",)
    assert "/ LANES)" in lifted.source and "% LANES)" in lifted.source
    body = lifted.source.split("extern")[1]
    assert "/ 32" not in body and "warpSize" not in body  # no warp of 32 lanes is left


def _configs(template: Any) -> list[dict[str, Any]]:
    """The default, the corners, then 4 lanes a row with float4 and 32 warps, then 8 lanes
    with float2 in 2 warps (each valid at ROWS x COLS)."""
    default = dict(template.default_config())
    return [*corner_configs(template, ENV),
            {**default, "LANES": 8, "VEC": 2, "WARPS_PER_BLOCK": 2},
            {**default, "LANES": 4, "VEC": 4, "ITEMS_PER_THREAD": 4, "WARPS_PER_BLOCK": 32}]


@pytest.mark.parametrize("name", sorted(CASES))
def test_global_warp_spellings_compute_as_written_on_host(name: str, tmp_path: Path) -> None:
    source, grid, block, args = CASES[name]
    template = lifted_template(lift(source, grid, block))
    blocks = -(-ROWS // (int(block[0]) // 32))
    want = host_outputs(tmp_path, "as_written", WARP_SIZE + source, [blocks], [int(block[0])],
                        args)
    assert not np.isnan(want).any()
    space = template.space(dict(ENV))
    for i, config in enumerate(host_sample(_configs(template))):
        assert space.rejection(config) is None, config
        launch = template.launch_for(config, ENV)
        got = host_outputs(tmp_path, f"c{i}", WARP_SIZE + template.render(config, "fp32").source,
                           launch.grid, launch.block, args)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=str(config))


def test_row_logsumexp_computes_as_written_on_host(tmp_path: Path) -> None:
    result = offline_template(load_kernel_folder(LSE))
    template = result.template
    source = (LSE / "baseline.cu").read_text()
    args = [("out", ROWS), ("in", ROWS * COLS)]
    want = host_outputs(tmp_path, "as_written", source, [-(-ROWS // 8)], [256], args,
                        entry="row_logsumexp")
    assert not np.isnan(want).any()
    for i, config in enumerate(host_sample(_configs(template))):
        launch = template.launch_for(config, ENV)
        got = host_outputs(tmp_path, f"c{i}", template.render(config, "fp32").source,
                           launch.grid, launch.block, args, entry="row_logsumexp")
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=str(config))


@pytest.mark.parametrize(("name", "old", "new", "why", "at"), [
    ("maxabs_gtid_local", "if (lane == 0) peak[row] = best;",
     "if (lane == 0) peak[row] = best + 0.0f * gtid;",
     "the global thread index `gtid` is used in", 10),
    ("matvec_inline_shift", "const int r = (threadIdx.x + blockDim.x * blockIdx.x) >> 5;",
     "const int r = (threadIdx.x + blockDim.x * blockIdx.x) >> 4;", None, 0),
])
def test_global_spellings_it_cannot_model_are_refused(name: str, old: str, new: str,
                                                      why: str | None, at: int) -> None:
    source, grid, block, _args = CASES[name]
    assert old in source
    lifted = lift(source.replace(old, new), grid, block)
    assert "LANES" not in params(lifted)
    if why is not None:
        found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
        assert found and why in found[0] and f"(line {at})" in found[0], lifted.notes


def test_a_constexpr_warp_count_read_elsewhere_is_refused() -> None:
    source = (LSE / "baseline.cu").read_text().replace(
        "if (r >= rows) return;", "if (r >= rows || lane >= 32 * kWarpsPerBlock) return;")
    lifted = lift_kernel(source, entry="row_logsumexp", grid=["ceil_div(rows, 8)"],
                         block=["256"], scalars={"rows": "rows", "cols": "cols"})
    found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
    assert found and "`kWarpsPerBlock` has other uses" in found[0], lifted.notes



@needs_nvcc
@pytest.mark.timeout(300)
def test_row_logsumexp_compiles_without_spills_at_its_ends(tmp_path: Path) -> None:
    """The default and the far configs (4 lanes a row, float4, 4 vectors a step, 32 warps)
    build for sm_90 with no spill."""
    template = offline_template(load_kernel_folder(LSE)).template
    for k, config in enumerate(host_sample(_configs(template))):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"lse_{k}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"
