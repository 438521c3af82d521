"""Items per thread with independent state on per-element compute kernels written as
people write them, not as the corpus does: a grid-stride loop under a grid that covers the
data (the stride inline, or a ``const`` local), the work in a helper whose loop is the item's
(a template ``kepler<24>``, a Lanczos sum reading ``__constant__``), piecewise special
functions that store and ``return`` per branch, a Bessel approximation, a series that stops
on its own test, an RK4 step in a helper, a bisection in double. Each lift runs on the host
(g++, every thread of the launch in turn) at its default and its corner configs and must
print exactly what the kernel as written prints; spellings the analysis cannot prove legal
are refused naming the line. Also: the gate's repair at a shape where only the defaults and
extremes ran excludes a failing knob value, not a relation fitted to the check shape
(pendulum_settle's FAST_MATH, wrong at its large shape on the H100, 2026-11-27).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import (
    end_configs,
    host_sample,
    lifted_template,
    needs_gxx,
    run_merged_on_host,
)
from test_corpus_unseen3 import _SPILLS, _ptxas_log
from test_templater_ilp_spellings import _HOST, N, checked_configs, program

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config, Status, TrialResult
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate
from workbench.llm.gate_repair import validate_and_tighten
from workbench.templater import LiftedSource, lift_kernel, offline_template

ROOT = Path(__file__).resolve().parents[1]

# name -> (source, grid, block, arguments in order: kinds as in test_templater_ilp_spellings,
# "in" a float input of 2N, "dbl_in"/"dbl_out" double ones, scalars by name)
KERNELS: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    # a grid-stride loop, the stride a const local: one trip per thread under ceil_div(n, 256)
    "newton_grid_stride_local": ("""
