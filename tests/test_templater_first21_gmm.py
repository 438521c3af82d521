"""First contact with held-back set 21's Gaussian-mixture log-likelihood (issue 28):
benchmarks/corpus_compute_unseen21/gmm_loglik_k16 is written in C++17 (``const auto x =
xy[2 * i];``, a lambda ``log_term`` whose locals are ``const auto``). INLINE_BODY wrote the
lambda into its calls and ITEMS_PER_THREAD gave each item-dependent local one copy per item
by writing its declaration as an array: ``auto x[ITEMS_PER_THREAD] = {};``, which is not
C++ ("auto type cannot appear in top-level array type"): nvcc refused the lift and nothing
was written (the expert: 1.42x on the H200). An ``auto`` local that gets one copy per item
now has its type written out, the type C++ deduces from its initialiser
(:mod:`workbench.templater.auto_types`: ``int i[..]``, ``float x[..]``), or the items refuse
with the line where the initialiser's type is not known.

Spellings: the folder, and a second hand's (``#define`` sizes, the precision as one 3 x 16
``__constant__`` table, a ``__device__`` helper instead of the lambda, ``auto`` for an
``unsigned`` index, a ``float2`` point and a ``double`` sum). Each lifts ITEMS_PER_THREAD
and UNROLL with the copies typed; on the host (g++) each prints at the default and a mix
exactly what the kernel as written prints (under WORKBENCH_FULL_MATRIX=1 also at the
expert's H200 pick in the lift's knobs and every all-ends config); nvcc compiles each at its
first and last all-ends config (every one under WORKBENCH_FULL_MATRIX=1).

Every family reads such a local typed: before the analysis each ``auto`` local of the
kernel whose initialiser tells its type is declared with it (``typed_autos``; the register
tile, conv, stencil and centre families had copied ``auto acc`` into ``auto acc[TM][TN]``
too: a C++17 GEMM here lifts its tile with ``float acc[TM][TN]``, host-checked).

Then the gap to the expert: UNROLL reached the max pass only, so the sum pass stayed a
loop computing each of the 16 quadratic forms again (PTX at 4 items: 8 ex2 in a loop body,
1027 instructions). The expert unrolls both passes; its CACHE of the terms compiles to the
same PTX as without it (nvcc folds the second pass's forms into the first's once both are
unrolled). The knob now unrolls each shared loop beside the first (none inside another),
its whole value the largest trip count: at the expert's pick the lift's PTX computes each
form once, as the expert's.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import held_back_unseen21
import pytest
from held_back_harness import respelled, same_as_written
from helpers_nvcc import NVCC, needs_nvcc, ptx_of
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    end_configs,
    host_sample,
    lifted_template,
    run_on_host,
)
from regtile_spellings import HOST_VECTOR
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.cuda_source import CudaSourceError, parse_cuda
from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import lift_kernel, offline_template
from workbench.templater.analysis import text, walk
from workbench.templater.auto_types import Parsed, type_name, typed_autos, value_type
from workbench.templater.inline_calls import InlinedSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import lift_default_shape  # its HELD_BACK: the sets never lifted

FOLDER = held_back_unseen21.SET.root / "gmm_loglik_k16"
#: The expert's H200 pick (THREADS 64, ITEMS 3, CACHE 1, FAST 1) in the lift's knobs: 4 items
#: (the lift offers 1, 2, 4, 8), both passes unrolled whole (the expert's are); the lift has
#: no cache of the terms (nvcc computes each once where both passes are unrolled whole).
EXPERT_PICK = {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 16, "FAST_MATH": 1}
#: 128 threads of two points (1000 points over four blocks, the last partly), the shared
#: loop by 4, the fast exponential, the records staged, four blocks an SM
MIX = {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 2, "UNROLL": 4, "FAST_MATH": 1, "STAGE": 1,
       "MIN_BLOCKS_PER_SM": 4}

_CONSTANTS = """
__constant__ float mx[NCOMP] = {
    1.687f, 0.635f, 1.259f, -2.465f, 0.784f, 2.885f, -0.46f, -2.326f,
    2.75f, 1.056f, -1.817f, 1.032f, 2.956f, -1.743f, 2.123f, 1.193f};
__constant__ float my[NCOMP] = {
    -1.67f, -1.891f, 2.725f, -0.957f, -0.352f, 0.937f, -0.358f, -2.998f,
    -1.438f, -0.167f, 1.568f, 0.638f, -0.419f, -1.854f, 1.708f, -1.877f};
