"""Indices and polynomials through lambdas and one-line helpers, at first contact (issue 28):
the kernels of tests/spellings_l/ (and the lambda GEMM of tests/spellings_g/gemm/) lifted by
the offline templater, their knobs against the corpus kernel of their family, every checked
config correct on the host (g++, the cooperative block); and the expansion's rules
(workbench/templater/inline_lambda.py): what expands, what is left as written with the line
and the reason.

Spellings: a tiled GEMM whose loads go through index lambdas, B column-major (before: TILE
only, the lambda's ``return`` an early exit), and one whose every index goes through a
``__device__ __forceinline__ int idx(r, c, ld)`` (before: TILE only); a 2-D convolution
whose input pixel is a bounds-checking lambda (before: BLOCK_X, BLOCK_Y, ITEMS_X, ITEMS_Y;
the corpus conv2d_const's OUT_X, OUT_Y, USE_SMEM now); the per-point plane sum of
percell_compute with the distance and a cubic through lambdas (before: BLOCK_THREADS,
ITEMS_PER_THREAD, TABLE; now UNROLL, FAST_MATH and BRANCHLESS too).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import end_configs, lifted_template
from regtile_spellings import Spelling, lift, worst_error
from test_corpus_unseen3 import _inputs, folder_runs
from test_templater_const_via import _knobs, write_folder

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.inline_lambda import expand_lambdas

TESTS = Path(__file__).resolve().parent
HERE = TESTS / "spellings_l"
GEMM_ENV = {"batch": 1, "M": 37, "N": 45, "K": 29}
GEMM_KNOBS = {"BM", "BN", "BK", "TM", "TN", "VEC"}
GEMMS = {
    "gemm_forceinline_idx": Spelling(
        (HERE / "gemm_forceinline_idx.cu").read_text(), ("ceil_div(N, 16)", "ceil_div(M, 16)"),
        ("16", "16"), {"M": "M", "N": "N", "K": "K"}, "k(C, A, B, M, N, K)"),
    "bt_colmajor_constexpr_lambda": Spelling(
        (TESTS / "spellings_g" / "gemm" / "bt_colmajor_constexpr_lambda.cu").read_text(),
        ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"), {"M": "M", "N": "N", "K": "K"},
        "k(C, A, B, M, N, K)", b_index="(size_t)c * K + k"),
}
#: FAST_MATH's intrinsics as the host has them (the host checks the structure: the same
#: operations on the same values; an approximation's error is the GPU's to measure)
HOST_FAST_MATH = "#define __expf(v) expf(v)\n"
HW = [("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")]
#: name -> (grid, block, args, check sizes, constants, the corpus family's knobs)
FOLDERS: dict[str, tuple[list[str], list[str], list[tuple[str, str, str, Any]], dict[str, int],
                         list[tuple[str, list[int]]], set[str]]] = {
    "conv2d_lambda_pixel": (
        ["ceil_div(w, 16)", "ceil_div(h, 16)"], ["16", "16"],
        [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", ["h", "w"]), *HW],
        {"h": 37, "w": 53}, [("filt", [7, 7])], {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y",
                                                  "USE_SMEM"}),
    "percell_lambda_poly": (
        ["ceil_div(n, 256)"], ["256"],
        [("out", "f32", "out", ["n"]), ("px", "f32", "in", ["n"]), ("py", "f32", "in", ["n"]),
         ("pz", "f32", "in", ["n"]), ("n", "i32", "scalar", "n")], {"n": 1000},
        [("planes", [96])], {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "FAST_MATH",
                             "BRANCHLESS"}),
}


def _folder(name: str, root: Path) -> KernelFolder:
    grid, block, args, sizes, constants, _knobs_wanted = FOLDERS[name]
    return write_folder(root / name, (HERE / f"{name}.cu").read_text(), grid, block, args,
                        sizes, constants)


@pytest.mark.parametrize("name", sorted(GEMMS))
def test_the_gemm_gets_the_corpus_knobs(name: str) -> None:
    lifted = lift(GEMMS[name])
    assert {p.name for p in lifted.params} >= GEMM_KNOBS, lifted.notes
    assert lifted.block == ("BN // TN", "BM // TM")
    assert any(f.transform == "INLINE_EXPRESSION" and f.applied for f in lifted.findings)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(GEMMS))
def test_every_checked_gemm_config_computes_the_product(name: str) -> None:
    s = GEMMS[name]
    template = lifted_template(lift(s), s.entry)
    ends = end_configs(template, {**GEMM_ENV, "elem_bytes": 4})
    configs = [dict(template.default_config()), *ends]  # both ends of every range, mixed
    with tempfile.TemporaryDirectory() as tmp:
        for config in configs:
            assert worst_error(s, template, config, GEMM_ENV, Path(tmp)) < 1e-3, config


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_spelling_gets_its_family_knobs(name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    assert set(_knobs(result)) >= FOLDERS[name][5], result.notes


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path) -> None:
    kf = _folder(name, tmp_path / "folders")
    result = offline_template(kf)
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    configs = [dict(template.default_config()), *ends]  # both ends of every range, mixed
    env = kf.env(kf.check_shape, "fp32")
    for config in configs:
        assert template.space(env).rejection(config) is None, config
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((HOST_FAST_MATH + template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path)
    for config, outputs in zip(configs, got, strict=True):
        for arg, values in want.items():
            assert np.array_equal(outputs[arg].view(np.uint32), values.view(np.uint32)), \
                f"{name} {arg} at {config}"


KERNEL = """extern "C" __global__ void k(float* out, const float* in, int n) {{
  int base = blockIdx.x * 64;
  const int t = threadIdx.x;
{body}
}}
"""


def _expanded(body: str) -> InlinedSource:
    return expand_lambdas(InlinedSource(KERNEL.format(body=body), "k.cu"), "k")


def _refusal(done: InlinedSource) -> tuple[str, int]:
    (finding,) = [f for f in done.findings if not f.applied]
    return finding.reason, finding.line


def test_a_call_becomes_the_returned_expression_on_its_own_line() -> None:
    """A plain argument substituted (cast where its type is not plainly the parameter's), an
    argument that reads memory and is read twice evaluated once before the statement, the
    definition a comment, every line kept."""
    done = _expanded("  auto sq = [](float v) { return v * v; };\n"
                     "  auto at = [&](long c) { return in[base + c]; };\n"
                     "  out[base + t] = sq(in[base + t]) + at(t);")
    lines = done.text.splitlines()
    assert lines[3] == "  // sq: expanded at its calls"
    assert lines[5] == ("  const float v_sq = in[base + t]; out[base + t] = (v_sq * v_sq) + "
                        "(in[base + (long)t]);")
    assert len(lines) == len(KERNEL.format(body="\n\n").splitlines())
    assert [f.line for f in done.findings] == [4, 5] and all(f.applied for f in done.findings)


def test_a_by_reference_capture_reads_the_variable_at_the_call() -> None:
    done = _expanded("  auto at = [&](int c) { return in[base + c]; };\n  base += 4;\n"
                     "  out[t] = at(1);")
    assert "out[t] = (in[base + 1]);" in done.text


def test_a_copy_of_a_name_written_after_the_lambda_is_refused() -> None:
    done = _expanded("  auto at = [=](int c) { return in[base + c]; };\n  base += 4;\n"
                     "  out[t] = at(1);")
    reason, at = _refusal(done)
    assert "holds a copy of base, which the kernel writes after the lambda" in reason
    assert at == 4 and "at(1)" in done.text


@pytest.mark.parametrize(("body", "why"), [
    ("  auto at = [&](int c) { int r = c * 2; return in[r]; };\n  out[t] = at(t);",
     "is not one `return expression;`"),
    ("  auto at = [&](int c) { return in[c]; };\n  out[t] = use(at, t);",
     "uses at as a value (passed to a function or copied), not as a call"),
    ("  auto at = [=](int c) mutable { return in[c]; };\n  out[t] = at(t);", "it is mutable"),
    ("  auto at = [&](int& c) { return in[c]; };\n  out[t] = at(base);", "is a reference"),
    ("  auto at = [&](int c) { return in[c]; };\n  out[t] = at(base++);", "writes"),
    ("  auto sq = [](float v) { return v * v; };\n  out[t] = t < n ? sq(in[t]) : 0.0f;",
     "the call runs only sometimes"),
])
def test_what_is_not_expanded_is_left_as_written_with_the_reason(body: str, why: str) -> None:
    done = _expanded(body)
    reason, at = _refusal(done)
    assert why in reason and at in (4, 5), reason
    assert done.text == KERNEL.format(body=body)


def test_an_integer_helper_expands_and_a_float_helper_stays_a_call() -> None:
    source = ("__device__ __forceinline__ int idx(int r, int c, int ld) { return r * ld + c; }\n"
              "__device__ float sq(float v) { return v * v; }\n"
              "__device__ int twice(int v) { return v + v; }\n"
              "__device__ int twice(float v) { return (int)v; }\n"
              'extern "C" __global__ void k(float* out, const float* in, int n) {\n'
              "  out[idx(threadIdx.x, 1, n)] = sq(in[twice(n)]);\n}\n")
    done = expand_lambdas(InlinedSource(source, "k.cu"), "k")
    assert done.text.splitlines()[5] == \
        "  out[((int)threadIdx.x * n + 1)] = sq(in[twice(n)]);"
    reason, at = _refusal(done)
    assert reason.startswith("twice (a __device__ function) is not expanded") and \
        "defined more than once" in reason and at in (3, 4)
