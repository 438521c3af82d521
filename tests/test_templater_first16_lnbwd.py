"""The column-partials family (colreduce*.py, issue 28) on held-back set 16's
lnbwd_colpartials: one row walk feeding two sums (LayerNorm backward's dgamma and dbeta
partials over slices of 64 rows), the partial rows compared element by element.

Six spellings, each in a copy of the held-back folder (its kernel.toml and reference.py):
the held-back kernel as written (a pointer walk ``while (g < end) {..; g += cols; x +=
cols;}`` whose end row is clamped by an ``if``); pointer walks written by other hands
(``pd[0]``, each pointer's terms in another order, ``if (rows < last) last = rows;``, the
walked pointer stepped last, which makes the ``while`` a counted ``for`` first; the walk
inside ``if (j < cols)``; a ``for`` stepping both pointers in its update); a ``for`` over
the slice's rows with a value local and ``min``; a ``while`` stepping the row by ``r++``
with the stores under the column check. Each lifts BLOCK_X / BLOCK_Y / VEC / ROW_UNROLL with
the slice of 64 rows kept (the partials' layout is fixed: they are compared element by
element), and computes what the held-back kernel as written computes on the host at the
default and a mix of every knob, within the folder's tolerance (the rows are added in
another order): the held-back kernel and the second pointer spelling by default, every
spelling at every all-ends config and more mixes with ``WORKBENCH_FULL_MATRIX=1``.
pointer_rows.py's reading of the walk is checked on its text, and its near misses (the
stride's sign unknown, the column reassigned or unsigned, the end at another column, two
strides, the end row moving) stay as written."""

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
from workbench.templater.inline_calls import inline_calls
from workbench.templater.offline import offline_template
from workbench.templater.pointer_rows import pointer_rows

SET = held_back_unseen16.SET
NAME = "lnbwd_colpartials"

