"""Items per thread on iterated per-element solves that each item leaves on its own (an
early exit, a data-dependent trip count), and the fp32 math behind FAST_MATH.

Spellings: Newton with ``if (|step| < tol) break;`` last and ``sinf``/``cosf`` in a helper
(the corpus's kepler_solve, read from its folder), Newton with the exit first and the pair in
one declaration in the kernel, a bisection whose exit is in the middle of the body, a
fixed-point iteration ``while (fabsf(d) > tol && it < max)``. Each lifted template runs on
the host (g++, every thread of the launch in turn) and must print bit for bit what the
kernel as written prints at FAST_MATH 0 (the host's ``__sinf`` is ``sinf``: at FAST_MATH 1
it checks the rewrite, not the GPU's approximation, which the gate checks). nvcc compiles
the largest item count without spills.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import host_sample, lifted_template, run_on_host

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

N = 701  # no multiple of any block * items: the last block has items past the end
KEPLER = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen4" / \
    "kepler_solve"

KERNELS: dict[str, tuple[str, str]] = {
    # exit test first; sin and cos of one angle in one declaration, in the kernel
    "newton_exit_first_constexpr": ("""
constexpr int kSteps = 40;
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  const int t = threadIdx.x + blockDim.x * blockIdx.x;
  if (t < n) {
    const float mean = a[t] * 6.2831853f;
    const float ecc = 0.95f * b[t];
    float x = mean + 0.5f * ecc;
    for (int s = 0; s < kSteps; s++) {
      float sn = sinf(x), cs = cosf(x);
      float g = x - ecc * sn - mean;
      if (fabsf(g) < 1e-6f) break;
      x = x - g / (1.0f - ecc * cs);
    }
    out[t] = x;
  }
}
""", "256"),
    # a bisection for the real root of u^3 + p u - q (p > 0), its exit mid-body
    "bisection_exit_mid": ("""
