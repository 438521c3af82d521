"""Set 20's crspline_rotmean (issue 28): a loop that reads a small table at a place a float of
each trip picks (a spline's knots, a lookup table's cells) is a compute loop the items with
independent state interleave (:mod:`workbench.templater.table_lookup`), not a walk over
memory per item (left to VEC, whose lanes would run the 64 trips one after another).

Spellings of the pattern, as different people write it: the spline of the corpus kernel with its
loop in the kernel, once a thread under ``if (i < n)`` (``%`` wraps, a clamp by ``?:``); and a
lookup table read by linear interpolation in a grid-stride loop launched once a thread
(``#define`` sizes, ``unsigned`` cells masked by ``&``). Each lifts ITEMS_PER_THREAD and
UNROLL, and runs on the host (g++, every thread of the launch) at its default, one mix and
its all-ends configs, printing exactly what the kernel as written prints. A third stages its
table in ``__shared__`` memory before the item's place (a block-stride fill, a barrier:
:mod:`workbench.templater.table_prologue`), run with every thread of a block a context (its
barrier as on the GPU). A row a float of the item picks and the counter walks is still a
walk, and a table written again after the barrier is not staged: no items interleave there.
A fourth runs its grid-stride loop 8 times a thread as launched (the expert's SPAN: the
items in rounds), and the corpus kernel itself, its functors written as lambdas, lifts the
expert's four knobs (BLOCK_THREADS, SPAN, ITEMS_PER_THREAD, UNROLL) and computes as written
through the folder's own host harness.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from held_back_harness import respelled, same_as_written
from held_back_unseen20 import SET
from helpers_templater import COOPERATIVE_BLOCK, host_configs, lifted_template, run_on_host
from test_corpus_unseen3 import host_flags  # noqa: F401  (a fixture)
from test_templater_ilp_spellings import ENV, N

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

# name -> (source, grid, block, arguments): every kernel is k(out, values, table, n), the
# values and the table 2N floats, the output N

KERNELS: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    "spline_guarded_modulo": ("""
constexpr int kKnots = 64;
constexpr int kSamples = 64;
constexpr float kStep = 0.61803398875f;
extern "C" __global__ void k(float* out, const float* u, const float* __restrict__ knots,
                             int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float x = u[i] - floorf(u[i]);
    float total = 0.0f;
    float offset = 0.0f;
    for (int k = 0; k < kSamples; ++k) {
      const float t0 = x + offset;
      const float t = t0 >= 1.0f ? t0 - 1.0f : t0;
      const float s = t * kKnots;
      const int seg = static_cast<int>(s);
      const int c = seg < kKnots ? seg : kKnots - 1;
      const float f = s - c;
      const float p0 = knots[(c + kKnots - 1) % kKnots];
      const float p1 = knots[c];
      const float p2 = knots[(c + 1) % kKnots];
      const float p3 = knots[(c + 2) % kKnots];
      const float c1 = 0.5f * (p2 - p0);
      const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
      const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
      total += ((c3 * f + c2) * f + c1) * f + p1;
      const float o = offset + kStep;
      offset = o >= 1.0f ? o - 1.0f : o;
    }
    out[i] = total * (1.0f / kSamples);
  }
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "in", "n"]),
    "lut_lerp_gridstride_mask": ("""
#define CELLS 32
#define STEPS 40
extern "C" __global__ void k(float* y, const float* x, const float* lut, int n) {
  for (int e = threadIdx.x + blockIdx.x * blockDim.x; e < n; e += blockDim.x * gridDim.x) {
    float phase = fabsf(x[e]);
    float acc = 0.0f;
    for (int s = 0; s < STEPS; s++) {
      float pos = phase * (float)CELLS;
      unsigned cell = (unsigned)pos;
      float w = pos - (float)cell;
      float lo = lut[cell & (CELLS - 1)];
      float hi = lut[(cell + 1u) & (CELLS - 1)];
      acc += lo + w * (hi - lo);
      phase = phase * 0.75f + 0.125f;
    }
    y[e] = acc / STEPS;
  }
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "in", "n"]),
    "staged_knots_early_return": ("""
#define KN 64
extern "C" __global__ void k(float* out, const float* __restrict__ u,
                             const float* __restrict__ knots, int n) {
  __shared__ float kn[KN];
  for (int j = threadIdx.x; j < KN; j += blockDim.x) kn[j] = knots[j];
  __syncthreads();
  int i = threadIdx.x + blockDim.x * blockIdx.x;
  if (i >= n) return;
  float x = fabsf(u[i]);
  x = x - (int)x;
  float sum = 0.0f, shift = 0.0f;
  for (int q = 0; q < 48; q++) {
    float t = x + shift;
    if (t >= 1.0f) t -= 1.0f;
    float s = t * KN;
    int seg = (int)s;
    float f = s - seg;
    float a = kn[seg & (KN - 1)], b = kn[(seg + 1) & (KN - 1)];
    sum += a + f * (b - a);
    shift += 0.38196601f;
    if (shift >= 1.0f) shift -= 1.0f;
  }
  out[i] = sum * (1.0f / 48);
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "in", "n"]),
    # the corpus kernel with its functors written into the loop: a table staged by the block,
    # 8 trips a thread over a grid-stride loop (the expert's SPAN), as launched
    "rotmean_staged_eight_trips": ("""
constexpr int kKnots = 64;
constexpr int kSamples = 64;
constexpr float kStep = 0.61803398875f;
extern "C" __global__ void k(float* out, const float* u, const float* table, int n) {
  __shared__ float knots[kKnots];
  for (int j = threadIdx.x; j < kKnots; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = fabsf(u[i]) - (int)fabsf(u[i]);
    float total = 0.0f;
    float offset = 0.0f;
    for (int k = 0; k < kSamples; ++k) {
      const float w = v + offset;
      const float t = w >= 1.0f ? w - 1.0f : w;
      const float s = t * kKnots;
      const int c = (int)s < kKnots - 1 ? (int)s : kKnots - 1;
      const float f = s - c;
      const float p0 = knots[(c + kKnots - 1) % kKnots];
      const float p1 = knots[c];
      const float p2 = knots[(c + 1) % kKnots];
      const float p3 = knots[(c + 2) % kKnots];
      const float c1 = 0.5f * (p2 - p0);
      const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
      const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
      total += ((c3 * f + c2) * f + c1) * f + p1;
      const float o = offset + kStep;
      offset = o >= 1.0f ? o - 1.0f : o;
    }
    out[i] = total * (1.0f / kSamples);
  }
}
""", ["ceil_div(n, 2048)"], ["256"], ["out", "in", "in", "n"]),
}

