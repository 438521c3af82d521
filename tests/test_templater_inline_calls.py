"""Kernels whose body lives in a ``__device__`` function (issue 28: set 7's rbf_gram).

The entry is one call, ``rbf_tile<16>(G, X, ...)``: the pass writes the callee's body into
the kernel before the analysis, binds its template parameters as the ``#define`` lines every
family reads and its call parameters by name (or as ``const`` locals), and the families lift
the kernel as if it were written inline. Each lifted spelling is run on the host (g++) at
the default, the last all-ends config and a sampled one (every all-ends config under
``WORKBENCH_FULL_MATRIX=1``) against the kernel as written; a call inlining cannot keep
the meaning of is refused with the line and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import held_back_unseen7
import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    assert_rotation_covers,
    end_configs,
    host_sample,
    lifted_template,
    needs_gxx,
    rotating_sample,
    run_on_host,
)
from test_corpus_unseen3 import (
    _SPILLS,
    _assert_same,
    _inputs,
    _ptxas_log,
    _run,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel, offline_template
from workbench.templater.inline_calls import inline_calls


def listed_configs(template: KernelTemplate, env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The default, every all-ends config and one sampled config, each valid at ``env``."""
    space = template.space(dict(env))
    default = dict(template.default_config())
    sampled = [dict(c) for c in space.sample(8, seed=7) if dict(c) != default][:1]
    out: list[dict[str, Any]] = []
    for c in [default, *end_configs(template, env), *sampled]:
        if c not in out:
            out.append(c)
    assert len(out) >= 3, out
    return out


# -- set 7's rbf_gram ------------------------------------------------------------------------


def test_rbf_gram_is_inlined_and_lifts_the_register_tile() -> None:
    kf = held_back_unseen7.SET.folder("rbf_gram")
    result = offline_template(kf)
    names = [p.name for p in result.lifted.params]
    assert {"BM", "BN", "BK", "TM", "TN", "VEC"} <= set(names), result.notes
    inline = [f for f in result.lifted.findings if f.transform == "INLINE"]
    assert [(f.applied, f.reason, f.line) for f in inline] == [
        (True, "rbf_tile<16> inlined into rbf_gram: TILE = 16", 33)]
    # the families' findings are told in the baseline's lines: the product loop is line 22
    tile = next(f for f in result.lifted.findings if f.transform == "REGISTER_TILE" and
                "inner product loop" in f.reason)
    assert tile.line == 22
    assert "template <int TILE>" not in result.template.source
    assert "__device__ void rbf_tile" in result.diff  # the reviewer sees the callee go


@needs_gxx
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_rbf_gram_template_computes_what_the_kernel_as_written_computes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    corpus = held_back_unseen7.SET
    kf = corpus.folder("rbf_gram")
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    want = corpus.plain_outputs("rbf_gram", tmp_path / "plain", host_flags)
    for i, config in enumerate(host_sample(listed_configs(template, env))):
        source = corpus.host_source(template.render(config, "fp32").source)
        got = _run(kf, source, template.launch_for(config, env), _inputs(kf),
                   tmp_path / f"c{i}", host_flags)
        _assert_same(kf, got, want, f"lifted rbf_gram at {config}")


@needs_nvcc
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_rbf_gram_at_its_last_corner_compiles_without_spills(tmp_path: Path) -> None:
    kf = held_back_unseen7.SET.folder("rbf_gram")
    template = offline_template(kf).template
    corner = end_configs(template, kf.env("large", "fp32"))[-1]
    assert (corner["BM"], corner["BN"], corner["TM"], corner["TN"]) == (128, 128, 8, 8)
    log = _ptxas_log(template.render(corner, "fp32").source, tmp_path, "corner")
    spills = _SPILLS.findall(log)
    assert spills and all(s == ("0", "0") for s in spills), log


# -- spellings of our own --------------------------------------------------------------------


@dataclass(frozen=True)
class Spelling:
    """A kernel whose body is a device function: its launch as written (grid, block over
    ``env``), its scalars' shape expressions, and its buffers (name -> element count, True
    for an output) in the order ``call`` passes them."""

    source: str
    entry: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    scalars: Mapping[str, str]
    buffers: Mapping[str, tuple[str, bool]]
    call: str
    env: Mapping[str, int]
    lifts: frozenset[str]


