"""The offline templater on grid-stride reductions to one result per block (reduce.py).

The family written several ways (macros or literals, ``#ifndef`` defaults, ``for`` or
``while``, ``k >>= 1`` or ``k /= 2``, sums and maxima, a partial per block or one atomicAdd):
each lifts GRID_BLOCKS / VEC / ITEMS_PER_THREAD / FINAL with the constraints that keep it
correct, and compiles with nvcc at its defaults and corners; near misses are refused with the
reason and the line. A slow tier runs sampled configs on the host (every thread a coroutine,
``__syncthreads`` and each shuffle a yield) and checks the partials add up.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import COOPERATIVE_BLOCK, host_sample, lifted_template, run_on_host

from workbench.core.template import KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.engine.source_policy import check_source
from workbench.templater import LiftedSource, lift_kernel

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"

# name -> (source, grid, block, reduction kind, partial slots or 0 for one atomic scalar)
KERNELS: dict[str, tuple[str, list[str], list[str], str, int]] = {
    "macros_for_shift": (
        (ROOT / "corpus_compute" / "partial_sum" / "baseline.cu").read_text(),
        ["1024"], ["256"], "sum", 1024),
    "literals_blockdim_while_div": (r"""
extern "C" __global__ void k(float* out, const float* __restrict__ x, int n) {
  __shared__ float sdata[128];
  const int tid = threadIdx.x;
  const int stride = blockDim.x * gridDim.x;
  float acc = 0.0f;
  int i = blockIdx.x * blockDim.x + tid;
  while (i < n) {
    acc = acc + x[i];
    i += stride;
  }
  sdata[tid] = acc;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {
    if (tid < s) { sdata[tid] = sdata[tid] + sdata[tid + s]; }
    __syncthreads();
  }
  if (tid == 0) { out[blockIdx.x] = sdata[0]; }
}
""", ["512"], ["128"], "sum", 512),
    "ifndef_defaults_dot": (r"""
#ifndef NT
#define NT 512
#endif
extern "C" __global__ void k(float* partial, const float* a, const float* b, int n) {
  __shared__ float red[NT];
  float t = 0.0f;
  for (int j = threadIdx.x + NT * blockIdx.x; j < n; j += gridDim.x * NT) t += a[j] * b[j];
  red[threadIdx.x] = t;
  __syncthreads();
  for (int h = NT / 2; h >= 1; h >>= 1) {
    if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
}
""", ["min(ceil_div(n, 512), 256)"], ["512"], "sum", 256),
    "max_fmaxf": (r"""
extern "C" __global__ void k(float* block_max, const float* __restrict__ x, int n) {
  __shared__ float m[256];
  float best = -3.0e38f;
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * gridDim.x)
    best = fmaxf(best, fabsf(x[i]));
  m[threadIdx.x] = best;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) m[threadIdx.x] = fmaxf(m[threadIdx.x], m[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) block_max[blockIdx.x] = m[0];
}
""", ["1024"], ["256"], "max", 1024),
    "int_max": (r"""
