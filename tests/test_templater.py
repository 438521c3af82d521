"""The offline templater: named-constant lifting cases (:mod:`workbench.templater.named`
inside ``lift_kernel``) and every sample kernel's baseline."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_templater import COOPERATIVE_BLOCK, lifted_template, run_on_host

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.engine.compiler import Compiler
from workbench.llm.validation import used_outside_guard
from workbench.templater import LiftedSource, lift_kernel, offline_template, unified_diff

SAMPLES = Path(__file__).resolve().parents[1] / "sample_kernels"
SAMPLE_NAMES = sorted(p.name for p in SAMPLES.iterdir() if (p / "kernel.toml").is_file())

SYNTHETIC = """#include <cuda_fp16.h>
// A comment with 16 / sizeof(T) and #pragma unroll 4 must stay as it is.
constexpr int kThreads = 128;
constexpr int kItemsPerThread = 4;
constexpr int kVec = 8;
#define PACK_NAME "16 / ELEM_BYTES"
extern "C" __global__ void k(float* out, const float* in, int n) {
  __shared__ float tile[kThreads * kItemsPerThread];
#pragma unroll 4
  for (int i = 0; i < kItemsPerThread; ++i) tile[i * kThreads + threadIdx.x] = in[i];
#pragma unroll 2
  for (int i = 0; i < kVec; ++i) out[i] = tile[i];
}
"""


def _lift(source: str, *, grid: list[str], block: list[str], entry: str = "k",
          scalars: dict[str, str] | None = None) -> LiftedSource:
    return lift_kernel(source, entry=entry, grid=grid, block=block, scalars=scalars or {})


def _findings(lifted: LiftedSource, transform: str = "named constants") -> list[str]:
    return [f.reason for f in lifted.findings if f.transform == transform]


def test_named_constants_and_pragmas_are_lifted_where_nothing_else_is() -> None:
    lifted = _lift(SYNTHETIC, grid=["ceil_div(n, 128)"], block=["128"], scalars={"n": "n"})
    specs = {p.name: dict(p.spec) for p in lifted.params}
    assert list(specs) == ["UNROLL", "UNROLL_2", "ITEMS_PER_THREAD", "VEC"]
    assert specs["ITEMS_PER_THREAD"]["values"] == [1, 2, 4, 8]
    assert specs["ITEMS_PER_THREAD"]["default"] == 4
    assert specs["VEC"]["default"] == 8
    assert specs["UNROLL"]["default"] == 4 and specs["UNROLL_2"]["default"] == 2
    src = lifted.source
    assert "constexpr int kItemsPerThread = ITEMS_PER_THREAD;" in src
    assert "constexpr int kVec = VEC;" in src
    assert "#pragma unroll (wb_unroll)\n" in src and "#pragma unroll (wb_unroll_2)\n" in src
    assert "constexpr int wb_unroll = UNROLL;" in src
    # comments and string literals are never rewritten
    assert "// A comment with 16 / sizeof(T) and #pragma unroll 4 must stay as it is." in src
    assert '"16 / ELEM_BYTES"' in src
    assert "VEC_BYTES" not in src
    assert "VEC * elem_bytes <= 16" in lifted.constraints
    # the kernel never reads blockDim: its block (kThreads, the launch's 128) stays as written
    assert "constexpr int kThreads = 128;" in src
    assert lifted.grid == ("ceil_div(n, 128)",) and lifted.block == ("128",)
    refused = _findings(lifted)
    assert any(r.startswith("kThreads = 128 would resize the block") for r in refused), refused
    assert any("launch block 128 would be resized" in r for r in refused), refused
    for name, spec in specs.items():
        assert f"#ifndef {name}\n#define {name} {spec['default']}\n#endif" in src
        assert used_outside_guard(src, name)


CAPPED = ("#include <cuda_bf16.h>\ntypedef float scalar_t;\n"
          "constexpr int kVec = 16 / sizeof(scalar_t);  // 16 / sizeof in a comment stays\n"
          "struct alignas(16) V { scalar_t v[kVec]; };\n"
          'extern "C" __global__ void k(V* o, int d) {\n'
          "  for (int i = threadIdx.x; i < d; i += blockDim.x) o[i] = V{};\n}\n")


def test_a_capped_block_and_16_byte_vectors_follow_their_parameters() -> None:
    lifted = _lift(CAPPED, grid=["rows"], block=["min(d // (16 // elem_bytes), 1024)"],
                   scalars={"d": "d"})
    assert [p.name for p in lifted.params] == ["VEC_BYTES", "BLOCK_THREADS"]
    src = lifted.source
    assert "kVec = VEC_BYTES / sizeof(scalar_t);  // 16 / sizeof in a comment stays" in src
    assert "struct alignas(VEC_BYTES) V" in src
    assert '__global__ void __launch_bounds__(BLOCK_THREADS) k(' in src
    assert lifted.block == ("min(d // (VEC_BYTES // elem_bytes), BLOCK_THREADS)",)
    assert lifted.constraints == ("VEC_BYTES >= elem_bytes", "d % (VEC_BYTES // elem_bytes) == 0")
    assert lifted.defaults == {"VEC_BYTES": 16, "BLOCK_THREADS": 1024}


IN_MACROS = ("#define ELEM_BYTES 4\n"
             "#define ELEMS (16 / ELEM_BYTES)  // 16 / ELEM_BYTES in a comment stays\n"
             "struct __align__(16) V { float v[ELEMS]; };\n"
             '__device__ const char* wb_note = "__align__(16)";\n'
             'extern "C" __global__ void k(V* o, int d) {\n'
             "  for (int i = threadIdx.x; i < d; i += blockDim.x) o[i] = V{};\n}\n")


def test_vector_bytes_in_a_macro_body_and_align_follow_too() -> None:
    """A macro's body and ``__align__(16)`` are text to the parse: they are matched on their
    own bytes (never a comment or a string)."""
    lifted = _lift(IN_MACROS, grid=["rows"], block=["min(d // (16 // elem_bytes), 1024)"],
                   scalars={"d": "d"})
    assert [p.name for p in lifted.params] == ["VEC_BYTES", "BLOCK_THREADS"]
    src = lifted.source
    assert "#define ELEMS (VEC_BYTES / ELEM_BYTES)  // 16 / ELEM_BYTES in a comment stays" in src
    assert "struct __align__(VEC_BYTES) V" in src
    assert '"__align__(16)"' in src
    assert lifted.params[0].origin == ("baseline.cu:2: #define ELEMS (16 / ELEM_BYTES)  "
                                       "// 16 / ELEM_BYTES in a comment stays")


@pytest.mark.parametrize(("bounds", "follows"), [(1024, True), (512, False)])
def test_existing_launch_bounds_follow_the_block_only_at_its_size(bounds: int,
                                                                  follows: bool) -> None:
    source = CAPPED.replace("void k(", f"void __launch_bounds__({bounds}) k(")
    lifted = _lift(source, grid=["rows"], block=["min(d // (16 // elem_bytes), 1024)"],
                   scalars={"d": "d"})
    written = "__launch_bounds__(BLOCK_THREADS) k(" if follows else "__launch_bounds__(512) k("
    assert written in lifted.source
    assert lifted.source.count("__launch_bounds__") == 1
    assert follows or any("differs from the block size 1024" in r for r in _findings(lifted))


def test_a_define_named_as_the_parameter_becomes_its_guarded_default() -> None:
    source = ('#define VEC 4\n#define kItems 2\nextern "C" __global__ void k(float* o) {\n'
              '  for (int i = 0; i < VEC * kItems; ++i) o[threadIdx.x * VEC * kItems + i] = 0.f;\n'
              '}\n')
    lifted = _lift(source, grid=["1"], block=["64"])
    assert [p.name for p in lifted.params] == ["VEC", "ITEMS_PER_THREAD"]
    assert "#define kItems ITEMS_PER_THREAD\n" in lifted.source
    assert "#define VEC 4\n" not in lifted.source.replace("#ifndef VEC\n#define VEC 4\n", "")
    assert lifted.block == ("64",)  # blockDim is not read: the block stays as written


def test_define_threads_and_existing_launch_bounds() -> None:
    source = ('#include <cuda.h>\n#define THREADS 256\n'
              'extern "C" __global__ void __launch_bounds__(256, 2) k(float* o) {\n'
              '  __shared__ float s[THREADS];\n  s[threadIdx.x] = 0.f; o[0] = s[0];\n}\n')
    lifted = _lift(source, grid=["n // 256"], block=["256"])
    assert "#define THREADS BLOCK_THREADS" in lifted.source
    assert "__launch_bounds__(BLOCK_THREADS, 2) k(" in lifted.source
    assert lifted.block == ("BLOCK_THREADS",)
    [param] = lifted.params
    assert param.origin.startswith("baseline.cu:")
    assert _findings(lifted) == []  # the block transform lifted it: the fallback stays out


def test_nothing_to_lift_is_reported() -> None:
    lifted = _lift('extern "C" __global__ void k(float* o) { o[0] = 1.f; }\n', grid=["1"],
                   block=["1", "2"])
    assert lifted.params == ()
    assert lifted.findings


BLOCK_SUM = """constexpr int kThreads = 256;
extern "C" __global__ void k(float* o, const float* x, int n) {
  __shared__ float s[kThreads];
  float v = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int h = kThreads / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) o[0] = s[0];
}
"""


def _block_sum() -> LiftedSource:
    return _lift(BLOCK_SUM, grid=["1"], block=["256"], scalars={"n": "n"})


def test_a_named_block_constant_follows_the_lifted_block() -> None:
    lifted = _block_sum()
    assert "constexpr int kThreads = BLOCK_THREADS;" in lifted.source
    spec = dict(next(p for p in lifted.params if p.name == "BLOCK_THREADS").spec)
    # the constant drives a halving the block analysis does not see: powers of two only
    assert spec["kind"] == "pow2" and spec["default"] == 256
    assert any("names the block size" in r for r in _findings(lifted))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_block_sum_is_right_at_every_block_size_on_the_host(tmp_path: Path) -> None:
    """Run on the host (every thread a coroutine, barriers real): with kThreads left at 256
    a 512-thread block overruns s[] and the tree starts at the wrong half."""
    template = lifted_template(_block_sum())
    n = 3000
    for threads in (64, 512, 1024):
        config = {**template.default_config(), "BLOCK_THREADS": threads}
        source = template.render(config, "fp32").source
        program = COOPERATIVE_BLOCK + source + f"""
