"""The offline templater on column reductions to partial rows (colreduce.py, issue 28).

The family written as different people would: the unseen2 corpus kernel (a 2-D block, a
grid-stride walk over rows, macros, a halving tree through shared memory), a 1-D block
summing a fixed slice of rows per block row (``#ifndef`` default, ``while`` with ``r++``, a
row pointer, an early return), a sum of squares over a padded matrix (``y``/``x`` names,
``blockDim`` in the index, ``#pragma unroll`` on the walk and the fold, a separate leading
dimension, a value local, thread row 0 adding the shared slots in order), and a weighted column sum of two arrays read through
``*(p + i)`` with a ``double`` accumulator, and the shortest form (a 1-D block, one row
per step of a grid-stride walk, an early return, the sum stored directly) and one that
stores through a pointer to its partial row with a ``size_t`` row counter. Each lifts BLOCK_X / BLOCK_Y / CHUNKS or
ROWS_PER_CHUNK / VEC / ROW_UNROLL with its defaults launching the kernel as written; near
misses are refused with the reason and the line. The host tier runs the default and the
corner configs (every thread a coroutine, ``__syncthreads`` a switch) and checks each
column's total over the partial rows as written against the kernel as written (exactly:
integer-valued inputs), and that the defaults write the same partials.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc, ptx_of
from helpers_templater import (
    COOPERATIVE_BLOCK,
    assert_rotation_covers,
    corner_configs,
    lifted_template,
    rotating_sample,
    run_on_host,
)

from workbench.templater import LiftedSource, lift_kernel

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"


# name -> (source, grid, block, call, ld expression, partial rows as written)
SPELLINGS: dict[str, tuple[str, list[str], list[str], str, str, str]] = {
    "corpus_grid_stride_halving": (
        (ROOT / "corpus_compute_unseen2" / "colsum_partials" / "baseline.cu").read_text(),
        ["ceil_div(cols, 32)", "64"], ["32", "8"], "k(out, in, rows, cols)", "cols", "64"),
    "slice_1d_while_row_pointer": (r"""
#ifndef RPB
#define RPB 16
#endif
extern "C" __global__ void k(const float* __restrict__ in, float* __restrict__ part, int rows,
                             int cols) {
  const int c = blockDim.x * blockIdx.x + threadIdx.x;
  if (c >= cols) return;
  const int r0 = blockIdx.y * RPB;
  const int r1 = min(r0 + RPB, rows);
  float acc = 0.f;
  int r = r0;
  while (r < r1) {
    const float* row = in + (size_t)r * cols;
    acc = acc + row[c];
    r++;
  }
  part[blockIdx.y * cols + c] = acc;
}
""", ["ceil_div(cols, 64)", "ceil_div(rows, 16)"], ["64"], "k(in, out, rows, cols)", "cols",
        "(rows + 15) // 16"),
    "sumsq_padded_serial_fold": (r"""
extern "C" __global__ void k(float* colsq, const float* a, int m, int n, int ld) {
  __shared__ float part[4 * 16];
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  float t = 0.0f;
  if (x < n) {
#pragma unroll 4
    for (int y = threadIdx.y + blockIdx.y * blockDim.y; y < m; y += blockDim.y * gridDim.y) {
      float v = a[x + y * ld];
      t += v * v;
    }
  }
  part[threadIdx.y * 16 + threadIdx.x] = t;
  __syncthreads();
  if (threadIdx.y == 0) {
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) total += part[k * 16 + threadIdx.x];
    if (x < n) colsq[blockIdx.y * n + x] = total;
  }
}
""", ["ceil_div(cols, 16)", "12"], ["16", "4"], "k(out, in, rows, cols, ld)", "cols", "12"),
    "weighted_two_arrays_double": (r"""
