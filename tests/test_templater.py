"""The offline templater: synthetic lifting cases and every sample kernel's baseline."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.engine.compiler import Compiler
from workbench.llm.templater import lift_source, offline_template, unified_diff
from workbench.llm.validation import used_outside_guard

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


def test_lifts_named_constants_and_pragmas() -> None:
    lifted = lift_source(SYNTHETIC, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         shape_names=["n"])
    specs = {p.name: dict(p.spec) for p in lifted.params}
    assert specs["BLOCK_THREADS"]["kind"] == "pow2" and specs["BLOCK_THREADS"]["default"] == 128
    assert specs["ITEMS_PER_THREAD"]["values"] == [1, 2, 4, 8]
    assert specs["ITEMS_PER_THREAD"]["default"] == 4
    assert specs["VEC"]["default"] == 8
    assert specs["UNROLL"]["default"] == 4 and specs["UNROLL_2"]["default"] == 2
    src = lifted.source
    assert "constexpr int kThreads = BLOCK_THREADS;" in src
    assert "constexpr int kItemsPerThread = ITEMS_PER_THREAD;" in src
    assert "#pragma unroll (wb_unroll)\n" in src and "#pragma unroll (wb_unroll_2)\n" in src
    assert "constexpr int wb_unroll = UNROLL;" in src
    # comments and string literals are never rewritten
    assert "// A comment with 16 / sizeof(T) and #pragma unroll 4 must stay as it is." in src
    assert '"16 / ELEM_BYTES"' in src
    assert "VEC_BYTES" not in src
    # launch rules follow the lifted block size
    assert lifted.grid == ("ceil_div(n, BLOCK_THREADS)",) and lifted.block == ("BLOCK_THREADS",)
    assert "VEC * elem_bytes <= 16" in lifted.constraints
    # each parameter has a guard with the baseline value
    for name, spec in specs.items():
        assert f"#ifndef {name}\n#define {name} {spec['default']}\n#endif" in src
        assert used_outside_guard(src, name)


def test_existing_define_with_param_name_is_guarded() -> None:
    source = ('#include <cuda.h>\n#define BLOCK_THREADS 256\n'
              'extern "C" __global__ void k(float* o) { o[threadIdx.x % BLOCK_THREADS] = 0.f; }\n')
    lifted = lift_source(source, entry="k", grid=["1"], block=["256"])
    assert "#ifndef BLOCK_THREADS\n#define BLOCK_THREADS 256\n#endif" in lifted.source
    assert lifted.source.count("#define BLOCK_THREADS") == 1
    assert lifted.block == ("BLOCK_THREADS",)
    assert "__launch_bounds__" not in lifted.source  # the source already uses it


def test_block_cap_in_launch_rules_adds_launch_bounds() -> None:
    source = ('extern "C" __global__ void row(float* o, int d) {\n'
              '  for (int i = threadIdx.x; i < d; i += blockDim.x) o[i] = 0.f;\n}\n')
    lifted = lift_source(source, entry="row", grid=["tokens"], block=["min(d, 1024)"],
                         shape_names=["tokens", "d"])
    assert lifted.block == ("min(d, BLOCK_THREADS)",)
    assert "__global__ void __launch_bounds__(BLOCK_THREADS) row(" in lifted.source
    assert lifted.params[0].origin.startswith("kernel.toml [baseline]")


def test_vec_bytes_rewrites_alignment_and_launch() -> None:
    source = ("#include <cuda_bf16.h>\nconstexpr int kVec = 16 / sizeof(scalar_t);\n"
              "struct alignas(16) V { scalar_t v[kVec]; };\n"
              'extern "C" __global__ void k(V* o, int d) { o[threadIdx.x] = V{}; }\n')
    lifted = lift_source(source, entry="k", grid=["rows"],
                         block=["d // (16 // elem_bytes)"], shape_names=["rows", "d"])
    assert "kVec = VEC_BYTES / sizeof(scalar_t);" in lifted.source
    assert "struct alignas(VEC_BYTES) V" in lifted.source
    assert lifted.block == ("d // (VEC_BYTES // elem_bytes)",)
    assert lifted.constraints == ("VEC_BYTES >= elem_bytes", "d % (VEC_BYTES // elem_bytes) == 0")


def test_nothing_to_lift_is_reported() -> None:
    lifted = lift_source('extern "C" __global__ void k(float* o) { o[0] = 1.f; }\n', entry="k",
                         grid=["1"], block=["1", "2"])
    assert lifted.params == ()



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


def test_define_threads_and_existing_launch_bounds() -> None:
    source = ('#include <cuda.h>\n#define THREADS 256\n'
              'extern "C" __global__ void __launch_bounds__(256, 2) k(float* o) {\n'
              '  __shared__ float s[THREADS];\n  s[threadIdx.x] = 0.f; o[0] = s[0];\n}\n')
    lifted = lift_source(source, entry="k", grid=["n // 256"], block=["256"],
                         shape_names=["n"])
    assert "#define THREADS BLOCK_THREADS" in lifted.source
    assert "__launch_bounds__(BLOCK_THREADS, 2) k(" in lifted.source
    assert lifted.grid == ("n // BLOCK_THREADS",) and lifted.block == ("BLOCK_THREADS",)
    [param] = lifted.params
    assert param.origin == "baseline.cu:2: #define THREADS 256"


@pytest.mark.slow
def test_synthetic_lift_compiles(compiler: Compiler) -> None:
    from workbench.core.params import parameter_from_dict
    from workbench.core.template import KernelTemplate

    lifted = lift_source(SYNTHETIC, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         shape_names=["n"])
    template = KernelTemplate.build(
        name="synthetic", source=lifted.source, entry="k",
        params=[parameter_from_dict(p.name, p.spec) for p in lifted.params],
        constraints=list(lifted.constraints), grid=list(lifted.grid), block=list(lifted.block))
    for config in (template.default_config(),
                   {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "VEC": 1, "UNROLL": 8,
                    "UNROLL_2": 1}):
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
