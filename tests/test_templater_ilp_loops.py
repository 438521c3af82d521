"""Items per thread on per-element kernels whose body is a loop on the item's state, in the
spellings :mod:`workbench.templater.ilp_loops` reads: a bisection ``while`` with an exit that
sets the bracket then breaks (implied_vol_bisect, read from its folder), a Newton solve as
``do { } while`` with a double accumulator, a bracket search as ``for (;;)`` calling a helper
with an exit that resets the bracket, an escape-time count as ``while (1)``, Heron's rule as a
``for`` whose header declares its counter and tests the item (a counter per item), and a
``for`` of fixed length whose exit stores the root before it breaks (the header kept).

Each lifted template runs on the host (g++, every thread of the launch in turn) and must
print bit for bit what the kernel as written prints, at the default, at every all-ends
corner and at sampled configs (the host's ``__expf`` is ``expf``: FAST_MATH 1 checks the
rewrite, the gate checks the GPU's approximation). Refused loops name their line and what is
missing. nvcc compiles the corners without spills.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import end_configs, host_sample, lifted_template, run_on_host

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

N = 613  # no multiple of any block * items: the last block has items past the end
IMPLIED = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen5" / \
    "implied_vol_bisect"

KERNELS: dict[str, tuple[str, str]] = {
    # Newton on x^3 + p x = q as do/while, a double accumulator of the steps' sizes
    "newton_do_while": ("""
#ifndef TPB
#define TPB 160
#endif
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  const int e = threadIdx.x + TPB * blockIdx.x;
  if (e < n) {
    const float p = 1.0f + 2.0f * fabsf(a[e]), q = 3.0f * b[e];
    float x = q / p, dx;
    double travel = 0.0;
    int rounds = 0;
    do {
      const float f = (x * x + p) * x - q;
      dx = f / (3.0f * x * x + p);
      x -= dx;
      travel += (double)fabsf(dx);
      rounds++;
    } while (fabsf(dx) > 1e-6f * fabsf(x) && rounds < 25);
    out[e] = x + (float)(travel * 1e-3) + 0.0001f * rounds;
  }
}
""", "160"),
    # a bracket around the root of a helper by widening, as for (;;) with two exits: the
    # second resets the bracket before it leaves
    "bracket_forever_helper": ("""
constexpr float kGrow = 1.6f;
__device__ float shifted_tanh(float u, float c) { return tanhf(u) - c + 0.05f * u; }
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int idx = blockDim.x * blockIdx.x + threadIdx.x;
  if (idx >= n) return;
  float c = 2.5f * a[idx], lo = -0.25f + b[idx], hi = 0.25f + b[idx], w = 0.5f;
  float flo, fhi;
  for (;;) {
    flo = shifted_tanh(lo, c);
    fhi = shifted_tanh(hi, c);
    if (flo * fhi <= 0.0f) break;
    lo -= w;
    hi += w;
    w *= kGrow;
    if (w > 40.0f) {
      lo = -1.0f;
      hi = 1.0f;
      break;
    }
  }
  out[idx] = lo + hi + 0.01f * (flo - fhi) + expf(-w);
}
""", "128"),
    # escape-time count: while (1) with the count tested after its increment
    "escape_while_one": ("""