extern "C" __global__ void k(float* out, const float* in, int n) {
  const int stride = blockDim.x * gridDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float a = in[i] + 2.0f;
    float r = a > 1.0f ? a : 1.0f;
    for (int it = 0; it < 12; ++it) r = r - (r * r * r - a) / (3.0f * r * r);
    out[i] = r;
  }
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "n"]),
    # the stride inline, `i = i + S`, size_t, the long spelling of the grid, a while inside
    "series_grid_stride_sizet": ("""
extern "C" __global__ void k(float* y, const float* x, int n) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e = e + (size_t)gridDim.x * blockDim.x) {
    const float v = x[e];
    float term = 1.0f, sum = 1.0f;
    int j = 1;
    while (j < 30) {
      term = term * v / (float)j;
      sum += term;
      ++j;
    }
    y[e] = sum;
  }
}
""", ["(n + 127) // 128"], ["128"], ["out", "in", "n"]),
    # __restrict__ pointers, a flat guard: VEC would apply, but the body is a compute loop
    "cbrt_newton_restrict_flat": ("""
extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ in, int n) {
  const int t = blockIdx.x * 128 + threadIdx.x;
  if (t < n) {
    const float a = fabsf(in[t]) + 1.0f;
    float r = a;
    #pragma unroll 2
    for (int it = 0; it < 10; ++it) r = (2.0f * r + a / (r * r)) / 3.0f;
    out[t] = r;
  }
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "n"]),
    # the item's loop in a template helper
    "kepler_template_helper": ("""
template <int ITERS>
__device__ float kepler(float m, float e) {
  float E = m;
  for (int k = ITERS; k > 0; --k) E = m + e * sinf(E);
  return E;
}
extern "C" __global__ void k(float* ecc_anom, const float* mean_anom, const float* ecc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ecc_anom[i] = kepler<24>(mean_anom[i], 0.5f * ecc[i]);
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "in", "n"]),
    # a helper that reads __constant__ in a loop (free of effects, not pure), double
    "lanczos_constant_helper": ("""
__constant__ double lanczos_c[9];
__device__ double lgamma_lanczos(double z) {
  double x = lanczos_c[0];
  for (int j = 1; j < 9; ++j) x += lanczos_c[j] / (z + (double)j);
  const double t = z + 7.5;
  return 0.918938533204673 + (z + 0.5) * log(t) - t + log(fabs(x));
}
extern "C" __global__ void k(double* out, const double* z, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lgamma_lanczos(z[i] + 3.0);
}
""", ["ceil_div(n, 128)"], ["128"], ["dbl_out", "dbl_in", "n", "dconst:lanczos_c:9"]),
    # piecewise: each branch stores and returns; the series in a helper
    "piecewise_store_return": ("""
#define TERMS 40
__device__ float series(float a, float x) {
  float t = 1.0f / a, s = t, ap = a;
  for (int q = 0; q < TERMS; q++) { ap += 1.0f; t *= x / ap; s += t; }
  return s;
}
extern "C" __global__ void k(float* p, const float* a, const float* x, int n) {
  const int i = threadIdx.x + blockDim.x * blockIdx.x;
  if (i >= n) return;
  const float av = fabsf(a[i]) + 0.5f, xv = x[i];
  if (xv <= 0.0f) {
    p[i] = 0.0f;
    return;
  }
  const float front = expf(-xv) * xv;
  if (xv < av + 1.0f) {
    p[i] = front * series(av, xv);
    return;
  }
  p[i] = 1.0f - front / xv;
}
""", ["ceil_div(n, 64)"], ["64"], ["out", "in", "in", "n"]),
    # RK4 steps, the derivative a helper, the step count a kernel argument
    "rk4_helper_steps_argument": ("""
__device__ __forceinline__ float rhs(float t, float y, float k) { return -k * y + sinf(t); }
extern "C" __global__ void k(float* yout, const float* y0, const float* rate, int n, int maxit) {
  int tid = threadIdx.x + blockDim.x * blockIdx.x;
  if (tid >= n) return;
  float y = y0[tid];
  const float kk = rate[tid];
  const float h = 0.01f;
  float t = 0.0f;
  for (int s = 0; s < maxit; s++) {
    float k1 = rhs(t, y, kk);
    float k2 = rhs(t + 0.5f * h, y + 0.5f * h * k1, kk);
    float k3 = rhs(t + 0.5f * h, y + 0.5f * h * k2, kk);
    float k4 = rhs(t + h, y + h * k3, kk);
    y += h / 6.0f * (k1 + 2.0f * k2 + 2.0f * k3 + k4);
    t += h;
  }
  yout[tid] = y;
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "in", "n", "maxit"]),
    # a bisection in double, leaving on its own tolerance (a while on the item's state)
    "bisect_while_tolerance_double": ("""
extern "C" __global__ void k(double* root, const double* ca, const double* cb, int n) {
  const unsigned e = blockIdx.x * 96u + threadIdx.x;
  if (e < n) {
    const double a = ca[e], b = cb[e];
    double lo = 0.0, hi = 4.0;
    int guard = 0;
    while (hi - lo > 1e-9 && guard < 60) {
      const double mid = 0.5 * (lo + hi);
      const double f = mid * mid * mid + a * mid - b - 2.0;
      if (f > 0.0) hi = mid; else lo = mid;
      ++guard;
    }
    root[e] = 0.5 * (lo + hi);
  }
}
""", ["ceil_div(n, 96)"], ["96"], ["dbl_out", "dbl_in", "dbl_in", "n"]),
    # a do/while series until convergence, unsigned index
    "exp_series_do_while": ("""
extern "C" __global__ void k(float* y, const float* x, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    float term = 1.0f, sum = 1.0f;
    int k = 1;
    do {
      term *= v / (float)k;
      sum += term;
      k++;
    } while (fabsf(term) > 1e-7f * fabsf(sum) && k < 40);
    y[i] = sum;
  }
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "n"]),
}

ENV = {"n": N, "maxit": 50}


def scalars(args: list[str]) -> dict[str, str]:
    return {a: a for a in args if a in ENV}


def lift(name: str) -> LiftedSource:
    source, grid, block, args = KERNELS[name]
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars=scalars(args))


def _double_program(source: str, args: list[str], grid: int, block: int) -> str:
    """The float program of test_templater_ilp_spellings with double arrays and constants."""
    plain = [{"dbl_in": "in", "dbl_out": "out"}.get(a, a.replace("dconst:", "const:"))
             for a in args]
    text = program(source, plain, grid, block)
    for k, a in enumerate(args):
        if a.startswith("dbl"):
            text = text.replace(f"std::vector<float> a{k}(", f"std::vector<double> a{k}(")
    return text.replace("(float)((j * 7 + 3) % 11) / 11.0f - 0.3f + 0.05f * j",
                        "(double)((j * 7 + 3) % 11) / 11.0 + 0.3 + 0.05 * j")


def _program(template: KernelTemplate, config: dict[str, Any], args: list[str]) -> str:
    env = {**ENV, "elem_bytes": 4}
    launch = template.launch_for(config, env)
    source = template.render(config, "fp32").source if template.params else template.source
    return _double_program(source, args, launch.grid[0], launch.block[0])


