"""FAST_MATH and FAST_DIV reach the ``__device__`` helpers the kernel calls (transitively,
in the same file), with the family's rules: the corpus's lambertw_halley (a Halley solve in
``lambert_w0``), and three spellings of our own: a chain kernel -> helper -> helper (the
inner one a ``while`` loop with ``expf``), a helper with a ``for`` loop counting down and
``logf``/``expf`` (an early ``return`` inside), and a template helper (``template <int>``,
called as ``f<6>(v)``). A helper another ``__global__`` kernel also calls is refused with the
line.

Each lifted template runs on the host (g++, every thread in turn) and prints bit for bit
what the kernel as written prints at FAST_MATH 0, and at FAST_MATH 1 too: the host's
``__expf`` is ``expf`` (as in test_templater_ilp_exits.py), so the host checks the rewrite,
the gate the GPU's approximations. ``nvcc -ptx -arch=sm_90`` shows the approximations at
FAST_MATH 1 (``ex2.approx.f32``: the precise ``expf`` uses the ``.ftz`` form;
``lg2.approx``; ``div.approx``) and none of them at 0.
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

N = 613  # no multiple of any block * items
LAMBERT = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen8" / \
    "lambertw_halley"

KERNELS: dict[str, tuple[str, str, int]] = {
    # kernel -> debye_like -> series_tail (a while loop with expf); #ifndef constant
    "chain": ("""
#ifndef TERMS
#define TERMS 10
#endif
__device__ float series_tail(float t) {
  float s = 0.0f;
  int m = 1;
  while (m <= TERMS) {
    const float e = expf(-t * (float)m);
    s += e / (1.0f + t * e);
    ++m;
  }
  return s;
}
__device__ float debye_like(float t) {
  const float u = fmaxf(t, 1e-3f);
  return logf(1.0f + series_tail(u)) / u;
}
extern "C" __global__ void k(float* out, const float* a, const float* b, int n) {
  int idx = threadIdx.x + blockIdx.x * blockDim.x;
  if (idx >= n) return;
  out[idx] = debye_like(a[idx] * 4.0f) + b[idx];
}
""", "128", 2),
    # a fixed-point solve counting down, an early return inside; constexpr count
    "loop_helper": ("""
constexpr int kIters = 16;
__device__ float fixed_point(float c, float g) {
  float y = c;
  for (int r = kIters; r > 0; --r) {
    y = c + g * logf(1.0f + y * y) - 0.1f * expf(-y);
    if (y > 50.0f) return 50.0f;
  }
  return y / (1.0f + g);
}
extern "C" __global__ void k(float* dst, const float* src, const float* gain, int count) {
  const unsigned e = blockIdx.x * 64u + threadIdx.x;
  if (e < (unsigned)count) dst[e] = fixed_point(src[e], 0.25f * gain[e]);
}
""", "64", 2),
    # a template helper: Newton on w + exp(w) = z, the step count a template parameter
    "template_helper": ("""
template <int STEPS>
__device__ float wright_newton(float z) {
  float w = z > 1.0f ? logf(z) : 0.5f * z;
  for (int s = 0; s < STEPS; s++) {
    const float ew = expf(w);
    w = w - (w + ew - z) / (1.0f + ew);
    if (w > 1e30f) break;  // an item may leave: the helper stays a call
  }
  return w;
}
extern "C" __global__ void k(float* y, const float* v, const float* unused, int n) {
  int t = blockDim.x * blockIdx.x + threadIdx.x;
  if (t < n) y[t] = wright_newton<6>(3.0f * v[t] + unused[t]);
}
""", "256", 2),
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
#define __fdividef(a, b) ((a) / (b))
"""


def _kernel(name: str) -> tuple[str, str, list[str], list[str], int]:
    """(source, entry, grid, block, inputs) of a spelling or of lambertw_halley."""
    if name == "lambertw_halley":
        kf = load_kernel_folder(LAMBERT)
        rules = kf.baseline.launch.to_dict()
        return kf.baseline.source, kf.baseline.entry, list(rules["grid"]), \
            list(rules["block"]), 1
    source, block, n_in = KERNELS[name]
    return source, "k", [f"ceil_div(n, {block})"], [block], n_in