# A row that a float of the item picks, walked by the counter: a walk, not a lookup.
ROW_WALK = """
#define K 16
extern "C" __global__ void k(float* out, const float* x, const float* w, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  const int row = (int)(fabsf(v) * 8.0f);
  float acc = 0.0f;
  for (int j = 0; j < K; ++j) acc += w[row * K + j] * v;
  out[i] = acc;
}
"""


def lift(name: str) -> LiftedSource:
    source, grid, block, args = KERNELS[name]
    return lift_kernel(source, entry="k", grid=grid, block=block,
                       scalars={a: a for a in args if a in ENV})


def run(template: KernelTemplate, config: dict[str, int], work: Path, tag: str) -> list[str]:
    """The outputs of ``template`` at ``config`` on the host, every thread of the launch a
    context of its block (barriers and shared memory as on the GPU)."""
    launch = template.launch_for(config, ENV)
    source = template.render(config, "fp32").source if template.params else template.source
    main = f"""
int main() {{
  std::vector<float> out({N}, -7.0f), x({2 * N}), tab({2 * N});
  for (int j = 0; j < {2 * N}; ++j) x[j] = (float)((j * 37) % 1013) / 97.0f - 3.1f;
  for (int j = 0; j < {2 * N}; ++j) tab[j] = (float)((j * 7 + 3) % 11) / 11.0f - 0.3f;
  wb_launch({{{launch.grid[0]}, 1, 1}}, {{{launch.block[0]}, 1, 1}},
            [&] {{ k(out.data(), x.data(), tab.data(), {N}); }});
  for (int j = 0; j < {N}; ++j) std::printf("%.9g\\n", (double)out[j]);
  return 0;
}}
"""
    # (the fast division's host form: the quotient, as the other host tests spell it)
    program = COOPERATIVE_BLOCK + "#include <cstdio>\n#include <vector>\n" + \
        "#define __fdividef(a, b) ((a) / (b))\n" + source + main
    return run_on_host(work, tag, program).split()


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_table_lookup_loop_interleaves_items_with_an_unroll(name: str) -> None:
    lifted = lift(name)
    names = [p.name for p in lifted.params]
    assert "ITEMS_PER_THREAD" in names and "UNROLL" in names and "VEC" not in names, \
        lifted.notes
    applied = [f.reason for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"
               and f.applied]
    assert applied and "interleave the items" in applied[0], lifted.notes
    # the grid: the items' blocks, or (a multi-trip loop) SPAN values a thread in rounds
    divisor = "SPAN" if "SPAN" in names else "ITEMS_PER_THREAD"
    assert f"BLOCK_THREADS * {divisor})" in lifted.grid[0], lifted.grid
    assert ("SPAN" in names) == (name == "rotmean_staged_eight_trips"), names


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(name: str) -> None:
    source, grid, block, _args = KERNELS[name]
    written = KernelTemplate.build(name="k", source=source, entry="k", grid=grid, block=block)
    template = lifted_template(lift(name))
    mixes = [{k: v for k, v in mix.items() if k in template.param_names} for mix in (
        {"ITEMS_PER_THREAD": 4, "UNROLL": 4, "BLOCK_THREADS": 96, "SPAN": 4},
        {"ITEMS_PER_THREAD": 2, "UNROLL": 2, "BLOCK_THREADS": 32, "SPAN": 16})]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = run(written, {}, work, "written")
        assert len(want) == N and "-7" not in want  # every output written
        assert len(set(want)) > N // 5  # the values differ: the table is read
        for k, config in enumerate(host_configs(template, ENV, mixes)):
            assert run(template, config, work, f"c{k}") == want, config