#define MAXIT 64
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  if (gid < n) {
    const float cr = 2.5f * a[gid] - 1.5f, ci = 1.6f * b[gid] - 0.8f;
    float zr = 0.0f, zi = 0.0f;
    int count = 0;
    while (1) {
      const float zr2 = zr * zr, zi2 = zi * zi;
      if (zr2 + zi2 > 4.0f) break;
      zi = 2.0f * zr * zi + ci;
      zr = zr2 - zi2 + cr;
      count++;
      if (count >= MAXIT) break;
    }
    out[gid] = (float)count + 0.125f * logf(1.0f + zr * zr + zi * zi);
  }
}
""", "96"),
    # Heron's square root as a for whose header declares its counter and tests the item
    "heron_for_counter_in_header": ("""
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  const int id = (int)(blockIdx.x * blockDim.x) + (int)threadIdx.x;
  if (id >= n) return;
  const float v = 2.0f + 50.0f * a[id];
  float x = 1.0f + b[id], d = 1.0f;
  for (int r = 0; fabsf(d) > 1e-6f * x && r < 30; r++) {
    const float nx = 0.5f * (x + v / x);
    d = nx - x;
    x = nx;
  }
  out[id] = x;
}
""", "224"),
    # a decay read from the item's input every trip (a load at the item's place: the
    # guarded form, `if (!done)`), its exit flipping the sign before it breaks
    "decay_guarded_exit_actions": ("""
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int j = blockIdx.x * 128 + threadIdx.x;
  if (j >= n) return;
  float level = 4.0f + b[j];
  int trips = 0;
  while (trips < 200) {
    level = level * 0.9f - 0.01f * a[j];
    ++trips;
    if (level < 1.0f) { level = -level; trips += 1000; break; }
  }
  out[j] = level + (float)trips;
}
""", "128"),
    # a regula falsi of fixed length whose exit stores the root and breaks (header kept)
    "falsi_for_store_then_break": ("""
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int i = blockIdx.x * 64 + threadIdx.x;
  if (i >= n) return;
  const float s = 0.5f + a[i];
  float l = 0.0f, h = 2.0f + b[i], fl = -s, fh = h * h - s, root = -1.0f;
  for (int t = 0; t < 30; ++t) {
    const float m = (l * fh - h * fl) / (fh - fl);
    const float fm = m * m - s;
    if (fabsf(fm) < 1e-6f) { root = m; break; }
    if (fm < 0.0f) { l = m; fl = fm; } else { h = m; fh = fm; }
  }
  out[i] = root + sqrtf(l + h);
}
""", "64"),
}

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
#define __expf(v) expf(v)
#define __logf(v) logf(v)
#define __sinf(v) sinf(v)
#define __cosf(v) cosf(v)
#define __fdividef(a, b) ((a) / (b))
"""