#ifndef BLK
#define BLK 128
#endif
#define ROUNDS 48
__device__ float cubic(float u, float p, float q) { return u * u * u + p * u - q; }
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int i = blockIdx.x * BLK + threadIdx.x;
  if (i >= n) return;
  float p = 0.5f + a[i], q = 4.0f * b[i] - 2.0f;
  float lo = -4.0f, hi = 4.0f;
  float flo = cubic(lo, p, q);
  for (int r = 0; r < ROUNDS; ++r) {
    float mid = 0.5f * (lo + hi);
    float fm = cubic(mid, p, q);
    if (fm == 0.0f || hi - lo < 1e-6f) { break; }
    if ((fm < 0.0f) == (flo < 0.0f)) { lo = mid; flo = fm; } else { hi = mid; }
  }
  out[i] = 0.5f * (lo + hi) + expf(-lo * lo);
}
""", "128"),
    # Kepler's equation by fixed-point iteration E = M + e sin E, to a tolerance
    "fixed_point_while": ("""
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int gid = blockDim.x * blockIdx.x + threadIdx.x;
  if (gid >= n) return;
  float m = 6.0f * a[gid], e = 0.7f * b[gid];
  float E = m, d = 1.0f;
  int it = 0;
  while (fabsf(d) > 1e-6f && it < 200) {
    float En = m + e * sinf(E);
    d = En - E;
    E = En;
    it++;
  }
  out[gid] = E + 0.001f * (float)it;
}
""", "96"),
    # two loops in a row, each left on its own: a square root by Heron's rule with a `break`
    # after the update, then a halving `while`; each loop's flags in a block of their own
    "two_exits_in_a_row": ("""
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int i = blockIdx.x * 64 + threadIdx.x;
  if (i >= n) return;
  float x = 1.0f + a[i], y = 4.0f * b[i];
  for (int s = 0; s < 20; ++s) {
    x = 0.5f * (x + (1.0f + a[i] * 0.0f + 2.0f) / x);
    if (fabsf(x * x - 3.0f) < 1e-6f) break;
  }
  int c = 0;
  while (y > 1e-3f && c < 100) { y = y * 0.5f; c++; }
  out[i] = x + y + (float)c;
}
""", "64"),
    # a test that changes the state: kept as written (each item's loop whole, or guarded)
    "counting_tests": ("""
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float x = 1.0f + a[i], y = 2.0f + b[i];
  int c = 0, k = 0;
  for (int s = 0; s < 30; ++s) {
    x = x * 0.75f + 0.1f;
    if (++c > 12 || x < 0.5f) break;
  }
  while (k++ < 40 && y > 0.01f) { y = y * 0.5f; }
  out[i] = x + y + (float)(c + 100 * k);
}
""", "128"),
}
#: spellings that keep an `if (!done)` test (a load at the item's place, a test that
#: changes the state)
GUARDED = {"two_exits_in_a_row", "counting_tests"}

_HOST = r"""
#include <cmath>
#include <cstdio>
#include <vector>
struct wb_dim3 { unsigned x, y, z; };
static wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __restrict__
#define __forceinline__ inline
#define __launch_bounds__(...)
// the host has no hardware approximations: each is the call it replaces
#define __sinf(v) sinf(v)
#define __cosf(v) cosf(v)
#define __expf(v) expf(v)
#define __sincosf(v, s, c) sincosf(v, s, c)
#define __fdividef(a, b) ((a) / (b))
"""


def _program(source: str, entry: str, n_in: int, grid: int, block: int) -> str:
    ins = [f"  std::vector<float> a{k}({N});\n  for (int j = 0; j < {N}; ++j) a{k}[j] = "
           f"(float)((j * {37 + 14 * k} + {k}) % 997) / 997.0f;" for k in range(n_in)]
    args = ", ".join(["o.data()", *(f"a{k}.data()" for k in range(n_in)), str(N)])
    return (_HOST + source + "\nint main() {\n" + "\n".join(ins) +
            f"\n  std::vector<float> o({N}, -7.0f);\n"
            f"  gridDim = {{{grid}, 1, 1}}; blockDim = {{{block}, 1, 1}};\n"
            f"  for (unsigned b = 0; b < {grid}; ++b) for (unsigned t = 0; t < {block}; ++t)"
            f" {{\n    blockIdx = {{b, 0, 0}}; threadIdx = {{t, 0, 0}};\n    {entry}({args});\n"
            f"  }}\n  for (int j = 0; j < {N}; ++j) std::printf(\"%.9g\\n\", (double)o[j]);\n"
            "  return 0;\n}\n")


def _kernel(name: str) -> tuple[str, str, list[str], list[str], int]:
    """(source, entry, grid, block, inputs) of a spelling or of kepler_solve."""
    if name == "kepler_solve":
        kf = load_kernel_folder(KEPLER)
        rules = kf.baseline.launch.to_dict()
        return kf.baseline.source, kf.baseline.entry, list(rules["grid"]), \
            list(rules["block"]), 2
    source, block = KERNELS[name]
    return source, "k", [f"ceil_div(n, {block})"], [block], 2


def _lift(name: str) -> LiftedSource:
    source, entry, grid, block, _ = _kernel(name)
    return lift_kernel(source, entry=entry, grid=grid, block=block, scalars={"n": "n"})


def _run(template: KernelTemplate, config: dict[str, Any], name: str, work: Path,
         tag: str) -> list[str]:
    _source, entry, _grid, _block, n_in = _kernel(name)
    launch = template.launch_for(config, {"n": N})
    source = template.render(config, "fp32").source if template.params else template.source
    return run_on_host(work, tag, _program(source, entry, n_in, launch.grid[0],
                                           launch.block[0])).split()


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The default, then every item count with the fast math off and on, at a block of 96
    (a multiple of 32, not a power of two) and the last unroll value."""
    default = dict(template.default_config())
    top = {p.name: p.values()[-1] for p in template.params if p.name == "UNROLL"}
    picked = [default]
    for items in (2, 3, 4, 8):
        for fast in (0, 1):
            picked.append({**default, **top, "BLOCK_THREADS": 96, "ITEMS_PER_THREAD": items,
                           **{k: fast for k in ("FAST_MATH", "FAST_DIV") if k in default}})
    space = template.space({"n": N})
    valid = [c for c in picked if space.rejection(c) is None]
    return [valid[0], *host_sample(valid[1:])] if len(valid) > 1 else valid


ALL = ["kepler_solve", *sorted(KERNELS)]


@pytest.mark.parametrize("name", ALL)
def test_items_leave_on_their_own_and_print_what_the_kernel_prints(name: str) -> None:
    source, entry, grid, block, _ = _kernel(name)
    lifted = _lift(name)
    knobs = {p.name for p in lifted.params}
    assert "ITEMS_PER_THREAD" in knobs, lifted.notes
    assert "FAST_MATH" in knobs or name in GUARDED, lifted.notes  # these call no math
    written = KernelTemplate.build(name=entry, source=source, entry=entry, grid=grid,
                                   block=block)
    template = lifted_template(lifted, entry)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = _run(written, {}, name, work, "written")
        assert len(want) == N and "-7" not in want
        for k, config in enumerate(_configs(template)):
            assert _run(template, config, name, work, f"c{k}") == want, config


@pytest.mark.parametrize("name", [n for n in ALL if n not in GUARDED])
def test_the_items_bodies_are_straight_line(name: str) -> None:
    """Every statement of these loops is safe for an item in any state: no `if (!done)`
    branch per item; an item that left gets its state back by a select."""
    source = _lift(name).source
    assert "if (!wb_done[wb_it])" not in source, source
    assert "wb_keep_" in source and "? wb_keep_" in source, source


