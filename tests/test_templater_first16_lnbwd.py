"""The column-partials family (colreduce*.py, issue 28) on held-back set 16's
lnbwd_colpartials: one row walk feeding two sums (LayerNorm backward's dgamma and dbeta
partials over slices of 64 rows), the partial rows compared element by element.

Two spellings another hand would write, each in a copy of the held-back folder (its
kernel.toml and reference.py): a ``for`` over the slice's rows with a value local and
``min`` for the slice's end, and a ``while`` stepping the row by ``r++`` with the stores
under the column check. Each lifts BLOCK_X / BLOCK_Y / VEC / ROW_UNROLL with the slice of
64 rows kept (the partials' layout is fixed: they are compared element by element), and
computes what the held-back kernel as written computes on the host at the default and a
mix of every knob (``WORKBENCH_FULL_MATRIX=1``: every all-ends config and more mixes),
within the folder's tolerance (the rows are added in another order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen16
import pytest
from held_back_harness import respelled
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder
from workbench.templater.offline import offline_template

SET = held_back_unseen16.SET
NAME = "lnbwd_colpartials"

SPELLINGS = {
    "for_min_value_local": r"""
#define ROWS_PER_BLOCK 64
extern "C" __global__ void lnbwd_colpartials(float* dgamma_part, float* dbeta_part,
                                             const float* dy, const float* xhat, int rows,
                                             int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const int r0 = blockIdx.y * ROWS_PER_BLOCK;
  const int r1 = min(r0 + ROWS_PER_BLOCK, rows);
  float sg = 0.0f, sb = 0.0f;
  for (int r = r0; r < r1; ++r) {
    const float v = dy[(size_t)r * cols + c];
    sg += v * xhat[(size_t)r * cols + c];
    sb += v;
  }
  const size_t o = (size_t)blockIdx.y * cols + c;
  dgamma_part[o] = sg;
  dbeta_part[o] = sb;
}
""",
    "while_guarded_stores": r"""
extern "C" __global__ void lnbwd_colpartials(float* dgamma_part, float* dbeta_part,
                                             const float* dy, const float* xhat, int rows,
                                             int cols) {
  int col = threadIdx.x + blockIdx.x * 256;
  float g_sum = 0.f;
  float b_sum = 0.f;
  if (col < cols) {
    int r = blockIdx.y * 64;
    const int stop = min(blockIdx.y * 64 + 64, rows);
    while (r < stop) {
      b_sum = b_sum + dy[r * cols + col];
      g_sum += xhat[r * cols + col] * dy[r * cols + col];
      r++;
    }
    dbeta_part[blockIdx.y * cols + col] = b_sum;
    dgamma_part[blockIdx.y * cols + col] = g_sum;
  }
}
""",
}
#: A mix of every knob: 64 x 4 threads of two columns, two rows in flight (three column
#: blocks at the check shape's 300 columns, the last partly past them; the 22 rows of the
#: last row slice end inside a step). More under WORKBENCH_FULL_MATRIX=1.
MIXES = [{"BLOCK_X": 64, "BLOCK_Y": 4, "VEC": 2, "ROW_UNROLL": 2}]
FULL_MIXES = [{"BLOCK_X": 32, "BLOCK_Y": 8, "VEC": 4, "ROW_UNROLL": 4},
              {"BLOCK_X": 128, "BLOCK_Y": 2, "VEC": 1, "ROW_UNROLL": 4},
              {"BLOCK_X": 16, "BLOCK_Y": 32, "VEC": 4, "ROW_UNROLL": 1}]


def _folder(tmp_path: Path, spelling: str) -> KernelFolder:
    return respelled(SET.root / NAME, tmp_path / spelling, SPELLINGS[spelling])


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_both_sums_lift_with_the_slice_kept(tmp_path: Path, spelling: str) -> None:
    result = offline_template(_folder(tmp_path, spelling))
    applied = [n for n in result.notes if n.startswith("COLUMN_PARTIALS: applied")]
    assert applied, result.notes
    assert "`dgamma_part`" in applied[0] and "`dbeta_part`" in applied[0]
    assert "the slice is not lifted" in applied[0]
    assert [p.name for p in result.lifted.params] == ["BLOCK_X", "BLOCK_Y", "VEC",
                                                       "ROW_UNROLL"]
    assert result.lifted.grid == ("ceil_div(cols, BLOCK_X * VEC)", "ceil_div(rows, 64)")
    assert result.lifted.defaults == {"BLOCK_X": 256, "BLOCK_Y": 1, "VEC": 1,
                                      "ROW_UNROLL": 1}


def test_one_of_two_sums_folded_through_shared_memory_is_refused(tmp_path: Path) -> None:
    folded = SPELLINGS["for_min_value_local"].replace(
        "  dgamma_part[o] = sg;", "  __shared__ float red[256];\n  red[threadIdx.x] = sg;\n"
        "  __syncthreads();\n  dgamma_part[o] = red[threadIdx.x];")
    result = offline_template(respelled(SET.root / NAME, tmp_path, folded))
    refusal = next(n for n in result.notes if n.startswith("COLUMN_PARTIALS"))
    assert refusal == ("COLUMN_PARTIALS: not applied: no store of `sg` itself to a partial "
                       "row (each of several sums stored directly is modelled) (line 20)")


@pytest.mark.timeout(900 if FULL_MATRIX else 300)
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_checked_config_computes_the_held_back_partials_on_the_host(
        tmp_path: Path, spelling: str, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(tmp_path, spelling)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    configs: list[dict[str, Any]] = [default, *({**default, **m} for m in MIXES)]
    if FULL_MATRIX:
        configs += [*end_configs(template, env), *({**default, **m} for m in FULL_MIXES)]
    for config in configs:
        assert template.space(env).rejection(config) is None, config
    want = SET.plain_outputs(NAME, tmp_path / "plain", host_flags)
    runs = [(template.render(c, "fp32").source, template.launch_for(c, env)) for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, _inputs(kf), tmp_path / "lift"),
                           strict=True):
        _assert_same(kf, got, want, f"{spelling} at {config}")
