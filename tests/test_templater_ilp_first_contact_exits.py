"""Items per thread where an item ends early and a later shared loop reads through the
item's own pointer (issue 28): a row dot behind ``if (r >= rows) return;`` and a ``#define``
block, a product behind an exit that stores and returns, a double product behind a negated
guard and a return on the data, an escape-time loop over the item's row inside a final
``if (i < n)``, a grid-stride loop the covering grid runs once with its row pointer a
``typedef``'s; an item's own register array read at a shared index, which stays
unguarded. An item that ended holds a zeroed (null) pointer, so the shared loop's load
through it must run only for a live item: each lift runs on the host (g++, every thread of
the launch in turn, rows not a multiple of any block so the last block has dead items) at its
default, its first and last all-ends corners and a mid-space config, and must print exactly
what the kernel as written prints (before the rule, each but the last died on a null read,
at its default already). Forms the analysis cannot show safe are refused with the reason and the
line: ``continue`` in a grid-stride loop, a ``return`` in an ``else`` (of the guard, or of a
final ``if (r < rows)``), a parameter advanced to the item's row (the items would share it).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs
from regtile_first_contact import Product, host_outputs

from workbench.templater import LiftedSource

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

ENV = {"M": 37, "N": 45, "K": 29, "batch": 2}  # 37 rows: every block size leaves dead items
NAME = "ITEMS_PER_THREAD"

LIFTED: dict[str, Product] = {
    # a return guard before the loop; the row a pointer taken with &x[...]; a #define block
    "rowdot_define_return": Product(r"""
#define TPB 128
__global__ void rowdot(const float* x, const float* w, float* y, int rows, int dim) {
  const int r = blockIdx.x * TPB + threadIdx.x;
  if (r >= rows) return;
  const float* xr = &x[(long)r * dim];
  float acc = 0.0f;
  for (int d = 0; d < dim; d++) {
    acc = acc + xr[d] * w[d];
  }
  y[r] = acc;
}
""", "rowdot", ("ceil_div(M, 128)",), ("128",), {"rows": "M", "dim": "K"},
        (("x", "float", "M * K"), ("w", "float", "K"), ("y", "float", "M")),
        "rowdot(x, w, y, M, K)", "y"),
    # a flat pair index, then an exit that stores and returns, then the rows' pointers
    "exit_actions_then_loop": Product(r"""
__global__ void masked_dot(const float* a, const float* b, float* c, int M, int N, int K) {
  int g = threadIdx.x + blockIdx.x * blockDim.x;
  if (g >= M * N) return;
  int m = g / N;
  int n = g - m * N;
  if (a[m * K] == 0.0f) { c[g] = -1.0f; return; }
  const float* ra = a + m * K;
  const float* rb = b + n * K;
  float acc = 0.f;
  for (int q = 1; q < K; q += 1) acc += ra[q] * rb[q];
  c[g] = acc;
}
""", "masked_dot", ("ceil_div(M * N, 256)",), ("256",), {"M": "M", "N": "N", "K": "K"},
        (("a", "float", "M * K"), ("b", "float", "N * K"), ("c", "float", "M * N")),
        "masked_dot(a, b, c, M, N, K)", "c"),
    # an escape-time loop over the item's row (each item leaves on its own), a final if
    "escape_through_pointer": Product(r"""
__global__ void prefix_until(const float* x, float* out, int rows, int len) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    const float* row = x + i * len;
    float s = 0.0f;
    for (int j = 0; j < len; ++j) {
      s += row[j];
      if (s > 2.0f) break;
    }
    out[i] = s;
  }
}
""", "prefix_until", ("ceil_div(M, 128)",), ("128",), {"rows": "M", "len": "K"},
        (("x", "float", "M * K"), ("out", "float", "M")), "prefix_until(x, out, M, K)", "out"),
    # a grid-stride loop the covering grid runs once per thread, a typedef'd element
    "gridstride_row_pointer": Product(r"""