def _implied_inputs() -> list[np.ndarray]:
    """The folder's own inputs (reference.py), N options."""
    spec = importlib.util.spec_from_file_location("implied_reference", IMPLIED / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made = module.make_inputs({"n": N}, "fp32", np.random.default_rng(7))
    return [made[k] for k in ("price", "spot", "strike", "years")]


def _inputs(name: str) -> list[np.ndarray]:
    if name == "implied_vol_bisect":
        return _implied_inputs()
    j = np.arange(N)
    return [((j * (37 + 14 * k) + k) % 997 / 997.0).astype(np.float32) for k in range(2)]


def _kernel(name: str) -> tuple[str, str, list[str], list[str]]:
    """(source, entry, grid, block) of a spelling or of implied_vol_bisect."""
    if name == "implied_vol_bisect":
        kf = load_kernel_folder(IMPLIED)
        rules = kf.baseline.launch.to_dict()
        return kf.baseline.source, kf.baseline.entry, list(rules["grid"]), list(rules["block"])
    source, block = KERNELS[name]
    return source, "k", [f"ceil_div(n, {block})"], [block]


def _lift(name: str) -> LiftedSource:
    source, entry, grid, block = _kernel(name)
    return lift_kernel(source, entry=entry, grid=grid, block=block, scalars={"n": "n"})


def _program(source: str, entry: str, inputs: list[np.ndarray], grid: int, block: int) -> str:
    # each value a double literal of the float32 value: converted back exactly
    arrays = [f"static float in{k}[{N}] = {{" + ", ".join(f"(float){float(v)!r}" for v in a)
              + "};" for k, a in enumerate(inputs)]
    args = ", ".join(["o.data()", *(f"in{k}" for k in range(len(inputs))), str(N)])
    return (_HOST + source + "\n" + "\n".join(arrays) + "\nint main() {\n"
            f"  std::vector<float> o({N}, -7.0f);\n"
            f"  gridDim = {{{grid}, 1, 1}}; blockDim = {{{block}, 1, 1}};\n"
            f"  for (unsigned b = 0; b < {grid}; ++b) for (unsigned t = 0; t < {block}; ++t)"
            f" {{\n    blockIdx = {{b, 0, 0}}; threadIdx = {{t, 0, 0}};\n    {entry}({args});\n"
            f"  }}\n  for (int j = 0; j < {N}; ++j) std::printf(\"%.9g\\n\", (double)o[j]);\n"
            "  return 0;\n}\n")


def _run(template: KernelTemplate, config: dict[str, Any], name: str, work: Path,
         tag: str) -> list[str]:
    _source, entry, _grid, _block = _kernel(name)
    launch = template.launch_for(config, {"n": N})
    source = template.render(config, "fp32").source if template.params else template.source
    return run_on_host(work, tag, _program(source, entry, _inputs(name), launch.grid[0],
                                           launch.block[0])).split()


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The default, the all-ends corners, then every item count with the fast math off and
    on at a block of 96 (a multiple of 32, not a power of two)."""
    default = dict(template.default_config())
    picked = end_configs(template, {"n": N})
    for items in (2, 4, 8):
        for fast in (0, 1):
            picked.append({**default, "BLOCK_THREADS": 96, "ITEMS_PER_THREAD": items,
                           **{k: fast for k in ("FAST_MATH", "FAST_DIV", "BRANCHLESS")
                              if k in default}})
    space = template.space({"n": N})
    valid = [c for c in picked if space.rejection(c) is None]
    return [default, *host_sample(valid)]


ALL = ["implied_vol_bisect", *sorted(KERNELS)]


@pytest.mark.parametrize("name", ALL)
def test_items_share_the_loop_and_print_what_the_kernel_prints(name: str) -> None:
    source, entry, grid, block = _kernel(name)
    lifted = _lift(name)
    knobs = {p.name for p in lifted.params}
    assert "ITEMS_PER_THREAD" in knobs, lifted.notes
    written = KernelTemplate.build(name=entry, source=source, entry=entry, grid=grid,
                                   block=block)
    template = lifted_template(lifted, entry)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = _run(written, {}, name, work, "written")
        assert len(want) == N and "-7" not in want
        for k, config in enumerate(_configs(template)):
            assert _run(template, config, name, work, f"c{k}") == want, config


GUARDED = {"decay_guarded_exit_actions"}


def test_a_load_at_the_items_place_keeps_the_exit_actions_under_the_items_test() -> None:
    source = _lift("decay_guarded_exit_actions").source
    assert "if (!wb_done[wb_it]) {" in source and "wb_keep_" not in source, source
    assert "{ level[wb_it] = -level[wb_it]; trips[wb_it] += 1000; wb_done[wb_it] = true; " \
        "continue; }" in source, source


@pytest.mark.parametrize("name", [n for n in ALL if n not in GUARDED])
def test_the_items_bodies_are_straight_line(name: str) -> None:
    """Every statement of these loops is safe for an item in any state (registers and pure
    calls): no `if (!done)` branch per item; an item that left gets its state back by a
    select, and an exit's actions run only for the item leaving there."""
    source = _lift(name).source
    assert "if (!wb_done[wb_it]) {" not in source, source
    assert "? wb_keep_" in source, source
    if name != "falsi_for_store_then_break":
        assert "while (true) {" in source, source  # its header read as the items' tests
    else:
        assert "for (int t = 0; t < 30; ++t)" in source, source  # a shared counter


def test_the_bisection_gets_fast_math_in_its_helpers() -> None:
    """implied_vol_bisect: expf/logf in both helpers behind FAST_MATH; every fp32 division
    of the repeated work, the helper's helper and a float macro's included, behind
    FAST_DIV; the exit's actions under the item's own test."""
    lifted = _lift("implied_vol_bisect")
    assert {"ITEMS_PER_THREAD", "FAST_MATH", "FAST_DIV"} <= {p.name for p in lifted.params}
    assert "WB_F_expf(-0.5f * a * a)" in lifted.source and "WB_F_logf(" in lifted.source
    assert "WB_DIV(1.0f, (1.0f + 0.2316419f * a))" in lifted.source, lifted.source
    assert "WB_DIV((WB_F_logf(WB_DIV(S, K)) + (RATE" in lifted.source, lifted.source
    assert "if (wb_leave) { lo[wb_it] = mid[wb_it]; hi[wb_it] = mid[wb_it]; }" in \
        lifted.source, lifted.source


REFUSED = {
    # a `continue` of the loop: each item would need its own jump to the test
    "continue": ("    if (x > 3.0f) { x *= 0.5f; continue; }\n", 11, "`continue;`"),
    # a `break` under a nested test, not an exit `if` directly in the body
    "nested_break": ("    if (x > 0.0f) { if (x < 1e-3f) break; }\n", 11, "a `break` other"),
    # a test that changes the state: items that left would run it on
    "test_writes": None,
}


def _refused_source(name: str) -> str:
    if name == "test_writes":
        return ('extern "C" __global__ void k(float* out, const float* a, int n) {\n'
                "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
                "  float x = 1.0f + a[i];\n  int c = 0;\n"
                "  while (c++ < 50 && x > 1e-4f) {\n    x = x * 0.7f;\n  }\n"
                "  out[i] = x + (float)c;\n}\n")
    extra = REFUSED[name]
    assert extra is not None
    return ('extern "C" __global__ void k(float* out, const float* a, int n) {\n'
            "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
            "  float x = 1.0f + a[i];\n  int c = 0;\n"
            "  while (x > 1e-4f && c < 50) {\n    x = x * 0.7f - 0.01f;\n    c++;\n\n\n"
            + extra[0] + "  }\n  out[i] = x + (float)c;\n}\n")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_loop_the_items_cannot_share_is_refused_naming_its_line(name: str) -> None:
    lifted = lift_kernel(_refused_source(name), entry="k", grid=["ceil_div(n, 128)"],
                         block=["128"], scalars={"n": "n"})
    refused = [str(f) for f in lifted.findings
               if f.transform == "ITEMS_PER_THREAD" and not f.applied]
    line, what = (6, "changes the item's state") if name == "test_writes" else \
        REFUSED[name][1:]  # type: ignore[index]
    assert refused and f"line {line}: " in refused[0] and str(what) in refused[0], refused
    assert "the loop at line 6 is not shared" in refused[0], refused
    # (items may still come by wrapping, each running its loop whole: not shared)
    assert "wb_done" not in lifted.source and "while (true)" not in lifted.source


@needs_nvcc
@pytest.mark.parametrize("name", ["implied_vol_bisect", "newton_do_while"])
def test_the_corners_compile_without_spills(name: str) -> None:
    template = lifted_template(_lift(name), _kernel(name)[1])
    corners = [c for c in end_configs(template, {"n": N}) if c["ITEMS_PER_THREAD"] == 8]
    with tempfile.TemporaryDirectory() as tmp:
        for k, config in enumerate(host_sample(corners)):
            cu = Path(tmp) / f"k{k}.cu"
            cu.write_text(template.render(config, "fp32").source)
            done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                                   str(cu.with_suffix(".cubin")), str(cu)],
                                  capture_output=True, text=True, timeout=120, check=True)
            spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", done.stderr)
            assert spills and all(s == "0" for s in spills), (config, done.stderr)