def test_a_load_at_the_items_place_keeps_the_guarded_form() -> None:
    """An item past the end must not load at its place: the loop reading `a[i]` keeps the
    `if (!done)` test; the `while` after it (registers only) is straight-line."""
    source = _lift("two_exits_in_a_row").source
    heron, halving = source.split("while (true)")
    assert "if (!wb_done[wb_it])" in heron and "wb_keep_" not in heron, source
    assert "if (!wb_done[wb_it])" not in halving and "wb_keep_y" in halving, source
    assert source.count("bool wb_done[") == 2


def test_a_test_that_changes_the_state_is_not_run_for_items_that_left() -> None:
    """`if (++c > 12 ...) break;`: the exit keeps its `continue` (the state an item leaves
    with includes the test's update); `while (k++ < 40 ...)`: not shared (the test would
    count on for items that left), each item runs it whole in its turn."""
    source = _lift("counting_tests").source
    assert "wb_done[wb_it] = true; continue;" in source and "wb_keep_" not in source, source
    assert "while (true)" not in source, source
    assert "while (k[wb_it]++ < 40 && y[wb_it] > 0.01f)" in source, source


def test_an_item_while_becomes_one_loop_the_items_share() -> None:
    source = _lift("fixed_point_while").source
    assert "while (true) {" in source, source
    assert "wb_done[wb_it] = wb_done[wb_it] | !(fabsf(d[wb_it]) > 1e-6f && it[wb_it] < 200)" \
        in source, source


def test_sin_and_cos_of_one_argument_become_one_sincosf() -> None:
    for name, where in (("kepler_solve", "E, &wb_sin0, &wb_cos0"),
                        ("newton_exit_first_constexpr", "x[wb_it], &wb_sin0, &wb_cos0")):
        lifted = _lift(name)
        assert f"WB_F_sincosf({where})" in lifted.source, lifted.source
        assert "sinf(" not in lifted.source.split("#endif")[-1].replace("WB_F_sincosf", "")
        assert any("SINCOS: applied" in n for n in lifted.notes), lifted.notes


SINCOS_REFUSED = {
    # the angle changes between the two calls
    "assigned_between": "  float s = sinf(v);\n  v = v * 0.5f;\n  float c = cosf(v);\n",
    # a statement between them
    "not_adjacent": "  float s = sinf(v);\n  float w = v * v;\n  float c = cosf(v) + w;\n",
    # one call on a side of a choice: it would run where it did not
    "under_choice": "  float s = sinf(v);\n  float c = v > 0.0f ? cosf(v) : 1.0f;\n",
    # different arguments
    "other_argument": "  float s = sinf(v);\n  float c = cosf(2.0f * v);\n",
}


@pytest.mark.parametrize("name", sorted(SINCOS_REFUSED))
def test_sin_and_cos_the_analysis_cannot_pair_stay_two_calls(name: str) -> None:
    body = SINCOS_REFUSED[name]
    source = ('extern "C" __global__ void k(float* out, const float* x, int n) {\n'
              "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
              "  float v = x[i], acc = 0.0f;\n  for (int t = 0; t < 8; ++t) {\n"
              "    acc += v * (float)t;\n  }\n" + body + "  out[i] = acc + s + c;\n}\n")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "sincosf" not in lifted.source.split("#endif")[-1], lifted.source
    assert "WB_F_sinf(" in lifted.source and "WB_F_cosf(" in lifted.source, lifted.source


def test_fast_math_names_the_calls_it_replaces() -> None:
    specs = {p.name: dict(p.spec) for p in _lift("bisection_exit_mid").params}
    assert "expf as __expf" in str(specs["FAST_MATH"]["description"]), specs
    specs = {p.name: dict(p.spec) for p in _lift("kepler_solve").params}
    assert "sinf/cosf pairs (one sincosf) as __sincosf" in \
        str(specs["FAST_MATH"]["description"]), specs


@needs_nvcc
def test_the_largest_item_count_compiles_without_spills() -> None:
    template = lifted_template(_lift("kepler_solve"), "kepler_solve")
    with tempfile.TemporaryDirectory() as tmp:
        for fast in (0, 1):
            config = {**template.default_config(), "ITEMS_PER_THREAD": 8, "FAST_MATH": fast,
                      "FAST_DIV": fast}
            cu = Path(tmp) / f"k{fast}.cu"
            cu.write_text(template.render(config, "fp32").source)
            done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                                   str(cu.with_suffix(".cubin")), str(cu)],
                                  capture_output=True, text=True, timeout=120, check=True)
            spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", done.stderr)
            assert spills and all(s == "0" for s in spills), done.stderr