typedef float T;
__global__ void rowsum(const T* __restrict__ src, T* __restrict__ dst, int nrows, int ncols) {
  const int step = gridDim.x * blockDim.x;
  for (int row = blockIdx.x * blockDim.x + threadIdx.x; row < nrows; row += step) {
    const T* line = src + (long)row * ncols;
    T total = 0;
    for (int c = 0; c < ncols; c++) total += line[c];
    dst[row] = total;
  }
}
""", "rowsum", ("ceil_div(M, 128)",), ("128",), {"nrows": "M", "ncols": "K"},
        (("src", "float", "M * K"), ("dst", "float", "M")), "rowsum(src, dst, M, K)", "dst"),
    # double, a negated guard then a second return on the data, a per-trip local
    "two_returns_double": Product(r"""
__global__ void gated(const double* x, const double* g, double* y, int rows, int cols) {
  long r = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (!(r < rows)) return;
  if (g[r * cols] < 0.0) return;
  const double* xr = x + r * cols;
  const double* gr = g + r * cols;
  double acc = 0.0;
  for (int c = 0; c < cols; ++c) { double t = xr[c] * gr[c]; acc += t * t; }
  y[r] = acc;
}
""", "gated", ("ceil_div(M, 64)",), ("64",), {"rows": "M", "cols": "K"},
        (("x", "double", "M * K"), ("g", "double", "M * K"), ("y", "double", "M")),
        "gated(x, g, y, M, K)", "y"),
    # the item's own register array read at a shared index: no load through memory
    "own_register_array": Product(r"""
constexpr int kTaps = 8;
__global__ void taps(const float* __restrict__ x, const float* __restrict__ w,
                     float* __restrict__ y, int rows, int K) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float v[kTaps];
  for (int k = 0; k < kTaps; ++k) v[k] = x[r * K + k];
  float s = 0.f;
  for (int k = 0; k < kTaps; ++k) s += v[k] * w[k];
  y[r] = s;
}
""", "taps", ("ceil_div(M, 128)",), ("128",), {"rows": "M", "K": "K"},
        (("x", "float", "M * K"), ("w", "float", "8"), ("y", "float", "M")),
        "taps(x, w, y, M, K)", "y"),
}

REFUSED: dict[str, tuple[Product, str, int]] = {
    # the grid-stride loop's trip is the item: `continue` would leave the items' loop
    "gridstride_continue": (Product(r"""
__global__ void rownorm(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += blockDim.x * gridDim.x) {
    const float* p = x + (size_t)r * cols;
    if (p[0] < 0.0f) continue;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += p[c] * p[c];
    y[r] = s;
  }
}
""", "rownorm", ("ceil_div(M, 64)",), ("64",), {"rows": "M", "cols": "K"},
        (("x", "float", "M * K"), ("y", "float", "M")), "rownorm(x, y, M, K)", "y"),
        "`continue;` leaves the grid-stride loop", 5),
    # the final if has an else that returns
    "final_if_else_return": (Product(r"""
__global__ void rowmax(const float* x, float* y, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    const float* p = x + r * cols;
    float m = p[0];
    for (int c = 1; c < cols; ++c) m = fmaxf(m, p[c]);
    y[r] = m;
  } else {
    return;
  }
}
""", "rowmax", ("ceil_div(M, 128)",), ("128",), {"rows": "M", "cols": "K"},
        (("x", "float", "M * K"), ("y", "float", "M")), "rowmax(x, y, M, K)", "y"),
        "`return` other than a top-level", 10),
    # the guard's return in an else, the pointers declared before it
    "if_else_return": (Product(r"""
extern "C" __global__ void pairdot(const double* u, const double* v, double* o,
                                   int M, int N, int K) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  const double* pu;
  const double* pv;
  if (t < (unsigned)(M * N)) {
    pu = u + (t / N) * K;
    pv = v + (t % N) * K;
  } else {
    return;
  }
  double s = 0.0;
  for (int k = K - 1; k >= 0; --k) s += pu[k] * pv[k];
  o[t] = s;
}
""", "pairdot", ("ceil_div(M * N, 96)",), ("96",), {"M": "M", "N": "N", "K": "K"},
        (("u", "double", "M * K"), ("v", "double", "N * K"), ("o", "double", "M * N")),
        "pairdot(u, v, o, M, N, K)", "o"),
        "`return` other than a top-level", 11),
    # the parameters advanced to the item's row: one variable the items would overwrite
    "param_advanced": (Product(r"""