#define COLS 32
#define ROWS_IN_FLIGHT 2
extern "C" __global__ void k(double* partials, const float* w, const float* v, int nr,
                             int nc) {
  __shared__ double buf[ROWS_IN_FLIGHT][COLS];
  const unsigned col = blockIdx.x * COLS + threadIdx.x;
  double sum = 0.0;
  if (col < nc) {
    for (int i = blockIdx.y * ROWS_IN_FLIGHT + threadIdx.y; i < nr;
         i += ROWS_IN_FLIGHT * gridDim.y) {
      sum += (double)*(w + (size_t)i * nc + col) * v[i * nc + col];
    }
  }
  buf[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  for (int s = ROWS_IN_FLIGHT / 2; s > 0; s >>= 1) {
    if (threadIdx.y < s) buf[threadIdx.y][threadIdx.x] = buf[threadIdx.y][threadIdx.x] + buf[threadIdx.y + s][threadIdx.x];
    __syncthreads();
  }
  if (col < nc && threadIdx.y == 0) partials[blockIdx.y * nc + col] = buf[0][threadIdx.x];
}
""", ["ceil_div(cols, 32)", "16"], ["32", "2"], "k(out, in, in2, rows, cols)", "cols", "16"),
}
SPELLINGS["one_block_row_1d_stride"] = (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  if (col >= cols) return;
  float s = 0.0f;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col];
  out[blockIdx.y * cols + col] = s;
}
""", ["ceil_div(cols, 64)", "48"], ["64"], "k(out, in, rows, cols)", "cols", "48")
SPELLINGS["row_pointer_out_size_t_walk"] = (r"""
extern "C" __global__ void k(float* partial, const float* __restrict__ mat, int nrows, int ncols) {
  int col = threadIdx.x + blockIdx.x * blockDim.x;
  float* dst = partial + blockIdx.y * ncols;
  if (col < ncols) {
    float s = 0;
    for (size_t r = blockIdx.y; r < nrows; r += gridDim.y) {
      s += mat[r * ncols + col];
    }
    dst[col] = s;
  }
}
""", ["ceil_div(cols, 128)", "40"], ["128"], "k(out, in, rows, cols)", "cols", "40")
ENTRY = {"corpus_grid_stride_halving": "colsum_partials"}
SCALARS = {"corpus_grid_stride_halving": {"nrows": "rows", "ncols": "cols"},
           "slice_1d_while_row_pointer": {"rows": "rows", "cols": "cols"},
           "sumsq_padded_serial_fold": {"m": "rows", "n": "cols", "ld": "ld"},
           "weighted_two_arrays_double": {"nr": "rows", "nc": "cols"},
           "one_block_row_1d_stride": {"rows": "rows", "cols": "cols"},
           "row_pointer_out_size_t_walk": {"nrows": "rows", "ncols": "cols"}}
SIZES = {"rows": 83, "cols": 45}


def env(name: str) -> dict[str, int]:
    return {**SIZES, "ld": SIZES["cols"] + 3, "elem_bytes": 4}