GEMM = Spelling("""
// C[M x N] = A[M x K] . B[K x N], row-major fp32; the tile edge is a named constant.
constexpr int kTile = 16;

template <int BS>
__device__ __forceinline__ void gemm_tile(const float* __restrict__ a,
                                          const float* __restrict__ b, float* __restrict__ c,
                                          int m, int n, int kdim) {
  __shared__ float sa[BS][BS];  // this block's rows of A, BS steps of k
  __shared__ float sb[BS][BS];  // BS steps of k, this block's columns of B
  int row = blockIdx.y * BS + threadIdx.y;
  int col = blockIdx.x * BS + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < kdim; t += BS) {
    sa[threadIdx.y][threadIdx.x] =
        (row < m && t + threadIdx.x < kdim) ? a[row * kdim + t + threadIdx.x] : 0.0f;
    sb[threadIdx.y][threadIdx.x] =
        (t + threadIdx.y < kdim && col < n) ? b[(t + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
    for (int q = 0; q < BS; ++q) acc += sa[threadIdx.y][q] * sb[q][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

extern "C" __global__ void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
  gemm_tile<kTile>(A, B, C, M, N, K);
}
""", "gemm", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"), {"M": "M", "N": "N", "K": "K"},
    {"A": ("M * K", False), "B": ("K * N", False), "C": ("M * N", True)},
    "gemm(A, B, C, M, N, K)", {"M": 37, "N": 45, "K": 29},
    frozenset({"BM", "BN", "BK", "TM", "TN"}))

# the same product as a distance: the body calls a value helper (left a call) in its k loop
DIST = Spelling("""
// D[i][j] = sum_k (P[i][k] - Q[j][k])^2 for P [rows x dim], Q [cols x dim].
#define EDGE 16

__device__ __forceinline__ float sq(float v) { return v * v; }

template <int W, typename F>
__device__ void dist_tile(F* out, const F* p, const F* q, int rows, int cols, int dim) {
  __shared__ F ps[W][W + 1];
  __shared__ F qs[W][W + 1];
  const int r = W * blockIdx.y + threadIdx.y, c = W * blockIdx.x + threadIdx.x;
  const int qrow = W * blockIdx.x + threadIdx.y;  // the Q row this thread stages
  F d = 0;
  int k0 = 0;
  while (k0 < dim) {
    ps[threadIdx.y][threadIdx.x] = (r < rows && k0 + threadIdx.x < dim) ?
        p[r * dim + k0 + threadIdx.x] : F(0);
    qs[threadIdx.y][threadIdx.x] = (qrow < cols && k0 + threadIdx.x < dim) ?
        q[qrow * dim + k0 + threadIdx.x] : F(0);
    __syncthreads();
    #pragma unroll 4
    for (int e = 0; e < W; e++) d += sq(ps[threadIdx.y][e] - qs[threadIdx.x][e]);
    __syncthreads();
    k0 += W;
  }
  if (r < rows && c < cols) out[r * cols + c] = d;
}

extern "C" __global__ void pdist(float* D, const float* P, const float* Q, int n_p, int n_q,
                                 int dim) {
  dist_tile<EDGE, float>(D, P, Q, n_p, n_q, dim);
}
""", "pdist", ("ceil_div(NQ, 16)", "ceil_div(NP, 16)"), ("16", "16"),
    {"n_p": "NP", "n_q": "NQ", "dim": "DIM"},
    {"D": ("NP * NQ", True), "P": ("NP * DIM", False), "Q": ("NQ * DIM", False)},
    "pdist(D, P, Q, NP, NQ, DIM)", {"NP": 33, "NQ": 21, "DIM": 19},
    frozenset({"BM", "BN", "BK", "TM", "TN"}))

# a plain device function (no template), the block from #defines, an early return, a value
# helper and a literal bound to a value parameter (a const local)
SMOOTH = Spelling("""
// out = a 5-point average of in, clamped at the borders, h x w row-major fp32.
#define COLS 32
#define ROWS 8

__device__ inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

__device__ void smooth_rows(float* out, const float* in, int h, int w, float centre) {
  const int x = blockIdx.x * COLS + threadIdx.x;
  const int y = blockIdx.y * ROWS + threadIdx.y;
  if (x >= w || y >= h) return;  // outside the image: nothing to write
  const float side = (1.0f - centre) * 0.25f;
  const float up = in[clampi(y - 1, 0, h - 1) * w + x];
  const float down = in[clampi(y + 1, 0, h - 1) * w + x];
  const float left = in[y * w + clampi(x - 1, 0, w - 1)];
  const float right = in[y * w + clampi(x + 1, 0, w - 1)];
  out[y * w + x] = centre * in[y * w + x] + side * (up + down + left + right);
}

extern "C" __global__ void smooth(float* dst, const float* src, int height, int width) {
  smooth_rows(dst, src, height, width, 0.5f);
}
""", "smooth", ("ceil_div(W, 32)", "ceil_div(H, 8)"), ("32", "8"), {"height": "H", "width": "W"},
    {"dst": ("H * W", True), "src": ("H * W", False)}, "smooth(dst, src, H, W)",
    {"H": 21, "W": 70}, frozenset({"BLOCK_X", "BLOCK_Y"}))