def test_a_row_the_item_picks_and_the_counter_walks_is_not_interleaved() -> None:
    lifted = lift_kernel(ROW_WALK, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert not any(f.transform == "ITEMS_PER_THREAD" and f.applied and
                   "interleave the items" in f.reason for f in lifted.findings), lifted.notes
    assert "UNROLL" not in {p.name for p in lifted.params}, lifted.notes


def test_a_table_written_after_the_items_place_is_not_staged() -> None:
    """The block writes its table again after the barrier, per item: the items would share
    one write where the thread as written made one an item (a refusal with its reason)."""
    source = KERNELS["staged_knots_early_return"][0].replace(
        "  out[i] = sum", "  kn[i & (KN - 1)] = sum;\n  out[i] = sum")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    refused = [f.reason for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"
               and not f.applied]
    assert any("__syncthreads" in r for r in refused), lifted.notes
    assert "UNROLL" not in {p.name for p in lifted.params}, lifted.notes


def test_a_return_in_a_loop_of_several_trips_refuses_the_items() -> None:
    """A ``return`` in a grid-stride loop a thread runs 8 times ends its later trips too:
    not one item's exit (refused with its reason and the loop's line)."""
    source, grid, block, _args = KERNELS["rotmean_staged_eight_trips"]
    source = source.replace("    float total = 0.0f;\n",
                            "    if (v > 0.99f) return;\n    float total = 0.0f;\n")
    lifted = lift_kernel(source, entry="k", grid=grid, block=block, scalars={"n": "n"})
    refused = [str(f) for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"
               and not f.applied]
    assert any("ends the thread's later trips" in r and "line 9" in r for r in refused), \
        lifted.notes
    assert "SPAN" not in {p.name for p in lifted.params}, lifted.notes


#: The corpus kernel with its functor objects written as lambdas (another hand's spelling of
#: the same kernel: the constants, the staged knots and the 8-trip grid-stride loop as in
#: the folder). functor_objects.py writes the folder's functor objects as such lambdas
#: (tests/test_templater_functor_objects.py runs the folder itself).
LAMBDAS = """
namespace {
constexpr int kKnots = 64;
constexpr int kSamples = 64;
constexpr float kStep = 0.61803398875f;
}  // namespace

extern "C" __global__ void crspline_rotmean(float* out, const float* u, const float* table,
                                            int n) {
  __shared__ float knots[kKnots];
  for (int j = threadIdx.x; j < kKnots; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  auto op_wrap = [&](float t) -> float { return t >= 1.0f ? t - 1.0f : t; };
  auto op_spline = [&](float t) -> float {
    const float s = t * kKnots;
    const int seg = min(static_cast<int>(s), kKnots - 1);
    const float f = s - seg;
    const float p0 = knots[(seg + kKnots - 1) % kKnots];
    const float p1 = knots[seg];
    const float p2 = knots[(seg + 1) % kKnots];
    const float p3 = knots[(seg + 2) % kKnots];
    const float c1 = 0.5f * (p2 - p0);
    const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
    const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
    return ((c3 * f + c2) * f + c1) * f + p1;
  };
  auto op = [&](float u) -> float {
    float total = 0.0f;
    float offset = 0.0f;
    for (int k = 0; k < kSamples; ++k) {
      total += op_spline(op_wrap(u + offset));
      offset = op_wrap(offset + kStep);
    }
    return total * (1.0f / kSamples);
  };
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = op(u[i]);
  }
}
"""


def test_the_corpus_kernel_spelled_with_lambdas_lifts_the_experts_knobs(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(SET.root / "crspline_rotmean", tmp_path / "folder", LAMBDAS)
    template = offline_template(kf).template
    assert {"BLOCK_THREADS", "SPAN", "ITEMS_PER_THREAD", "UNROLL"} <= set(template.param_names)
    assert "VEC" not in template.param_names
    env = kf.env(kf.check_shape, "fp32")
    pick = {"BLOCK_THREADS": 512, "SPAN": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 4}
    configs = host_configs(template, env, [pick])
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)