SPELLINGS = {
    "held_back_pointer_walk": (SET.root / NAME / "baseline.cu").read_text(),
    "pointer_subscripts_clamp_below": r"""
extern "C" __global__ void lnbwd_colpartials(float* dgamma_part, float* dbeta_part,
                                             const float* dy, const float* xhat, int rows,
                                             int cols) {
  int col = blockIdx.x * 256 + threadIdx.x;
  if (col >= cols) return;
  int first = blockIdx.y * 64;
  int last = first + 64;
  if (rows < last) last = rows;
  const float* pd = dy + col + first * cols;
  const float* px = xhat + cols * first + col;
  const float* stop = dy + col + last * cols;
  float gsum = 0.f, bsum = 0.f;
  while (pd < stop) {
    gsum += pd[0] * px[0];
    bsum += pd[0];
    px += cols;
    pd += cols;
  }
  dgamma_part[blockIdx.y * cols + col] = gsum;
  dbeta_part[blockIdx.y * cols + col] = bsum;
}
""",
    "pointer_walk_inside_column_check": r"""
extern "C" __global__ void lnbwd_colpartials(float* dgamma_part, float* dbeta_part,
                                             const float* dy, const float* xhat, int rows,
                                             int cols) {
  const int j = threadIdx.x + 256 * blockIdx.x;
  if (j < cols) {
    const int top = 64 * blockIdx.y;
    const int bottom = min(top + 64, rows);
    const float* a = dy + top * cols + j;
    const float* b = xhat + top * cols + j;
    const float* const a_end = dy + bottom * cols + j;
    float dg = 0.0f;
    float db = 0.0f;
    while (a < a_end) {
      float t = *a;
      db += t;
      dg += t * *b;
      b += cols;
      a += cols;
    }
    dgamma_part[blockIdx.y * cols + j] = dg;
    dbeta_part[blockIdx.y * cols + j] = db;
  }
}
""",
    "for_comma_steps": r"""
#define RPB 64
extern "C" __global__ void lnbwd_colpartials(float* dgamma_part, float* dbeta_part,
                                             const float* dy, const float* xhat, int rows,
                                             int cols) {
  const long long col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  const long long lo = (long long)blockIdx.y * RPB;
  const long long hi = min(lo + RPB, (long long)rows);
  const float* grad = dy + lo * cols + col;
  const float* norm = xhat + lo * cols + col;
  const float* const stop = dy + hi * cols + col;
  float acc_g = 0.0f, acc_b = 0.0f;
  for (; grad < stop; grad += cols, norm += cols) {
    acc_g += *grad * *norm;
    acc_b += *grad;
  }
  dgamma_part[(size_t)blockIdx.y * cols + col] = acc_g;
  dbeta_part[(size_t)blockIdx.y * cols + col] = acc_b;
}
""",
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


#: Near misses of the pointer walk (held-back kernel as written, one edit each) that
#: pointer_rows.py leaves as written: (what is replaced, by what).
NEAR_MISSES = {
    # the stride's sign unknown: no column check returns the threads past cols
    "no_column_check": ("  if (c >= cols) return;\n", "\n"),
    # the column the check bounds reassigned after it
    "column_reassigned": ("  const int c = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (c >= cols) return;\n",
                          "  int c = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (c >= cols) return;\n  c = c - 1;\n"),
    # an unsigned column: compared with it, a negative cols passes the check
    "unsigned_column": ("  const int c = ", "  const unsigned c = "),
    # the end at another column than the walked pointer
    "end_off_column": ("dy + r1 * cols + c;", "dy + r1 * cols + c + 1;"),
    # a pointer stepped by another stride than the walked one
    "strides_differ": ("    x += cols;", "    x += rows;"),
    # the walk's end row assigned in the walk
    "end_row_moves": ("    sb += v;", "    sb += v;\n    r1 -= 0;"),
}


#: The host tier runs the held-back kernel and a second pointer spelling by default, every
#: spelling with WORKBENCH_FULL_MATRIX=1 (each run is a g++ compile of seconds).
_FULL_ONLY = [pytest.mark.slow, pytest.mark.skipif(
    not FULL_MATRIX, reason="two spellings by default; WORKBENCH_FULL_MATRIX=1 runs all")]
HOST_SPELLINGS = [pytest.param(name, marks=() if name in (
    "held_back_pointer_walk", "pointer_subscripts_clamp_below") else _FULL_ONLY)
    for name in sorted(SPELLINGS)]


def _folder(tmp_path: Path, spelling: str) -> KernelFolder:
    return respelled(SET.root / NAME, tmp_path / spelling, SPELLINGS[spelling])


def test_the_pointer_walk_reads_as_its_row_loop() -> None:
    written = SPELLINGS["held_back_pointer_walk"]
    rows = pointer_rows(inline_calls(written, NAME, "baseline.cu"), NAME).text
    assert rows.count("\n") == written.count("\n")  # every line keeps its number
    assert "for (size_t wb_walk_row = r0; wb_walk_row < r1; ++wb_walk_row) {" in rows
    assert "const float v = dy[wb_walk_row * (cols) + (c)];" in rows
    assert "sg += v * xhat[wb_walk_row * (cols) + (c)];" in rows
    assert "const size_t r1 = min((size_t)(r0 + ROWS_PER_BLOCK), (size_t)(rows));" in rows
    assert "g += cols" not in rows and "end" not in rows.split("extern")[1]


@pytest.mark.parametrize("miss", sorted(NEAR_MISSES))
def test_near_misses_of_the_walk_stay_as_written(miss: str) -> None:
    old, new = NEAR_MISSES[miss]
    written = SPELLINGS["held_back_pointer_walk"]
    assert old in written
    source = written.replace(old, new)
    rows = pointer_rows(inline_calls(source, NAME, "baseline.cu"), NAME).text
    assert "while (g < end) {" in rows and "g += cols;" in rows


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
@pytest.mark.parametrize("spelling", HOST_SPELLINGS)
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