@needs_gxx
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(name: str) -> None:
    source, grid, block, args = KERNELS[name]
    lifted = lift(name)
    assert "ITEMS_PER_THREAD" in {p.name for p in lifted.params}, lifted.notes
    written = KernelTemplate.build(name="k", source=source, entry="k", grid=grid, block=block)
    template = lifted_template(lifted)
    configs = host_sample(checked_configs(template))
    programs = [_program(written, {}, args)] + [_program(template, c, args) for c in configs]
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_merged_on_host(Path(tmp), "all", _HOST, programs)
    want = printed[0].split()
    assert len(want) == N * sum(a in ("out", "iout", "dbl_out") for a in args)
    assert "-7" not in want  # every output written
    for config, got in zip(configs, printed[1:], strict=True):
        assert got.split() == want, config


def test_a_grid_stride_loop_run_once_is_the_guarded_item() -> None:
    for name in ("newton_grid_stride_local", "series_grid_stride_sizet"):
        lifted = lift(name)
        applied = [f.reason for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"
                   and f.applied]
        assert applied and "interleave the items" in applied[0], lifted.notes
        assert "wb_live[wb_it] = false; continue;" in lifted.source  # the loop's test
        assert "gridDim" not in lifted.source.split("for (int wb_it")[1]  # no second trip