SPELLINGS = {"gemm_constexpr_tile": GEMM, "distance_macro_tile_type_param": DIST,
             "stencil_plain_device_function": SMOOTH}


def lift(s: Spelling) -> LiftedSource:
    return lift_kernel(s.source, entry=s.entry, grid=list(s.grid), block=list(s.block),
                       scalars=dict(s.scalars))


def host_outputs(s: Spelling, source: str, grid: list[int], block: list[int], work: Path,
                 flags: tuple[str, ...]) -> np.ndarray:
    """Every output element of one host run of ``source`` (the outputs start at NaN)."""
    sizes = {k: int(eval(v, {}, dict(s.env))) for k, (v, _) in s.buffers.items()}
    lines = [f"  const int {k} = {v};" for k, v in s.env.items()]
    for i, (name, (_, out)) in enumerate(s.buffers.items()):
        fill = "NAN" if out else f"(float)((j * {37 + 6 * i}) % 23 - 11) / 8.0f"
        lines.append(f"  std::vector<float> {name}_v({sizes[name]});")
        lines.append(f"  for (int j = 0; j < {sizes[name]}; ++j) {name}_v[j] = {fill};")
        lines.append(f"  float* {name} = {name}_v.data();")
    g, b = [*grid, 1, 1][:3], [*block, 1, 1][:3]
    lines.append(f"  wb_launch({{{g[0]}, {g[1]}, {g[2]}}}, {{{b[0]}, {b[1]}, {b[2]}}}, "
                 f"[&] {{ {s.call}; }});")
    for name, (_, out) in s.buffers.items():
        if out:
            lines.append(f"  for (float v : {name}_v) std::printf(\"%.9g\\n\", v);")
    work.mkdir(parents=True, exist_ok=True)
    program = (COOPERATIVE_BLOCK + "struct alignas(16) float4 { float x, y, z, w; };\n" +
               source + "\nint main() {\n" + "\n".join(lines) + "\n  return 0;\n}\n")
    return np.array([float(v) for v in run_on_host(work, "k", program, flags=flags).split()])


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_is_inlined_and_lifted(name: str) -> None:
    s = SPELLINGS[name]
    lifted = lift(s)
    assert s.lifts <= {p.name for p in lifted.params}, lifted.notes
    inline = [f for f in lifted.findings if f.transform == "INLINE"]
    assert len(inline) == 1 and inline[0].applied, lifted.notes
    lines = s.source.rstrip().splitlines()
    assert inline[0].line == len(lines) - 1  # the call: the kernel's one statement


def test_the_inlined_body_keeps_the_callees_comments_and_helper_calls() -> None:
    text = inline_calls(DIST.source, "pdist", "k.cu").text
    assert "// the Q row this thread stages" in text
    assert "d += sq(ps[threadIdx.y][e] - qs[threadIdx.x][e]);" in text  # left a call
    # W is bound to the author's macro by name, F substituted: no #define of either
    assert "__shared__ float ps[EDGE][EDGE + 1];" in text and "#define W" not in text
    assert "dist_tile" not in text.replace(
        "// dist_tile<EDGE, float>(D, P, Q, n_p, n_q, dim): dist_tile's body, inlined", "")
    assert "out[" not in text and "D[r * cols + c] = d;" not in text  # renamed, not copied
    assert "D[r * n_q + c] = d;" in text