def lift(name: str) -> LiftedSource:
    source, grid, block, *_ = SPELLINGS[name]
    return lift_kernel(source, entry=ENTRY.get(name, "k"), grid=grid, block=block,
                       scalars=SCALARS[name])


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_lifts_the_column_partials_family(name: str) -> None:
    lifted = lift(name)
    applied = [f for f in lifted.findings if f.transform == "COLUMN_PARTIALS" and f.applied]
    assert applied, lifted.notes
    names = {p.name for p in lifted.params}
    slice_mode = "slice" in name
    assert {"BLOCK_X", "BLOCK_Y", "VEC", "ROW_UNROLL",
            "ROWS_PER_CHUNK" if slice_mode else "CHUNKS"} <= names, names
    assert lifted.block == ("BLOCK_X", "BLOCK_Y")
    template = lifted_template(lifted, ENTRY.get(name, "k"))
    default = template.default_config()
    block = [int(b) for b in SPELLINGS[name][2]] + [1]
    launch = template.launch_for(default, env(name))
    assert list(launch.block)[:2] == block[:2]
    grid_y = -(-SIZES["rows"] // 16) if slice_mode else int(SPELLINGS[name][1][1])
    assert list(launch.grid)[:2] == [-(-SIZES["cols"] // block[0]), grid_y]
    # the partial rows never outgrow the rows as written
    space = template.space(env(name))
    knob = "ROWS_PER_CHUNK" if slice_mode else "CHUNKS"
    values = next(p for p in template.params if p.name == knob).values()
    assert (min(values) if slice_mode else max(values)) == default[knob]
    assert space.rejection({**default, "VEC": 4, "ROW_UNROLL": 4}) is None
    assert space.rejection({**default, "VEC": 4, "ROW_UNROLL": 4, "BLOCK_X": 256,
                            "BLOCK_Y": 8}) is not None  # 2048 threads
    # the fold's shared bytes count the accumulator's type (a double here: 8 bytes)
    acc_bytes = 8 if "double" in name else 4
    assert f"{acc_bytes} * BLOCK_Y * BLOCK_X * VEC <= 49152" in lifted.constraints


REFUSED: dict[str, tuple[str, str, int]] = {
    "read_beside_the_column": (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  if (col >= cols - 1) return;
  float s = 0.0f;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col + 1];
  out[blockIdx.y * cols + col] = s;
}
""", "is not read at the thread's column", 6),
    "rows_not_dealt_to_the_block_rows": (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  if (col >= cols) return;
  float s = 0.0f;
  for (int r = blockIdx.y; r < rows; r += 8) s += m[r * cols + col];
  out[blockIdx.y * cols + col] = s;
}
""", "the row loop steps by `8`", 6),
    "accumulator_starts_from_data": (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  if (col >= cols) return;
  float s = m[col];
  for (int r = blockIdx.y + 1; r < rows; r += gridDim.y) s += m[r * cols + col];
  out[blockIdx.y * cols + col] = s;
}
""", "must start at zero", 5),
    "a_second_store": (r"""
extern "C" __global__ void k(float* out, float* seen, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  if (col >= cols) return;
  float s = 0.0f;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col];
  seen[col] = 1.0f;
  out[blockIdx.y * cols + col] = s;
}
""", "expected one store to global memory", 7),
    "no_column_check": (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  float s = 0.0f;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col];
  out[blockIdx.y * cols + col] = s;
}
""", "the column is not checked against the matrix width", 5),
    "early_return_of_a_block_row": (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  if (col >= cols) return;
  if (blockIdx.y >= 40) return;
  float s = 0.0f;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col];
  out[blockIdx.y * cols + col] = s;
}
""", "the column is not checked against the matrix width", 7),  # the two exits read as one
    # check, (col >= cols) || (blockIdx.y >= 40) (inline_exits), which is not `col >= W`
    "another_condition_on_the_walk": (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  float s = 0.0f;
  if (col < cols && rows > 100)
    for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col];
  if (col < cols) out[blockIdx.y * cols + col] = s;
}
""", "`rows > 100` also decides whether the walk runs", 5),
    "another_condition_on_the_store": (r"""
extern "C" __global__ void k(float* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  float s = 0.0f;
  if (col < cols)
    for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col];
  if (col < cols && blockIdx.y % 2 == 0) out[blockIdx.y * cols + col] = s;
}
""", "`blockIdx.y % 2 == 0` also decides whether the store runs", 7),
    "int_sum_of_floats": (r"""
extern "C" __global__ void k(int* out, const float* m, int rows, int cols) {
  const int col = blockIdx.x * 64 + threadIdx.x;
  if (col >= cols) return;
  int s = 0;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) s += m[r * cols + col];
  out[blockIdx.y * cols + col] = s;
}
""", "truncated at every step", 6),
}


def test_an_integer_sum_of_integers_lifts() -> None:
    source = REFUSED["int_sum_of_floats"][0].replace("const float* m", "const int* m")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(cols, 64)", "48"], block=["64"],
                         scalars={"rows": "rows", "cols": "cols"})
    assert any(f.transform == "COLUMN_PARTIALS" and f.applied for f in lifted.findings)


def test_a_slice_grid_over_other_rows_than_the_walk_is_refused() -> None:
    source = SPELLINGS["slice_1d_while_row_pointer"][0]
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(cols, 64)", "ceil_div(cols, 16)"],
                         block=["64"], scalars={"rows": "rows", "cols": "cols"})
    refusal = next(f for f in lifted.findings if f.transform == "COLUMN_PARTIALS")
    assert not refusal.applied
    assert "is not ceil_div(`rows`, 16)" in refusal.reason, refusal


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_near_misses_are_refused_with_the_reason_and_the_line(name: str) -> None:
    source, reason, row = REFUSED[name]
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(cols, 64)", "48"], block=["64"],
                         scalars={"rows": "rows", "cols": "cols"})
    refusals = [f for f in lifted.findings if f.transform == "COLUMN_PARTIALS"]
    assert refusals and not refusals[0].applied, lifted.notes
    assert reason in refusals[0].reason, refusals[0]
    assert refusals[0].line == row, refusals[0]
    assert "COLUMN_PARTIALS" not in {f.transform for f in lifted.findings if f.applied}


def test_kernels_outside_the_family_get_no_finding() -> None:
    source = (ROOT / "corpus_compute_unseen" / "box_blur" / "baseline.cu").read_text()
    lifted = lift_kernel(source, entry="box_blur",
                         grid=["ceil_div(width, 16)", "ceil_div(height, 16)"],
                         block=["16", "16"], scalars={"height": "height", "width": "width"})
    assert not [f for f in lifted.findings if f.transform == "COLUMN_PARTIALS"]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_column_partials_compile_at_default_and_corners(name: str, compiler: Any) -> None:
    template = lifted_template(lift(name), ENTRY.get(name, "k"))
    for config in corner_configs(template, env(name)):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{config}: {result.error_summary}\n{result.log[-1500:]}"