extern "C" __global__ void k(int* out, const int* __restrict__ v, int n) {
  __shared__ int m[256];
  int best = -2147483647;
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * gridDim.x) best = max(best, v[i]);
  m[threadIdx.x] = best;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) m[threadIdx.x] = max(m[threadIdx.x], m[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = m[0];
}
""", ["264"], ["256"], "max", 264),
    "atomic_scalar": (r"""
#define BLOCK 256
extern "C" __global__ void k(float* total, const float* __restrict__ x, int n) {
  __shared__ float part[BLOCK];
  float s = 0.0f;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) s += x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = BLOCK / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, part[0]);
}
""", ["528"], ["256"], "sum", 0),
}


def lift(name: str) -> LiftedSource:
    source, grid, block, _kind, _slots = KERNELS[name]
    entry = "partial_sum" if name == "macros_for_shift" else "k"
    return lift_kernel(source, entry=entry, grid=grid, block=block, scalars={"n": "n"})


def template_of(name: str, lifted: LiftedSource) -> KernelTemplate:
    return lifted_template(lifted, "partial_sum" if name == "macros_for_shift" else "k")


def applied(lifted: LiftedSource) -> set[str]:
    return {f.transform for f in lifted.findings if f.applied}


def refusal(lifted: LiftedSource, transform: str = "REDUCTION") -> str:
    found = [str(f) for f in lifted.findings if f.transform == transform and not f.applied]
    assert found, lifted.notes
    return found[0]


ENV = {"n": 100003, "elem_bytes": 4}


def corners(template: KernelTemplate) -> list[dict[str, Any]]:
    """Defaults, then each knob at its extremes with the others at defaults, and all at once
    at their most aggressive valid values."""
    space = template.space(ENV)
    base = dict(template.default_config())
    out = [base]
    for p in template.params:
        for v in (min(p.values()), max(p.values())):
            c = {**base, p.name: v}
            if space.rejection(c) is None and c not in out:
                out.append(c)
    valid = [dict(c) for c in space]
    out.append(max(valid, key=lambda c: (c.get("VEC", 1), c.get("ITEMS_PER_THREAD", 1),
                                         c.get("FINAL", 0), -int(c.get("GRID_BLOCKS", 0)))))
    return out


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_spelling_lifts_the_reduction_knobs(name: str) -> None:
    lifted = lift(name)
    names = {p.name for p in lifted.params}
    assert {"REDUCTION", "GRID_BLOCKS", "ITEMS_PER_THREAD", "FINAL"} <= applied(lifted), \
        lifted.notes
    assert {"GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD", "FINAL"} <= names, lifted.notes
    # no divisibility constraint: the body loads the tail elements alone
    assert not any("% VEC" in c for c in lifted.constraints), lifted.constraints
    template = template_of(name, lifted)
    assert not check_source(lifted.source).refusals
    space = template.space(ENV)
    default = template.default_config()
    assert space.rejection(default) is None
    _source, grid, block, _kind, slots = KERNELS[name]
    launch = template.launch_for(default, ENV)
    from workbench.core.expr import parse_expr
    assert launch.grid[0] == int(parse_expr(grid[0]).evaluate(ENV))
    assert launch.block[0] == int(block[0])
    if slots:  # never more blocks than partial slots, at any config
        assert all(template.launch_for(c, ENV).grid[0] <= slots for c in space)
        assert f"GRID_BLOCKS <= {slots}" in lifted.constraints


def test_partial_sum_gets_the_expert_knobs_and_keeps_the_tree_block_pow2() -> None:
    folder = ROOT / "corpus_compute" / "partial_sum" / "expert"
    data = tomllib.loads((folder / "kernel.toml").read_text())
    lifted = lift("macros_for_shift")
    spec = {p.name: dict(p.spec) for p in lifted.params}
    assert spec["BLOCK_THREADS"]["kind"] == "pow2"  # the FINAL == 0 tree halves the block
    assert spec["GRID_BLOCKS"]["default"] == 1024 and max(spec["GRID_BLOCKS"]["values"]) == 1024
    assert {132, 264, 528} <= set(spec["GRID_BLOCKS"]["values"])  # H100 waves
    assert set(data["template"]["params"]["VEC"]["values"]) <= set(spec["VEC"]["values"])
    assert "#define THREADS BLOCK_THREADS" in lifted.source  # the author's macro follows
    assert "partials[wb_b] = (float)0" in lifted.source  # unlaunched slots hold 0


def test_a_maximum_fills_unused_slots_with_its_identity_not_zero() -> None:
    float_max = lift("max_fmaxf").source
    assert "block_max[wb_b] = (-__int_as_float(0x7f800000))" in float_max
    assert "wb_r = fmaxf(wb_r, __shfl_down_sync" in float_max
    assert "best = fmaxf(best, wb_acc[wb_u])" in float_max
    int_max = lift("int_max").source
    assert "out[wb_b] = (-2147483647 - 1)" in int_max
    # the min-capped slot count is the written rule in kernel arithmetic
    dot = lift("ifndef_defaults_dot").source
    assert "wb_b < (((n + 512 - 1) / 512) < 256 ? ((n + 512 - 1) / 512) : 256)" in dot


def test_an_unknown_identity_keeps_the_block_count() -> None:
    source = KERNELS["max_fmaxf"][0].replace("float", "short").replace("fmaxf", "max") \
        .replace("fabsf", "abs").replace("-3.0e38f", "-32000")
    lifted = lift_kernel(source, entry="k", grid=["1024"], block=["256"], scalars={"n": "n"})
    assert "the identity of max for short is not known" in refusal(lifted, "GRID_BLOCKS")
    assert "GRID_BLOCKS" not in {p.name for p in lifted.params}
    assert list(lifted.grid) == ["1024"]


def test_atomic_kernels_capped_by_min_keep_the_flat_lifts() -> None:
    source = KERNELS["atomic_scalar"][0]
    lifted = lift_kernel(source, entry="k", grid=["min(ceil_div(n, 256), 1024)"],
                         block=["256"], scalars={"n": "n"})
    assert "already capped by min(...)" in refusal(lifted)
    assert "FINAL" not in {p.name for p in lifted.params}
    # the flat vector lift, as committed: a scalar tail where n is no multiple of VEC
    assert "VEC" in {p.name for p in lifted.params}
    assert "the vector would cross n: one by one" in lifted.source


@pytest.mark.parametrize(("change", "why"), [
    (("s += x[i];", "s *= x[i];"), "is not a sum, max or min into a local accumulator"),
    (("i += THREADS * gridDim.x", "i += THREADS * gridDim.x * 2"), "the loop steps by"),
    (("int i = blockIdx.x * THREADS + threadIdx.x;", "int i = threadIdx.x;"),
     "the loop starts at"),
    (("    __syncthreads();\n  }", "  }"), "the tree's body is not"),
    (("partials[blockIdx.x] = buf[0]", "partials[blockIdx.x] = buf[1]"),
     "is not `out[blockIdx.x] = buf[0]`"),
    (("for (int k = THREADS / 2;", "for (int k = THREADS / 4;"),
     "does not start at half the block"),
    (("if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];",
      "if (threadIdx.x < k) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + k]);"),
     "is not the loop's sum"),
])
def test_near_misses_are_refused_with_the_reason_and_line(change: tuple[str, str],
                                                           why: str) -> None:
    source = KERNELS["macros_for_shift"][0]
    old, new = change
    assert old in source
    lifted = lift_kernel(source.replace(old, new), entry="partial_sum", grid=["1024"],
                         block=["256"], scalars={"n": "n"})
    found = refusal(lifted)
    assert why in found and "(line " in found, found
    assert "FINAL" not in {p.name for p in lifted.params}


def test_an_index_used_as_a_value_keeps_items_but_not_vectors() -> None:
    source = KERNELS["macros_for_shift"][0].replace("s += x[i];", "s += x[i] * (float)(i & 1);")
    lifted = lift_kernel(source, entry="partial_sum", grid=["1024"], block=["256"],
                         scalars={"n": "n"})
    assert "not only as `A[i]`" in refusal(lifted, "VEC")
    assert {"ITEMS_PER_THREAD", "FINAL", "GRID_BLOCKS"} <= {p.name for p in lifted.params}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_templates_compile_at_defaults_and_corners(name: str, compiler: Compiler) -> None:
    template = template_of(name, lift(name))
    for config in host_sample(corners(template)):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{name} {config}: {result.error_summary}\n{result.log[-2000:]}"


# -- host simulation of the launch ----------------------------------------------------------

_HARNESS = COOPERATIVE_BLOCK + r"""
template <typename T> static T __shfl_down_sync(unsigned, T v, int o) {
  static T slot[1024];
  const unsigned t = threadIdx.x;
  slot[t] = v;
  wb_yield();  // every lane of the warp has written its value
  const T r = (t % 32) + o < 32 ? slot[t + o] : v;
  wb_yield();  // every lane has read before any writes again
  return r;
}
static float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static void atomicAdd(float* p, float v) { *p += v; }
"""

_MAIN = r"""
int main() {
  const int n = %(n)d;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = (float)((i * 37) %% 17 - 8);
  std::vector<float> out(%(slots)d, NAN);
  wb_launch({%(gx)d, 1, 1}, {%(bx)d, 1, 1}, [&] { %(entry)s(out.data(), x.data(), n); });
  double got = %(init)s, want = %(init)s;
  for (int i = 0; i < n; ++i) want = %(want)s;
  for (float v : out) { if (std::isnan(v)) { std::printf("unwritten\n"); return 0; } }
  for (float v : out) got = %(fold)s;
  std::printf("%%.1f %%.1f\n", got, want);
  return 0;
}
"""


def simulate(name: str, template: KernelTemplate, config: dict[str, Any], work: Path,
             n: int) -> tuple[float, float]:
    """(the partials folded by the host, the exact answer) of one config run on the host."""
    _source, _grid, _block, kind, slots = KERNELS[name]
    launch = template.launch_for(config, {**ENV, "n": n})
    source = template.render(config, "fp32").source
    fold = "got + v" if kind == "sum" else "std::max(got, (double)v)"
    want = "want + x[i]" if kind == "sum" else "std::max(want, (double)std::fabs(x[i]))"
    main = _MAIN % {"n": n, "slots": slots, "bx": launch.block[0], "gx": launch.grid[0],
                    "entry": template.entry, "want": want, "fold": fold,
                    "init": "0.0" if kind == "sum" else "-1e300"}
    printed = run_on_host(work, "sim", _HARNESS + source + main, run_timeout_s=300)
    assert printed.strip() != "unwritten", f"{config}: a partial slot was never written"
    got, expected = map(float, printed.split())
    return got, expected


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", ["literals_blockdim_while_div", "max_fmaxf"])
def test_sampled_configs_reduce_to_the_right_answer(name: str) -> None:
    template = template_of(name, lift(name))
    space = [dict(c) for c in template.space(ENV)]
    rng = random.Random(28)
    configs = [dict(template.default_config()), *rng.sample(space, 3)]
    configs.append({**template.default_config(), "VEC": 4, "ITEMS_PER_THREAD": 2, "FINAL": 1,
                    "GRID_BLOCKS": min(c["GRID_BLOCKS"] for c in space)})
    with tempfile.TemporaryDirectory() as tmp:
        for config in host_sample(configs):
            got, want = simulate(name, template, config, Path(tmp), n=20011)
            assert got == want, config