def _lift(name: str) -> LiftedSource:
    source, entry, grid, block, _ = _kernel(name)
    return lift_kernel(source, entry=entry, grid=grid, block=block, scalars={"n": "n"})


def _program(source: str, entry: str, n_in: int, grid: int, block: int) -> str:
    # inputs in [-0.3, 4.7): lambertw's three starting branches all run
    ins = [f"  std::vector<float> a{k}({N});\n  for (int j = 0; j < {N}; ++j) a{k}[j] = "
           f"(float)((j * {37 + 14 * k} + {k}) % 997) / 199.4f - 0.3f;" for k in range(n_in)]
    args = ", ".join(["o.data()", *(f"a{k}.data()" for k in range(n_in)), str(N)])
    return (_HOST + source + "\nint main() {\n" + "\n".join(ins) +
            f"\n  std::vector<float> o({N}, -7.0f);\n"
            f"  gridDim = {{{grid}, 1, 1}}; blockDim = {{{block}, 1, 1}};\n"
            f"  for (unsigned b = 0; b < {grid}; ++b) for (unsigned t = 0; t < {block}; ++t)"
            f" {{\n    blockIdx = {{b, 0, 0}}; threadIdx = {{t, 0, 0}};\n    {entry}({args});\n"
            f"  }}\n  for (int j = 0; j < {N}; ++j) std::printf(\"%.9g\\n\", (double)o[j]);\n"
            "  return 0;\n}\n")


def _run(template: KernelTemplate, config: dict[str, Any], name: str, work: Path,
         tag: str) -> list[str]:
    _source, entry, _grid, _block, n_in = _kernel(name)
    launch = template.launch_for(config, {"n": N})
    source = template.render(config, "fp32").source if template.params else template.source
    return run_on_host(work, tag, _program(source, entry, n_in, launch.grid[0],
                                           launch.block[0])).split()


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The math as written and the fast math on at the corners: 1 item at the smallest
    block (the default's math), 8 items at a block of 96 (host_sample: these two; the full
    matrix adds 4 items as written and 2 items fast)."""
    default: dict[str, Any] = dict(template.default_config())
    fast = [k for k in ("FAST_MATH", "FAST_DIV") if k in default]
    picked = [{**default, "BLOCK_THREADS": block, "ITEMS_PER_THREAD": items,
               **{k: on for k in fast}}
              for block, items, on in ((32, 1, 0), (96, 4, 0), (64, 2, 1), (96, 8, 1))]
    space = template.space({"n": N})
    valid = [c for c in picked if space.rejection(c) is None]
    assert valid[-1]["ITEMS_PER_THREAD"] == 8, space.rejection(picked[-1])
    return host_sample(valid)


ALL = ["lambertw_halley", *sorted(KERNELS)]
#: the knobs each lift must show: FAST_DIV where an fp32 division sits in a helper's loop
WANT = {"lambertw_halley": {"FAST_MATH", "FAST_DIV"}, "chain": {"FAST_MATH", "FAST_DIV"},
        "loop_helper": {"FAST_MATH"}, "template_helper": {"FAST_MATH", "FAST_DIV"}}
#: (helper, rewritten calls) each FAST_MATH finding counts
COUNTS = {"lambertw_halley": [("lambert_w0", 3)],
          "chain": [("series_tail", 1), ("debye_like", 1)],
          "loop_helper": [("fixed_point", 2)], "template_helper": [("wright_newton", 2)]}


@pytest.mark.parametrize("name", ALL)
def test_helper_math_gets_the_knobs_and_counts_per_helper(name: str) -> None:
    lifted = _lift(name)
    knobs = {p.name for p in lifted.params}
    assert WANT[name] | {"ITEMS_PER_THREAD"} <= knobs, lifted.notes
    notes = " ".join(str(n) for n in lifted.notes)
    for helper, count in COUNTS[name]:
        assert re.search(rf"`{helper}` \(line \d+\) {count}\b", notes), notes
    # every expf and logf call is routed (the macros name them without a call)
    assert re.search(r"(?<!\w)(expf|logf)\(", lifted.source) is None, lifted.source


@pytest.mark.parametrize("name", ALL)
def test_lifted_helpers_print_what_the_kernel_prints(name: str) -> None:
    source, entry, grid, block, _ = _kernel(name)
    template = lifted_template(_lift(name), entry)
    written = KernelTemplate.build(name=entry, source=source, entry=entry, grid=grid,
                                   block=block)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = _run(written, {}, name, work, "written")
        assert len(want) == N and "-7" not in want
        for k, config in enumerate(_configs(template)):
            assert _run(template, config, name, work, f"c{k}") == want, config


def test_a_helper_another_kernel_calls_is_refused_with_the_line() -> None:
    source = KERNELS["loop_helper"][0] + """