__constant__ float prec[3][NCOMP] = {
    {2.35819f, 2.45292f, 1.63382f, 2.50399f, 5.12128f, 4.94858f, 1.48385f, 4.50959f,
     10.384f, 5.26617f, 0.948458f, 1.8701f, 1.93812f, 3.61471f, 1.18084f, 8.71559f},
    {1.88061f, 3.07013f, 0.281986f, -0.281235f, -1.06101f, -0.725657f, 0.551785f, 2.168f,
     0.361281f, 3.07848f, -1.43343f, -2.86142f, -1.28103f, 1.32511f, -0.695692f, 4.051f},
    {2.82165f, 14.1947f, 1.33672f, 0.755523f, 1.35749f, 7.44809f, 1.64856f, 3.96318f,
     0.798878f, 11.7951f, 12.5261f, 11.0696f, 3.57543f, 1.32106f, 1.9409f, 3.12816f}};
__constant__ float lognorm[NCOMP] = {
    -4.75511f, -2.91464f, -4.61557f, -4.11921f, -3.66271f, -2.79584f, -4.25296f, -3.05612f,
    -3.36235f, -3.59778f, -3.14676f, -3.57041f, -4.19654f, -3.8283f, -4.04434f, -3.27233f};
"""

#: Another hand: ``#define`` sizes, one precision table, a helper function, an ``unsigned``
#: index (``auto`` of ``blockIdx.x * blockDim.x + ..``), a ``float2`` point, a guard around
#: the work, the sum in ``double``.
SECOND = "#define NCOMP 16\n" + _CONSTANTS + """
__device__ __forceinline__ float half_form(float dx, float dy, int c) {
  return 0.5f * (prec[0][c] * dx * dx + 2.0f * prec[1][c] * dx * dy + prec[2][c] * dy * dy);
}

extern "C" __global__ void gmm_loglik_k16(float* ll, const float* xy, int n) {
  auto idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < (unsigned)n) {
    auto pt = reinterpret_cast<const float2*>(xy)[idx];
    auto best = -1.0e30f;
    for (int c = 0; c < NCOMP; c++) {
      auto e = lognorm[c] - half_form(pt.x - mx[c], pt.y - my[c], c);
      best = fmaxf(best, e);
    }
    auto acc = 0.0;
    for (int c = 0; c < NCOMP; c++) {
      auto e = lognorm[c] - half_form(pt.x - mx[c], pt.y - my[c], c);
      acc += exp(e - best);
    }
    ll[idx] = best + static_cast<float>(log(acc));
  }
}
"""

#: The term from a function template: the type of ``auto e`` is the template's to say.
TEMPLATED = "#define NCOMP 16\n" + _CONSTANTS + """
template <typename T>
__device__ T half_form(T dx, T dy, int c) {
  return T(0.5) * (prec[0][c] * dx * dx + 2 * prec[1][c] * dx * dy + prec[2][c] * dy * dy);
}