int main() {{
  std::vector<float> x({n}), o(1, -1.f);
  double want = 0;
  for (int j = 0; j < {n}; ++j) {{ x[j] = (float)((j * 37) % 101) / 64.0f; want += x[j]; }}
  wb_launch({{1, 1, 1}}, {{{threads}, 1, 1}}, [&] {{ k(o.data(), x.data(), {n}); }});
  std::printf("%.3f %.3f\\n", (double)o[0], want);
  return 0;
}}
"""
        got, want = map(float, run_on_host(tmp_path, f"sum{threads}", program).split())
        assert abs(got - want) < 1e-3 * want, (threads, got, want)


SAMPLE_LIFTS = {
    # recorded from the retired regex lifter (legacy.py) before it went: the named transform
    # reproduces them (the source differs only in the header comment's wording)
    "silu_and_mul": (["VEC_BYTES", "BLOCK_THREADS"],
                     ("VEC_BYTES >= elem_bytes", "d % (VEC_BYTES // elem_bytes) == 0"),
                     ("tokens",), ("min(d // (VEC_BYTES // elem_bytes), BLOCK_THREADS)",)),
    "fused_add_rmsnorm": (["VEC_BYTES", "BLOCK_THREADS"], ("VEC_BYTES >= elem_bytes",),
                          ("tokens",),
                          ("32", "ceil_div(min(BLOCK_THREADS, hidden // gcd(VEC_BYTES // "
                                 "elem_bytes, hidden)), 32)")),
}


@pytest.mark.parametrize("name", sorted(SAMPLE_LIFTS))
def test_hand_tuned_samples_lift_as_the_retired_lifter_did(name: str) -> None:
    lifted = offline_template(_folder(name)).lifted
    params, constraints, grid, block = SAMPLE_LIFTS[name]
    assert [p.name for p in lifted.params] == params
    assert (lifted.constraints, lifted.grid, lifted.block) == (constraints, grid, block)
    assert lifted.defaults == {"VEC_BYTES": 16, "BLOCK_THREADS": 1024}
    assert "__launch_bounds__(BLOCK_THREADS) " in lifted.source


def _folder(name: str) -> KernelFolder:
    return load_kernel_folder(SAMPLES / name)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_baseline_becomes_a_valid_template(name: str) -> None:
    folder = _folder(name)
    result = offline_template(folder)
    template = result.template
    assert template.params, "something must be lifted"
    for p in template.params:
        assert used_outside_guard(template.source, p.name), f"{p.name} unused"
    defaults = template.default_config()
    for shape in folder.shapes:
        for dtype in folder.dtypes:
            env = folder.env(shape, dtype)
            space = template.space(env)
            assert space.size > 0, f"{shape}/{dtype}: empty space"
            assert space.rejection(defaults) is None
            # the defaults launch exactly like the baseline
            assert template.launch_for(defaults, env) == folder.baseline.launch_for({}, env)
    # the diff is the baseline -> template change and it is deterministic
    assert result.diff.startswith("--- baseline.cu\n+++ template.cu\n")
    assert result.diff == unified_diff(folder.baseline.source, template.source)
    again = offline_template(folder)
    assert again.template.source == template.source and again.diff == result.diff
    assert result.proposal.to_template(name=folder.name, entry=template.entry).to_dict() == \
        template.to_dict()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_template_compiles_at_defaults(name: str, compiler: Compiler) -> None:
    folder = _folder(name)
    template = offline_template(folder).template
    for dtype in folder.dtypes:
        result = compiler.compile(template.render(template.default_config(), dtype))
        assert result.ok, f"{name}/{dtype}: {result.error_summary}\n{result.log[-2000:]}"
        assert result.usage is not None and result.usage.regs_per_thread > 0
    # the narrowest vector and the smallest block compile too
    corner = {p.name: p.values()[0] for p in template.params}
    dtype = folder.dtypes[-1]
    env = folder.env(folder.check_shape, dtype)
    if template.space(env).rejection(corner) is None:
        result = compiler.compile(template.render(corner, dtype))
        assert result.ok, result.error_summary


@pytest.mark.slow
def test_named_lifts_compile(compiler: Compiler) -> None:
    lifted = _lift(SYNTHETIC, grid=["ceil_div(n, 128)"], block=["128"], scalars={"n": "n"})
    template = lifted_template(lifted)
    for config in (template.default_config(),
                   {"ITEMS_PER_THREAD": 2, "VEC": 1, "UNROLL": 8, "UNROLL_2": 1}):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, result.log[-2000:]
    capped = lifted_template(_lift(CAPPED, grid=["rows"],
                                   block=["min(d // (16 // elem_bytes), 1024)"],
                                   scalars={"d": "d"}))
    in_macros = lifted_template(_lift(IN_MACROS, grid=["rows"],
                                      block=["min(d // (16 // elem_bytes), 1024)"],
                                      scalars={"d": "d"}))
    for template in (capped, in_macros):
        for config in (template.default_config(), {"VEC_BYTES": 4, "BLOCK_THREADS": 64}):
            result = compiler.compile(template.render(config, "fp32"))
            assert result.ok, result.log[-2000:]


@pytest.mark.gpu
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_offline_template_defaults_correct_on_gpu(name: str) -> None:
    from workbench.core.errors import NoGPUError
    from workbench.engine.runner import LocalRunner
    from workbench.llm.validation import gpu_correctness, validate_proposal

    folder = _folder(name)
    try:
        LocalRunner(folder).close()
    except NoGPUError as exc:
        pytest.skip(f"no GPU: {exc.message}")
    result = offline_template(folder)
    report = validate_proposal(result.proposal, folder, correctness=gpu_correctness(folder))
    assert report.status == "ok", report.messages()