extern "C" __global__ void other(float* o, const float* a, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) o[j] = fixed_point(a[j], 1.0f);
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 64)"], block=["64"],
                         scalars={"n": "n"})
    assert "FAST_MATH" not in {p.name for p in lifted.params}, lifted.source
    assert "WB_F_" not in lifted.source
    assert any(n.startswith("FAST_MATH: not applied: `fixed_point` (line 3)") and
               "`other`" in n for n in lifted.notes), lifted.notes


def _ptx(source: str, config: dict[str, Any], template: KernelTemplate,
         work: Path, tag: str) -> str:
    cu = work / f"{tag}.cu"
    cu.write_text(template.render(config, "fp32").source)
    out = work / f"{tag}.ptx"
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "-o", str(out), str(cu)], check=True,
                   capture_output=True, timeout=120)
    return out.read_text()


APPROX = ("ex2.approx.f32", "lg2.approx.f32", "div.approx.f32")


@needs_nvcc
def test_the_ptx_shows_the_approximations_at_fast_math_1_only() -> None:
    source, entry, *_ = _kernel("lambertw_halley")
    template = lifted_template(_lift("lambertw_halley"), entry)
    default = dict(template.default_config())
    with tempfile.TemporaryDirectory() as tmp:
        off = _ptx(source, default, template, Path(tmp), "off")
        on = _ptx(source, {**default, "FAST_MATH": 1, "FAST_DIV": 1}, template, Path(tmp),
                  "on")
    for op in APPROX:
        assert re.search(rf"\b{re.escape(op)}\b", on), op
        assert not re.search(rf"\b{re.escape(op)}\b", off), op


_ROOT_HELPER = """
__device__ float h(const float* p, float q, int j, int m) {{
  float acc = 0.0f;
  for (int t = 0; t < m; ++t) {{
    const float r = sqrtf({arg} + (float)t);
    acc += expf(acc * 0.01f) / r;
    if (acc > 1e30f) break;  // an item may leave: the helper stays a call
  }}
  return acc;
}}
extern "C" __global__ void k(float* out, const float* a, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = h(a, 0.5f * (float)i, i, 8);
}}
"""


@pytest.mark.parametrize(("arg", "rewritten"), [("q", True), ("p[j]", False)])
def test_a_helpers_root_local_is_divided_by_as_a_multiply_unless_it_reads_memory(
        arg: str, rewritten: bool) -> None:
    """In a helper, ``r = sqrtf(x)`` with ``e / r`` as ``e * rsqrtf(x)`` re-reads ``x`` at
    the division: a value parameter may, a memory read may not (a write through another
    pointer may alias it)."""
    lifted = lift_kernel(_ROOT_HELPER.format(arg=arg), entry="k", grid=["ceil_div(n, 128)"],
                         block=["128"], scalars={"n": "n"})
    assert "FAST_MATH" in {p.name for p in lifted.params}, lifted.notes
    assert ("WB_SQRT(" in lifted.source.split("#endif")[-1]) is rewritten, lifted.source