def _in_loop(ptx: str, op: str) -> tuple[int, int]:
    """(count of ``op`` before the outermost loop, count inside it) in ``ptx``."""
    lines = ptx.splitlines()
    labels = {ln.strip().rstrip(":"): k for k, ln in enumerate(lines) if ln.startswith("$L__BB")}
    back = [(labels[t], k) for k, ln in enumerate(lines) if "bra" in ln
            and (t := ln.split()[-1].rstrip(";")) in labels and labels[t] < k]
    top = min(back)[0]
    end = max(k for start, k in back if start == top)
    return sum(op in ln for ln in lines[:top]), sum(op in ln for ln in lines[top:end])


@needs_nvcc
def test_nvcc_still_hoists_the_items_loop_invariant_work() -> None:
    """The kernel as written: nvcc computes sqrtf(T) (and logf(S / K), K expf(-r T)) once,
    before the bisection loop. The items' shared loop is rotated (the test at the end of a
    trip) so it does the same for every item: no HOIST knob is needed."""
    template = lifted_template(_lift("implied_vol_bisect"), "implied_vol_bisect")
    written = _kernel("implied_vol_bisect")[0]
    with tempfile.TemporaryDirectory() as tmp:
        found = {}
        for tag, items in (("written", 0), ("one", 1), ("two", 2)):
            cu = Path(tmp) / f"{tag}.cu"
            cu.write_text(written if not items else template.render(
                {**template.default_config(), "ITEMS_PER_THREAD": items}, "fp32").source)
            subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", str(cu.with_suffix(".ptx")),
                            str(cu)], capture_output=True, timeout=120, check=True)
            ptx = cu.with_suffix(".ptx").read_text()
            found[tag] = (_in_loop(ptx, "sqrt.rn.f32"), _in_loop(ptx, "ex2.approx"))
    assert found["written"] == ((1, 0), (1, 2)), found  # hoisted as written
    assert found["one"] == found["written"], found
    assert found["two"] == ((2, 0), (2, 4)), found


def test_the_loops_own_unroll_pragma_goes_onto_the_items_loop() -> None:
    """`#pragma unroll 1` before a loop on the item's state: kept on the items' `while
    (true)` (left where it was it would precede the rotated loop's first test, no loop)."""
    source = ('extern "C" __global__ void k(float* out, const float* a, int n) {\n'
              "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
              "  float x = 1.0f + a[i];\n  int c = 0;\n#pragma unroll 1\n"
              "  while (x > 1e-4f && c < 50) {\n    x = x * 0.7f;\n    c++;\n  }\n"
              "  out[i] = x + (float)c;\n}\n")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    body = lifted.source.split("wb_done[ITEMS_PER_THREAD];")[1]
    assert body.count("#pragma unroll 1") == 1, lifted.source
    assert re.search(r"if \(!wb_all_done\)\n#pragma unroll 1[^\n]*\n\s*while \(true\) \{",
                     body), lifted.source