@needs_nvcc
def test_vec_reads_each_row_of_four_columns_as_one_vector() -> None:
    template = lifted_template(lift("corpus_grid_stride_halving"), "colsum_partials")
    default = template.default_config()
    assert "ld.global.v4" not in ptx_of(template, default, "fp32")
    ptx = ptx_of(template, {**default, "VEC": 4, "ROW_UNROLL": 2}, "fp32")
    assert "ld.global.v4.f32" in ptx  # the aligned path (run-time test, scalar otherwise)
    assert "ld.local" not in ptx and "st.local" not in ptx


# -- host run ------------------------------------------------------------------------------

_MAIN = r"""
int main() {
  const int rows = %(rows)d, cols = %(cols)d, ld = %(ld)d;
  const int slots = %(slots)d;
  std::vector<float> a(rows * ld + 8), b(rows * ld + 8);
  for (int i = 0; i < rows * ld + 8; ++i) {
    a[i] = (float)((i * 37) %% 17 - 8);
    b[i] = (float)((i * 11) %% 5 - 2);
  }
  std::vector<%(out_t)s> o((slots + 2) * cols, (%(out_t)s)12345);
  float* in = a.data();
  float* in2 = b.data();
  %(out_t)s* out = o.data();
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1}, [&] { %(call)s; });
  for (%(out_t)s v : o) std::printf("%%.17g\n", (double)v);
  return 0;
}
"""


def host_run(name: str, source: str, grid: list[int], block: list[int], work: Path,
             slots: int) -> list[float]:
    _s, _g, _b, call, _ld, _w = SPELLINGS[name]
    out_t = "double" if "double" in name else "float"
    e = env(name)
    ld = e["ld"] if "padded" in name else e["cols"]
    main = _MAIN % {"rows": e["rows"], "cols": e["cols"], "ld": ld, "slots": slots,
                    "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1],
                    "call": call.replace("k(", ENTRY.get(name, "k") + "("), "out_t": out_t}
    program = COOPERATIVE_BLOCK + source + main
    printed = run_on_host(work, "host", program)
    return [float(v) for v in printed.split()]


def _slots(name: str) -> int:
    """The partial rows the kernel as written fills: its grid's y extent."""
    written = SPELLINGS[name][5]
    return -(-SIZES["rows"] // 16) if written == "(rows + 15) // 16" else int(written)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_corner_keeps_each_columns_total_on_the_host(name: str) -> None:
    """Each spelling at its default (slot for slot the kernel as written) and, by default,
    one of its two all-ends corners and two hand-picked configs in turn (the spellings cover
    all four between them each run); every one of them with ``WORKBENCH_FULL_MATRIX=1``."""
    source, _grid, block, *_ = SPELLINGS[name]
    template = lifted_template(lift(name), ENTRY.get(name, "k"))
    default = template.default_config()
    slots, cols = _slots(name), SIZES["cols"]
    b = [int(v) for v in block] + [1]
    listed = [*corner_configs(template, env(name)),
              {**default, "VEC": 2, "ROW_UNROLL": 4, "BLOCK_Y": 2},
              {**default, "VEC": 4, "BLOCK_X": 32, "BLOCK_Y": 1}]
    assert_rotation_covers(len(SPELLINGS), listed)
    configs = rotating_sample(listed, sorted(SPELLINGS).index(name))
    assert configs[0] == default
    with tempfile.TemporaryDirectory() as tmp:
        launch0 = template.launch_for(default, env(name))
        want = host_run(name, source, list(launch0.grid)[:2], b, Path(tmp), slots)
        written = want[:slots * cols]
        assert 12345.0 not in written and set(want[slots * cols:]) == {12345.0}
        totals = [sum(written[r * cols + c] for r in range(slots)) for c in range(cols)]
        assert any(totals)
        for config in configs:
            assert template.space(env(name)).rejection(config) is None, config
            launch = template.launch_for(config, env(name))
            got = host_run(name, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), Path(tmp), slots)
            assert set(got[slots * cols:]) == {12345.0}, config  # nothing past the slots
            part = got[:slots * cols]
            assert 12345.0 not in part, config
            assert [sum(part[r * cols + c] for r in range(slots))
                    for c in range(cols)] == totals, config
            if config == default:
                assert got == want  # the kernel as written, slot for slot