@pytest.mark.parametrize(("old", "new", "why"), [
    # a capped grid: a thread may take several trips
    ("", "", "is not ceil_div(n, BLOCK_THREADS): a thread may take more than one"),
    ("out[i] = r;", "out[i] = r; if (r > 9.0f) break;", "leaves the grid-stride loop"),
    ("out[i] = r;", "out[i] = r + (float)gridDim.x;", "reads gridDim other than in the"),
    ("i < n;", "i <= n;", "is not `i < n`"),
])
def test_grid_stride_loops_that_may_run_twice_are_refused_with_the_line(
        old: str, new: str, why: str) -> None:
    source, grid, block, _args = KERNELS["newton_grid_stride_local"]
    if not old:
        grid = ["min(ceil_div(n, 256), 1024)"]
    else:
        assert old in source
        source = source.replace(old, new)
    lifted = lift_kernel(source, entry="k", grid=grid, block=block, scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: not applied")]
    assert found and why in found[0] and "(line " in found[0], lifted.notes
    assert "ITEMS_PER_THREAD" not in {p.name for p in lifted.params}


def test_a_helper_loop_is_the_item_work_and_a_helper_writing_memory_is_refused() -> None:
    lifted = lift("kepler_template_helper")
    note = next(n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: applied"))
    assert "calls of `kepler` (its loop at line 5)" in note
    lifted = lift("lanczos_constant_helper")
    assert "ITEMS_PER_THREAD" in {p.name for p in lifted.params}, lifted.notes
    # the same helper writing a global counter is not free of effects: refused, with why
    source, grid, block, args = KERNELS["lanczos_constant_helper"]
    source = source.replace("__constant__ double lanczos_c[9];",
                            "__constant__ double lanczos_c[9];\n__device__ int calls;").replace(
        "  const double t = z + 7.5;", "  calls += 1;\n  const double t = z + 7.5;")
    lifted = lift_kernel(source, entry="k", grid=grid, block=block, scalars=scalars(args))
    found = [n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: not applied")]
    assert found and "`calls += 1` writes memory (line 7)" in found[0], lifted.notes
    # a template helper writing through its pointer: refused too (it was read as pure)
    source = KERNELS["kepler_template_helper"][0].replace(
        "__device__ float kepler(float m, float e) {",
        "__device__ float kepler(float m, float e, float* trace) {\n  trace[0] = m;").replace(
        "0.5f * ecc[i])", "0.5f * ecc[i], ecc_anom)")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 256)"], block=["256"],
                         scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: not applied")]
    assert found and "writes memory" in found[0], lifted.notes


def test_a_branch_that_stores_and_returns_ends_its_item() -> None:
    lifted = lift("piecewise_store_return")
    assert lifted.source.count("wb_live[wb_it] = false; continue;  // this item is done") == 2
    # a return that is not the branch's last statement stays refused
    source = KERNELS["piecewise_store_return"][0].replace(
        "    p[i] = 0.0f;\n    return;\n", "    return;\n    p[i] = 0.0f;\n")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 64)"], block=["64"],
                         scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: not applied")]
    assert found and "`return` other than a top-level" in found[0], lifted.notes


# -- the gate's repair at another shape --------------------------------------------------

PENDULUM = ROOT / "benchmarks" / "corpus_compute_unseen6" / "pendulum_settle"


def test_a_fast_math_value_wrong_at_the_large_shape_is_excluded_there() -> None:
    """FAST_MATH=1 right at the check shape, wrong at the large one (only the defaults and
    each knob's extremes run there): the repair excludes the value, FAST_MATH != 1, where a
    relation fitted to the check shape's passes (FAST_MATH <= MIN_BLOCKS_PER_SM) kept 464
    FAST_MATH=1 configs of the large shape's space."""
    folder = load_kernel_folder(PENDULUM)
    made = offline_template(folder)

    def wrong_at_large(template: KernelTemplate, config: Config, shape: str,
                       dtype: str) -> TrialResult:
        wrong = shape == "large" and config.get("FAST_MATH") == 1
        return TrialResult(config=config, shape=shape, dtype=dtype,
                           status=Status.WRONG_RESULT if wrong else Status.OK,
                           reason="theta_out: 2 of 524288 elements outside atol=0.0005"
                           if wrong else "")
    gated = validate_and_tighten(made.proposal, folder, correctness=wrong_at_large)
    assert gated.added_constraints == ("FAST_MATH != 1",), gated.notes
    assert gated.report.ok and gated.template is not None
    space: SearchSpace = gated.template.space(folder.env("large", "fp32"))
    assert not [c for c in space if c["FAST_MATH"] == 1]
    assert any("gate repair added FAST_MATH != 1" in n for n in gated.notes)


@pytest.mark.parametrize(("source", "grid", "block", "why"), [
    # a 2-D block whose threads are numbered by hand (the index is no block offset plus
    # threadIdx.x: the items' x place cannot be lifted)
    ("""
#define TB_X 32
#define TB_Y 8
extern "C" __global__ void k(double* root, const double* ca, int n) {
  const int e = blockIdx.x * (TB_X * TB_Y) + threadIdx.y * TB_X + threadIdx.x;
  if (e >= n) return;
  double lo = 0.0, hi = 4.0;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid * mid * mid - ca[e] > 0.0) hi = mid; else lo = mid;
  }
  root[e] = 0.5 * (lo + hi);
}
""", ["ceil_div(n, 256)"], ["32", "8"], "no top-level `T i = blockIdx.x * B + threadIdx.x`"),
    # a 2-D grid flattened into the item's index
    ("""
extern "C" __global__ void k(float* out, const float* th0, int n) {
  int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float th = th0[i], om = 0.0f;
  for (int s = 0; s < 200; ++s) { om -= 0.005f * sinf(th); th += 0.005f * om; }
  out[i] = th;
}
""", ["ceil_div(n, 128)", "1"], ["128"], "no top-level `T i = blockIdx.x * B + threadIdx.x`"),
])
def test_a_compute_loop_the_items_cannot_reach_says_why(source: str, grid: list[str],
                                                         block: list[str], why: str) -> None:
    lifted = lift_kernel(source, entry="k", grid=grid, block=block, scalars={"n": "n"})
    found = [n for n in lifted.notes if n.startswith("ITEMS_PER_THREAD: not applied")]
    assert found and why in found[0] and "(line " in found[0], lifted.notes


def test_a_compute_loop_goes_to_the_items_not_to_vector_lanes() -> None:
    """With __restrict__ pointers VEC could apply to the element; its lanes would run the
    Newton loop one after another, the items interleave it (vector.py leaves it to ilp)."""
    lifted = lift("cbrt_newton_restrict_flat")
    found = [n for n in lifted.notes if n.startswith("VEC: not applied")]
    assert found and "runs a compute loop (line 8)" in found[0], lifted.notes
    applied = [f.reason for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"
               and f.applied]
    assert applied and "interleave the items" in applied[0], lifted.notes
    # a memory-bound element keeps VEC
    source = KERNELS["cbrt_newton_restrict_flat"][0].replace(
        "    #pragma unroll 2\n    for (int it = 0; it < 10; ++it) r = (2.0f * r + a / (r * r)) / 3.0f;\n",
        "")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "VEC" in {p.name for p in lifted.params}, lifted.notes


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_items_compile_without_spills_at_the_last_corner(tmp_path: Path) -> None:
    template = lifted_template(lift("piecewise_store_return"))
    config = end_configs(template, ENV)[-1]
    assert config["ITEMS_PER_THREAD"] == 8
    log = _ptxas_log(template.render(config, "fp32").source, tmp_path, "corner")
    spills = _SPILLS.findall(log)
    assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"