@needs_gxx
@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_computes_what_it_computes_as_written(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """At the default and, in turn over the spellings, the last all-ends config or the
    sampled one (all of them under WORKBENCH_FULL_MATRIX=1)."""
    s = SPELLINGS[name]
    env = dict(s.env)
    grid = [int(eval(g.replace("ceil_div", "_cd"), {"_cd": lambda a, b: -(-a // b)}, env))
            for g in s.grid]
    want = host_outputs(s, s.source, grid, [int(b) for b in s.block], tmp_path / "plain",
                        host_flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(s), s.entry)
    listed = listed_configs(template, {**env, "elem_bytes": 4})
    rotation = [listed[0], listed[-2], listed[-1]]  # the default, the last end, the sample
    assert_rotation_covers(len(SPELLINGS), rotation)
    configs = listed if FULL_MATRIX else rotating_sample(rotation, sorted(SPELLINGS).index(name))
    for i, config in enumerate(configs):
        launch = template.launch_for(config, {**env, "elem_bytes": 4})
        got = host_outputs(s, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), tmp_path / f"c{i}", host_flags)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(config))


# -- what is bound, and how --------------------------------------------------------------------

BINDINGS = """
#define LANES 32
__device__ void body(float* y, const float* x, int n, long count, float s) {
  int i = blockIdx.x * LANES + threadIdx.x;  // i is the kernel's name too
  for (; n > 0; --n) s *= 0.5f;
  if (i < count) y[i] = s * x[i];
}
extern "C" __global__ void k(float* y, const float* x, int n, int i) {
  body(y, x, n * 2, i, 3.0f);
}
"""


def test_arguments_are_bound_by_name_or_once_as_locals_and_clashing_locals_renamed() -> None:
    done = inline_calls(BINDINGS, "k", "k.cu")
    text = done.text
    assert "  int body_n = n * 2;\n" in text  # an expression, and written: a local
    assert "  const long count = i;\n" in text  # an int for a long: the parameter's type
    assert "  float s = 3.0f;\n" in text  # a literal, and written
    assert "int body_i = blockIdx.x * LANES + threadIdx.x;" in text
    assert "y[body_i] = s * x[body_i];" in text
    assert done.findings[0].applied and "renamed" in done.findings[0].reason


UNSIGNED = """
template <unsigned THREADS, bool CLAMP = true, int HALF = THREADS / 2>
__device__ void body(float* y, int n) {
  unsigned i = blockIdx.x * THREADS + threadIdx.x;
  if (i < n && CLAMP) y[i] = (float)HALF;
}
extern "C" __global__ void k(float* y, int n) { body<128>(y, n); }
"""


def test_template_parameters_become_defines_of_their_type() -> None:
    text = inline_calls(UNSIGNED, "k", "k.cu").text
    assert "#define THREADS 128u\n#define CLAMP true\n#define HALF (THREADS / 2)" in text


# -- refusals ------------------------------------------------------------------------------

KERNEL = """
template <int BS>
__device__ {ret} tile(float* y, const float* x, int n) {{
  __shared__ float s[BS];
  int i = blockIdx.x * BS + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  {tail}
}}
extern "C" __global__ void k(float* y, const float* x, int n) {{
{body}
}}
"""


@pytest.mark.parametrize("ret,tail,body,line,reason", [
    ("void", "if (i < n) y[i] = s[threadIdx.x];",
     "  tile<64>(y, x, n);\n  tile<128>(y, x, n);", 12,
     "called 2 times with different template arguments (<64> at line 11, <128> at line 12)"),
    ("void", "if (i < n) y[i] = s[threadIdx.x];\n  if (n > 1) tile<BS>(y, x, n - 1);",
     "  tile<64>(y, x, n);", 9, "it calls itself"),
    ("float", "return s[threadIdx.x];",
     "  const float v = tile<64>(y, x, n) * tile<64>(y, x, n);\n  y[0] = v;", 11,
     "called 2 times"),
    ("float", "return s[threadIdx.x];", "  y[0] = n > 1 ? tile<64>(y, x, n) : 0.0f;", 11,
     "its result is used in an expression"),
    ("void", "if (i >= n) return;\n  y[i] = s[threadIdx.x];",
     "  tile<64>(y, x, n);\n  y[0] = 1.0f;", 12, "it returns early (line 8)"),
    ("void", "if (i < n) y[i] = s[threadIdx.x];", "  tile(y, x, n);", 11,
     "template parameter BS is deduced"),
])
def test_calls_inlining_cannot_keep_are_refused_with_the_line(
        ret: str, tail: str, body: str, line: int, reason: str) -> None:
    source = KERNEL.format(ret=ret, tail=tail, body=body)
    done = inline_calls(source, "k", "k.cu")
    assert done.text == source
    assert len(done.findings) == 1 and not done.findings[0].applied
    assert reason in done.findings[0].reason, done.findings[0].reason
    assert done.findings[0].line == line, done.findings[0]


def test_a_pointer_bound_to_an_expression_is_a_local_holding_the_address() -> None:
    """The call passes the pointer's value: a local initialised once with it reads and
    writes what the callee's parameter did (renamed where the kernel names it too)."""
    source = KERNEL.format(ret="void", tail="if (i < n) y[i] = s[threadIdx.x];",
                           body="  tile<64>(y + 1, x, n);")
    done = inline_calls(source, "k", "k.cu")
    assert done.findings[0].applied, done.findings
    assert "  float* tile_y = y + 1;\n" in done.text
    assert "if (i < n) tile_y[i] = s[threadIdx.x];" in done.text


@pytest.mark.parametrize("declared,kind", [("float y[]", "array"), ("float& y", "reference")])
def test_an_array_or_reference_bound_to_an_expression_is_refused(declared: str,
                                                                  kind: str) -> None:
    source = KERNEL.replace("{ret} tile(float* y", "void tile(" + declared).format(
        tail="if (i < n) y[0] = s[threadIdx.x];",
        body="  tile<64>(y[1], x, n);" if kind == "reference" else "  tile<64>(y + 1, x, n);")
    done = inline_calls(source, "k", "k.cu")
    assert done.text == source
    assert f"its {kind} parameter y is bound to the expression" in done.findings[0].reason, \
        done.findings
    assert done.findings[0].line == 11


def test_a_kernel_that_indexes_its_threads_itself_keeps_its_helpers() -> None:
    source = KERNEL.format(ret="void", tail="if (i < n) y[i] = s[threadIdx.x];",
                           body="  if (threadIdx.x == 0) y[0] = 0.0f;\n  tile<64>(y, x, n);")
    done = inline_calls(source, "k", "k.cu")
    assert done.text == source and not done.findings


def test_a_template_kernel_is_refused_with_the_reason() -> None:
    source = ("template <int BS>\n__global__ void k(float* y) { y[blockIdx.x * BS + "
              "threadIdx.x] = 0.0f; }\ntemplate __global__ void k<64>(float*);\n")
    done = inline_calls(source, "k", "k.cu")
    assert done.text == source
    assert "is itself a function template" in done.findings[0].reason
    assert done.findings[0].line == 2


def test_the_value_of_a_final_return_initialises_the_callers_variable() -> None:
    source = KERNEL.format(ret="float", tail="return s[threadIdx.x] * 2.0f;",
                           body="  const float v = tile<64>(y, x, n);\n  y[0] = v;")
    text = inline_calls(source, "k", "k.cu").text
    assert "  const float v = s[threadIdx.x] * 2.0f;\n  y[0] = v;" in text


def test_a_template_parameter_whose_name_the_file_uses_is_defined_under_another() -> None:
    source = """
__device__ int twice(int BS) { return 2 * BS; }
template <int BS>
__device__ void tile(float* y, int n) {
  int i = blockIdx.x * BS + threadIdx.x;
  #pragma unroll BS
  for (int r = 0; r < BS; ++r) if (i < n) y[i] += twice(r);
}
extern "C" __global__ void k(float* y, int n) { tile<64>(y, n); }
"""
    text = inline_calls(source, "k", "k.cu").text
    assert "#define TILE_BS 64\n" in text and "#pragma unroll TILE_BS\n" in text
    assert "for (int r = 0; r < TILE_BS; ++r) if (i < n) y[i] += twice(r);" in text
    assert "__device__ int twice(int BS) { return 2 * BS; }" in text


def test_a_variable_whose_address_the_kernel_passes_is_copied_for_a_value_parameter() -> None:
    source = """
__device__ void body(float* acc, float v, const float* x) {
  __shared__ float s[32];
  s[threadIdx.x] = x[threadIdx.x];
  *acc += s[threadIdx.x];
  acc[0] += v;  // v is the value at the call, not what *acc made of it
}
extern "C" __global__ void k(const float* x, float* y) {
  float t = y[0];
  float* pt = &t;
  body(pt, t, x);
  y[0] = t;
}
"""
    text = inline_calls(source, "k", "k.cu").text
    assert "const float v = t;" in text and "pt[0] += v;" in text


def test_sibling_callees_are_each_inlined_and_a_later_definition_is_declared_first() -> None:
    source = """
template <int T> __device__ void load(float* s, const float* x);
__device__ void store(float* y, const float* s) { y[threadIdx.x] = s[threadIdx.x]; }
extern "C" __global__ void k(const float* x, float* y) {
  __shared__ float s[128];
  load<128>(s, x);
  __syncthreads();
  store(y, s);
}
template <int T> __device__ void load(float* s, const float* x) {
  if (threadIdx.x < T) s[threadIdx.x] = x[threadIdx.x];
}
"""
    done = inline_calls(source, "k", "k.cu")
    assert [f.applied for f in done.findings] == [True, True], done.findings
    assert done.text.index("#define T 128") < done.text.index('extern "C"')
    assert "template <int T>" not in done.text and "void store" not in done.text
    assert "  if (threadIdx.x < T) s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n" \
        "  // store(y, s): store's body, inlined\n  y[threadIdx.x] = s[threadIdx.x];" \
        in done.text
    # each line is told in the baseline's: the inlined load is line 11, store's line 3
    lines = done.text.splitlines()
    at = lines.index("  if (threadIdx.x < T) s[threadIdx.x] = x[threadIdx.x];") + 1
    assert done.baseline_line(at) == 11
    assert done.baseline_line(at + 3) == 3


def test_a_pointer_type_argument_is_refused() -> None:
    source = """
template <typename P> __device__ void body(P p) { p[threadIdx.x] = 0; }
extern "C" __global__ void k(float* y) { body<float*>(y); }
"""
    done = inline_calls(source, "k", "k.cu")
    assert done.text == source and "bound to the pointer type float*" in \
        done.findings[0].reason and done.findings[0].line == 3


def test_a_call_that_is_the_lone_body_of_an_if_is_inlined_as_a_block() -> None:
    source = KERNEL.format(ret="void", tail="if (i < n) y[i] = s[threadIdx.x];",
                           body="  if (n > 0)\n    tile<64>(y, x, n);\n  y[0] = 1.0f;")
    text = inline_calls(source, "k", "k.cu").text
    assert "  if (n > 0)\n    {\n      // tile<64>(y, x, n): tile's body, inlined\n" \
        "      __shared__ float s[BS];\n" in text
    assert "      if (i < n) y[i] = s[threadIdx.x];\n    }\n  y[0] = 1.0f;\n" in text


def test_a_callee_another_kernel_calls_stays_and_its_parameter_is_defined_apart() -> None:
    source = """
template <int TILE> __device__ void body(float* y);
extern "C" __global__ void k(float* y) { body<32>(y); }
extern "C" __global__ void k2(float* y) { body<64>(y); }
template <int TILE> __device__ void body(float* y) {
  __shared__ float s[TILE];
  s[threadIdx.x % TILE] = 1.0f;
  __syncthreads();
  y[threadIdx.x] = s[0];
}
"""
    done = inline_calls(source, "k", "k.cu")
    assert done.findings[0].reason == "body<32> inlined into k: TILE = 32 (as BODY_TILE)"
    assert "#define BODY_TILE 32\n" in done.text and "s[threadIdx.x % BODY_TILE]" in done.text
    assert done.text.count("template <int TILE>") == 2  # the prototype and the definition
    assert "extern \"C\" __global__ void k2(float* y) { body<64>(y); }" in done.text


DEDUCED = """
template <typename T, int THREADS = 128>
__device__ void body(T* __restrict__ y, const T* __restrict__ x, T s, int n) {
  int i = blockIdx.x * THREADS + threadIdx.x;
  if (i < n) y[i] = s * x[i];
}
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x, float s, int n) {
  body(y, x, s, n);
}
"""


def test_a_type_parameter_the_arguments_give_is_deduced_and_a_disagreement_refused() -> None:
    done = inline_calls(DEDUCED, "k", "k.cu")
    assert done.findings[0].reason == "body inlined into k: T = float (from y); THREADS = 128"
    assert "  int i = blockIdx.x * THREADS + threadIdx.x;\n  if (i < n) y[i] = s * x[i];\n" \
        in done.text
    lifted = lift_kernel(DEDUCED, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n", "s": "2"})
    assert {"BLOCK_THREADS", "VEC"} <= {p.name for p in lifted.params}, lifted.notes
    two = DEDUCED.replace("float s, int n) {", "double s, int n) {")
    refused = inline_calls(two, "k", "k.cu").findings[0]
    assert not refused.applied and refused.line == 8
    assert "T is deduced from the call's arguments and the arguments give double, float" in \
        refused.reason