__global__ void dots(const float* a, const float* b, float* out, int rows, int K) {
  int t = blockIdx.x * 64 + threadIdx.x;
  if (t >= rows) return;
  a += (size_t)t * K;
  b += (size_t)t * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(a[k], b[k], acc);
  out[t] = acc;
}
""", "dots", ("ceil_div(M, 64)",), ("64",), {"rows": "M", "K": "K"},
        (("a", "float", "M * K"), ("b", "float", "M * K"), ("out", "float", "M")),
        "dots(a, b, out, M, K)", "out"),
        "declared outside the item's statements", 5),
}


def _interleaving_note(lifted: LiftedSource) -> str | None:
    """This transform's note (items with independent state), applied or not."""
    return next((n for n in lifted.notes if n.startswith(f"{NAME}: ") and
                 ("independent state" in n or "interleave" in n)), None)


def _checked(template: Any) -> list[dict[str, Any]]:
    """The default, the first and last all-ends corners, and 4 items with UNROLL 2 at a
    block that is not the written one."""
    ends = end_configs(template, ENV)
    mid = {**dict(template.default_config()), NAME: 4, "BLOCK_THREADS": 96, "UNROLL": 2}
    return [dict(template.default_config()), ends[0], ends[-1], mid]


@pytest.mark.parametrize("name", sorted(LIFTED))
def test_an_item_that_ended_reads_nothing_through_its_pointer(name: str,
                                                              tmp_path: Path) -> None:
    product = LIFTED[name]
    note = _interleaving_note(product.lift())
    assert note is not None and ": applied:" in note, note
    template = product.template()
    configs = _checked(template)
    assert max(c[NAME] for c in configs) == 8
    written, outputs = host_outputs(product, template, configs, ENV, tmp_path)
    assert len(written) == ENV["M"] * (ENV["N"] if "N" in product.call else 1)
    for config, printed in zip(configs, outputs, strict=True):
        assert printed == written, (name, config)


def test_the_shared_loop_reads_the_items_row_only_for_a_live_item() -> None:
    """The load ``xr[d]`` is at a shared index through the item's pointer: under the item's
    ``live`` test in the shared loop (not among the statements a done item runs)."""
    template = LIFTED["rowdot_define_return"].template()
    source = template.render({**dict(template.default_config()), NAME: 2}, "fp32").source
    loop = source[source.index("for (int d = 0"):]
    assert loop.index("if (wb_live[wb_it])") < loop.index("xr[wb_it][d]"), loop


def test_the_items_own_registers_stay_unguarded() -> None:
    """``v[k]`` reads the item's own register array (``v[ITEMS][8]``), not memory: a done
    item reads its zeros, so the shared loop's items stay one block the compiler
    interleaves, where the loop filling ``v`` from the item's row is under the test."""
    template = LIFTED["own_register_array"].template()
    source = template.render({**dict(template.default_config()), NAME: 2}, "fp32").source
    fill = source[source.index("v[wb_it][k] = x[") - 120:source.index("v[wb_it][k] = x[")]
    assert "if (wb_live[wb_it])" in fill, source
    use = source[source.index("s[wb_it] += v[wb_it][k]") - 120:]
    assert "wb_live" not in use[:use.index("s[wb_it] += v[wb_it][k]")], source


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_an_exit_the_analysis_cannot_show_safe_is_refused_with_its_line(name: str) -> None:
    product, reason, at = REFUSED[name]
    note = _interleaving_note(product.lift())
    assert note is not None and ": not applied:" in note and reason in note and \
        note.endswith(f"(line {at})"), note


def test_a_parameter_advanced_per_item_is_not_wrapped_either(tmp_path: Path) -> None:
    """wrap.py's ITEMS_PER_THREAD (the items one after another) gives each item the
    parameters as they were at the index: `a += t * K` advances from the start per item."""
    product = REFUSED["param_advanced"][0]
    template = product.template()
    assert NAME in template.param_names  # the wrap applies (the items loop is checked)
    # 32 apart: two of a thread's items are rows (37 of them); before, the second read wrong
    configs = [dict(template.default_config()),
               {**dict(template.default_config()), NAME: 8, "BLOCK_THREADS": 32}]
    try:
        written, outputs = host_outputs(product, template, configs, ENV, tmp_path)
    except subprocess.CalledProcessError as exc:  # a read past the buffers may fault
        raise AssertionError(f"the host run died: {exc}") from exc
    assert all(printed == written for printed in outputs)