extern "C" __global__ void k(float* ll, const float* xy, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  const float x = xy[2 * i], y = xy[2 * i + 1];
  float best = -1.0e30f;
  for (int c = 0; c < NCOMP; ++c) {
    auto e = lognorm[c] - half_form(x - mx[c], y - my[c], c);
    best = fmaxf(best, e);
  }
  ll[i] = best;
}
"""

#: A typed array copy of an ``auto`` local (``float x[ITEMS_PER_THREAD]``), and its untyped form
_TYPED = re.compile(r"\b(int|unsigned int|float|double|float2) (\w+)\[ITEMS_PER_THREAD\]")
_AUTO_ARRAY = re.compile(r"\bauto\s*[*&]*\s*\w+\s*\[")


@functools.cache
def _second_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="wb_first21_gmm_"))


def _kernel(spelling: str) -> KernelFolder:
    if spelling == "folder":
        return load_kernel_folder(FOLDER)
    copy = _second_root() / "folder"
    if (copy / FOLDER.name).exists():
        return load_kernel_folder(copy / FOLDER.name)
    return respelled(FOLDER, copy, SECOND)


@functools.cache
def _lift(spelling: str) -> KernelTemplate:
    return offline_template(_kernel(spelling)).template


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_each_auto_local_the_items_copy_is_declared_with_its_type(spelling: str) -> None:
    template = _lift(spelling)
    assert {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL"} <= set(template.param_names)
    assert not _AUTO_ARRAY.search(template.source), template.source
    typed = {name: kind for kind, name in _TYPED.findall(template.source)}
    if spelling == "folder":
        assert "FAST_MATH" in template.param_names
        assert typed["i"] == "int" and typed["x"] == typed["y"] == "float", typed
        assert typed["top"] == typed["sum"] == typed["wb_q_2"] == "float", typed
    else:
        assert typed == {"idx": "unsigned int", "pt": "float2", "best": "float",
                         "e": "float", "e_2": "float", "acc": "double"}, typed


def _configs(template: KernelTemplate, env: dict[str, Any]) -> list[dict[str, Any]]:
    default = dict(template.default_config())
    picks = [MIX, *([EXPERT_PICK] if FULL_MATRIX else [])]
    configs = [default, *({**default, **{k: v for k, v in p.items() if k in
                                         template.param_names}} for p in picks)]
    if FULL_MATRIX:
        configs += end_configs(template, env)
    space = template.space(env)
    for config in configs:
        assert space.rejection(config) is None, (config, space.rejection(config))
    return configs


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_the_lift_prints_what_the_kernel_as_written_prints(
        spelling: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _kernel(spelling)
    template = _lift(spelling)
    configs = _configs(template, kf.env(kf.check_shape, "fp32"))
    assert same_as_written(kf, template, configs, held_back_unseen21.SET.host_source,
                           tmp_path, host_flags) == len(configs)


@needs_nvcc
@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_nvcc_compiles_the_lift_at_the_ends_of_its_space(spelling: str, tmp_path: Path) -> None:
    """The gate compiles a lift with nvcc; a host compile alone would not have caught
    ``auto x[N]`` (g++ refuses it too, but only where the items run)."""
    assert NVCC is not None
    kf = _kernel(spelling)
    template = _lift(spelling)
    for k, config in enumerate(host_sample(end_configs(template, kf.env(kf.check_shape,
                                                                        "fp32")))):
        source = tmp_path / f"end{k}.cu"
        source.write_text(template.render(config, "fp32").source)
        done = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"),
                               str(source)], capture_output=True, text=True, timeout=200,
                              check=False)
        assert done.returncode == 0, (config, done.stderr[-2000:])


def test_an_auto_local_of_a_templates_deduced_result_is_copied_typed() -> None:
    """``auto e = lognorm[c] - half_form(x - mx[c], ..)``: half_form returns its ``T``, deduced
    from ``x - mx[c]`` (float) since session 29 (auto_types), so the items copy ``e`` as a
    float array (they were refused with the line before)."""
    lifted = lift_kernel(TEMPLATED, entry="k", grid=["ceil_div(n, 256)"], block=["256"],
                         scalars={"n": "n"})
    assert "float e[ITEMS_PER_THREAD]" in lifted.source, lifted.source
    assert not _AUTO_ARRAY.search(lifted.source), lifted.source
    assert {"ITEMS_PER_THREAD", "UNROLL"} <= {p.name for p in lifted.params}, lifted.notes


def test_an_auto_local_of_an_explicit_templates_result_refuses_the_items_with_its_line() -> None:
    """``half_form<float>(..)``: explicit template arguments are not read, the type stays
    unknown: the items are refused with the line, and nothing writes an ``auto`` array."""
    lifted = lift_kernel(TEMPLATED.replace("- half_form(", "- half_form<float>("), entry="k",
                         grid=["ceil_div(n, 256)"], block=["256"], scalars={"n": "n"})
    refused = [str(f) for f in lifted.findings if f.transform == "ITEMS_PER_THREAD" and
               not f.applied]
    assert any("`auto e = lognorm[c] - half_form<float>(" in r and "line 31" in r
               for r in refused), lifted.notes
    assert not _AUTO_ARRAY.search(lifted.source), lifted.source
    assert "UNROLL" not in {p.name for p in lifted.params}, lifted.notes


def test_the_deduced_templates_items_print_what_the_kernel_as_written_prints(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """TEMPLATED as the folder's kernel (its entry and restrict-free pointers): bit for bit at
    the default, the items at 4 with UNROLL 2 and the first and last all-ends configs."""
    kf = respelled(FOLDER, tmp_path / "folders", TEMPLATED.replace("void k(", "void gmm_loglik_k16("))
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    configs = [default, {**default, "ITEMS_PER_THREAD": 4, "UNROLL": 2},
               *host_sample(end_configs(template, env))]
    assert same_as_written(kf, template, configs, held_back_unseen21.SET.host_source, tmp_path,
                           host_flags) == len(configs)


def _types(declarations: str, values: str) -> list[str | None]:
    """The type ``auto`` takes for each of ``values`` (``;``-separated expressions) in a
    kernel declaring ``declarations``."""
    source = ("#define SCALE 0.5f\n#define KS 5\n#define HALF (KS / 2)\n"
              "__constant__ float table[4];\n"
              "__device__ double twice(double v) { return 2 * v; }\n"
              f"extern \"C\" __global__ void k(const float* p, unsigned int u, long n) {{\n"
              f"  {declarations}\n" + "".join(f"  auto v{j} = {v};\n"
                                              for j, v in enumerate(values.split(";"))) + "}\n")
    parsed = parse_cuda(source)

    class _Plan:  # the parts of a plan the typing reads: the source and the kernel
        source = parsed
        kernel = parsed.kernel("k")

    found = {text(d.child_by_field_name("declarator")): d.child_by_field_name("value")
             for d in walk(parsed.tree.root_node) if d.type == "init_declarator"}
    return [value_type(_Plan(), found[f"v{j}"], {})  # type: ignore[arg-type]
            for j in range(len(values.split(";")))]


def test_the_type_auto_takes_follows_cs_conversions() -> None:
    assert _types("int i = 3; short s = 1; const float* q = p;",
                  "i * u; 2.0f * i; p[0] * 2.0; s + s; i < 3; table[1]; *q; q + i; "
                  "n * u; 3000000000; 0xffffffff; -1.5e3f; sizeof(float); 'a'; (double)i; "
                  "static_cast<unsigned char>(i); fmaxf(p[0], 1.0f); exp(p[0]); exp(i); "
                  "min(i, u); __float2int_rn(p[0]); make_float2(1.0f, 2.0f).y; "
                  "i ? p[0] : 0.5; threadIdx.x; twice(1.0); __ldg(&p[i]); SCALE * i; HALF; "
                  "pow(p[0], 2); max(p[0], 1)") == [
        "unsigned int", "float", "double", "int", "bool", "float", "float", "const float*",
        "long", "long", "unsigned int", "float", "unsigned long", "char", "double",
        "unsigned char", "float", "float", None, "unsigned int", "int", "float",
        "double", "unsigned int", "double", "float", "float", "int", None, None]


@needs_nvcc
def test_unrolled_whole_both_passes_compute_each_term_once_as_the_experts_cache() -> None:
    """At UNROLL 16 (both passes whole) and one item the lift's PTX has the expert's 16
    exponentials and its multiplies and fused multiply-adds (CACHE 1: each term once)."""
    template = _lift("folder")
    expert = load_kernel_folder(FOLDER / "expert").template
    lift_ptx = ptx_of(template, {**template.default_config(), "UNROLL": 16, "FAST_MATH": 1},
                      "fp32")
    expert_ptx = ptx_of(expert, {**expert.default_config(), "CACHE": 1, "FAST": 1}, "fp32")

    def count(ptx: str, op: str) -> int:
        return len(re.findall(rf"^\s*{re.escape(op)}\s", ptx, flags=re.MULTILINE))

    for op in ("ex2.approx.f32", "mul.f32", "fma.rn.f32", "max.f32"):
        assert count(lift_ptx, op) == count(expert_ptx, op), op
    assert count(lift_ptx, "ex2.approx.f32") == 16


#: Two passes beside each other and a loop nested in a third: the knob unrolls the passes,
#: not the inner loop inside an unrolled one.
NESTED = """
__constant__ float w[12];
extern "C" __global__ void k(float* out, const float* in, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float v = in[i], a = 0.0f, b = 1.0f;
  for (int j = 0; j < 12; ++j) a += w[j] * v;
  for (int j = 0; j < 10; ++j) b *= 1.0f + w[j] * a;
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 12; ++j) b += w[j] * (a - r);
  out[i] = a + b;
}
"""


def test_the_unroll_knob_reaches_each_shared_loop_beside_the_first_not_one_inside() -> None:
    lifted = lift_kernel(NESTED, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    unroll = next(p for p in lifted.params if p.name == "UNROLL")
    assert list(dict(unroll.spec)["values"]) == [0, 1, 2, 4, 8, 12], unroll.spec
    pragma = "#pragma unroll (wb_unroll)\n#endif\n"
    heads = [lifted.source[m.end():].split("\n")[0]
             for m in re.finditer(re.escape(pragma), lifted.source)]
    assert heads == ["for (int j = 0; j < 12; ++j) {", "for (int j = 0; j < 10; ++j) {",
                     "for (int r = 0; r < 3; ++r)"], heads


#: A shared-memory GEMM written in C++17 (every local ``auto``: ``static_cast<int>`` indices,
#: a ``0.0f`` accumulator, ``auto`` loop counters): read with the types C++ deduces
#: (:func:`~workbench.templater.auto_types.typed_autos`) before the families run, the
#: register tile lifts its accumulators as ``float acc[TM][TN]`` (at first reading the family
#: copied ``auto acc`` into ``auto acc[TM][TN]``, not C++; so did the conv, stencil and
#: centre families for their accumulators).
GEMM17 = """#define TILE 16

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const auto tx = static_cast<int>(threadIdx.x);
  const auto ty = static_cast<int>(threadIdx.y);
  const auto row = static_cast<int>(blockIdx.y) * TILE + ty;
  const auto col = static_cast<int>(blockIdx.x) * TILE + tx;
  auto acc = 0.0f;
  for (auto t = 0; t < K; t += TILE) {
    As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
    for (auto k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
"""
_GEMM_ENV = {"M": 37, "N": 45, "K": 29}


def _gemm_prints(template: KernelTemplate, config: dict[str, Any], work: Path) -> list[str]:
    """C as ``template`` at ``config`` computes it on the host (every thread of a block a
    context: its barriers as on the GPU)."""
    launch = template.launch_for(config, _GEMM_ENV)
    m, n, k = _GEMM_ENV["M"], _GEMM_ENV["N"], _GEMM_ENV["K"]
    grid = ", ".join(str(g) for g in (*launch.grid, 1, 1)[:3])
    block = ", ".join(str(b) for b in (*launch.block, 1, 1)[:3])
    main = f"""
int main() {{
  std::vector<float> c({m * n}, -7.0f), a({m * k}), b({k * n});
  for (int j = 0; j < {m * k}; ++j) a[j] = (float)((j * 37) % 101) / 50.0f - 1.0f;
  for (int j = 0; j < {k * n}; ++j) b[j] = (float)((j * 11 + 5) % 97) / 48.0f - 1.0f;
  wb_launch({{{grid}}}, {{{block}}}, [&] {{ k(c.data(), a.data(), b.data(), {m}, {n}, {k}); }});
  for (int j = 0; j < {m * n}; ++j) std::printf("%.9g\\n", (double)c[j]);
  return 0;
}}
"""
    source = template.render(config, "fp32").source if template.params else template.source
    program = COOPERATIVE_BLOCK + "#include <cstdio>\n#include <vector>\n" + HOST_VECTOR + \
        source + main
    return run_on_host(work, f"gemm{abs(hash(str(config)))}", program).split()


def test_a_cxx17_gemm_lifts_its_register_tile_with_typed_accumulators(tmp_path: Path) -> None:
    lifted = lift_kernel(GEMM17, entry="k", grid=["ceil_div(N, 16)", "ceil_div(M, 16)"],
                         block=["16", "16"], scalars={"M": "M", "N": "N", "K": "K"})
    assert {"BM", "BN", "BK", "TM", "TN"} <= {p.name for p in lifted.params}, lifted.notes
    assert "float acc[TM][TN]" in lifted.source and not _AUTO_ARRAY.search(lifted.source)
    written = KernelTemplate.build(name="k", source=GEMM17, entry="k",
                                   grid=["ceil_div(N, 16)", "ceil_div(M, 16)"],
                                   block=["16", "16"])
    template = lifted_template(lifted)
    want = _gemm_prints(written, {}, tmp_path)
    assert len(want) == 37 * 45 and "-7" not in want
    mix = {"BM": 32, "BN": 64, "BK": 8, "TM": 4, "TN": 4, "VEC": 4}
    configs = [dict(template.default_config()),
               {**template.default_config(), **{k: v for k, v in mix.items()
                                                if k in template.param_names}}]
    for config in configs:
        assert template.space(_GEMM_ENV).rejection(config) is None, config
        assert _gemm_prints(template, config, tmp_path) == want, config


def test_typed_autos_writes_the_deduced_type_and_leaves_what_it_cannot_tell() -> None:
    source = """
template <typename T> __device__ T twice(T v) { return v + v; }
extern "C" __global__ void k(float* out, const float* in, int n) {
  const auto i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  auto scale = [&](float v) { auto w = v * 2.0f; return w; };
  auto a = in[i], b = 2.0f;
  auto c = 1, d = 2.0f;
  auto e = twice(in[i]);
  auto& r = out[i];
  for (auto j = 0u; j < 4u; ++j) r += scale(a) * b * c * d * e * j;
}
"""
    got = typed_autos(InlinedSource(text=source, file="k.cu"), "k").text
    assert "const int i = static_cast<int>" in got
    assert "float a = in[i], b = 2.0f;" in got and "unsigned int j = 0u" in got
    assert "float e = twice(in[i]);" in got  # T deduced from in[i] (session 29)
    for kept in ("auto scale = [&]", "auto w = v * 2.0f", "auto c = 1, d = 2.0f",
                 "auto& r = out[i]"):
        assert kept in got, kept


def _auto_respelling(source: str, entry: str) -> str | None:
    """``source`` with each local of a function declared ``T x = v;`` (one declarator, a
    value, no storage class) written ``auto x = v;`` where v's type is T (the same program);
    None where there is none."""
    try:
        parsed = parse_cuda(source)
        scope = Parsed(parsed, parsed.kernel(entry))
    except CudaSourceError:
        return None
    edits = []
    for decl in walk(parsed.tree.root_node):
        typ = decl.child_by_field_name("type") if decl.type == "declaration" else None
        found = decl.children_by_field_name("declarator") if typ is not None else []
        if typ is None or len(found) != 1 or found[0].type != "init_declarator" or any(
                text(c) in ("__shared__", "static", "extern") for c in decl.children):
            continue
        name, value = found[0].child_by_field_name("declarator"), \
            found[0].child_by_field_name("value")
        inside = decl.parent is not None and decl.parent.type != "translation_unit" and any(
            up.type == "function_definition" for up in _ancestors(decl))
        wanted = type_name(text(typ))
        if inside and name is not None and name.type == "identifier" and value is not None \
                and value.type != "initializer_list" and wanted is not None and \
                not wanted.endswith("*") and value_type(scope, value, {}) == wanted:
            edits.append((typ.start_byte, typ.end_byte))
    data = source.encode()
    for start, end in sorted(edits, reverse=True):
        data = data[:start] + b"auto" + data[end:]
    return data.decode() if edits else None


def _ancestors(node: Any) -> list[Any]:
    out = []
    while node.parent is not None:
        node = node.parent
        out.append(node)
    return out


@pytest.mark.skipif(not FULL_MATRIX, reason="lifts every corpus kernel (WORKBENCH_FULL_MATRIX=1)")
def test_no_corpus_kernel_respelled_with_auto_lifts_an_auto_array(tmp_path: Path) -> None:
    """Every corpus kernel with its typed locals written ``auto`` (where the initialiser has
    that type): no lift declares ``auto x[..]`` (27 did before typed_autos). The held-back
    sets (lift_default_shape.HELD_BACK) are never lifted."""
    bad, lifted = [], 0
    for corpus in sorted(c for c in FOLDER.parents[1].glob("corpus*")
                         if c.is_dir() and c.name not in lift_default_shape.HELD_BACK):
        for folder in sorted(p for p in corpus.iterdir() if (p / "kernel.toml").is_file()):
            kf = load_kernel_folder(folder)
            respelled_source = _auto_respelling((folder / "baseline.cu").read_text(),
                                                kf.baseline.entry)
            if respelled_source is None:
                continue
            copy = tmp_path / corpus.name / folder.name
            shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("expert"))
            (copy / "baseline.cu").write_text(respelled_source)
            lifted += 1
            try:
                source = offline_template(load_kernel_folder(copy)).lifted.source
            except TemplateError:
                continue  # nothing lifted: no array either
            if _AUTO_ARRAY.search(source):
                bad.append(f"{corpus.name}/{folder.name}")
    assert lifted > 100 and not bad, (lifted, bad)
