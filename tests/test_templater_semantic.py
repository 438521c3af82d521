"""The semantic offline templater on the corpus of plain kernels (benchmarks/corpus/).

Pure tests: knobs per kernel, dependency-aware lifting (every governed use follows the
parameter; look-alike literals stay), transforms refused with their reason, defaults that
launch like the kernel as written; and one compile test of every template at two corners.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs, host_sample, lifted_template

from workbench.core.cuda_source import parse_cuda
from workbench.core.expr import parse_constraint, parse_expr
from workbench.core.params import parameter_from_dict
from workbench.core.template import KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.templater import LiftedSource, lift_kernel

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"
_spec = importlib.util.spec_from_file_location("corpus_folders", ROOT / "corpus_folders.py")
assert _spec is not None and _spec.loader is not None
corpus_folders = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("corpus_folders", corpus_folders)
_spec.loader.exec_module(corpus_folders)
CORPUS: dict[str, Any] = corpus_folders.CORPUS
NAMES = sorted(CORPUS)


def _dims(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [*out, text[start:].strip()]


def lift(name: str, source: str | None = None) -> LiftedSource:
    fill = CORPUS[name]
    text = source if source is not None else (ROOT / "corpus" / name / f"{name}.cu").read_text()
    kernel = parse_cuda(text).kernel(name)
    scalars = {p.name: fill.scalars.get(p.name, p.name) for p in kernel.params if p.is_scalar}
    return lift_kernel(text, entry=name, grid=_dims(fill.grid), block=_dims(fill.block),
                       scalars=scalars, file=f"{name}.cu")


def env(name: str, shape: str = "small") -> dict[str, Any]:
    return {**CORPUS[name].shapes[shape], "elem_bytes": 2 if name == "silu_mul" else 4}


@pytest.mark.parametrize("name", NAMES)
def test_every_corpus_kernel_gets_three_knobs_and_launches_as_written(name: str) -> None:
    lifted = lift(name)
    assert len(lifted.params) >= 3, lifted.notes
    template = lifted_template(lifted, name)
    fill = CORPUS[name]
    for shape in ("small", "large"):
        e = env(name, shape)
        space = template.space(e)
        assert space.rejection(template.default_config()) is None
        assert len(space) > 1
        written = [int(parse_expr(g).evaluate(e)) for g in _dims(fill.grid)]
        launch = template.launch_for(template.default_config(), e)
        assert list(launch.grid[:len(written)]) == written
        assert list(launch.block[:len(_dims(fill.block))]) == [int(b) for b in _dims(fill.block)]
    for p in lifted.params:  # every parameter is used outside its own #define guard
        code = re.sub(rf"#(ifndef|define) {p.name}\b.*", "", lifted.source)
        assert re.search(rf"\b{p.name}\b", code), p.name


def test_block_size_moves_with_every_use_it_governs() -> None:
    src = lift("rms_norm").source
    assert "__shared__ float partial[BLOCK_THREADS];" in src
    assert "for (int k = (BLOCK_THREADS / 2); k > 0; k >>= 1)" in src
    assert "(BLOCK_THREADS) * (VEC * ITEMS_PER_THREAD)" in src  # the loop step
    assert "__launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM)" in src
    code = src.split("#line")[0]
    body = code[code.index("rms_norm("):]
    assert not re.search(r"\b(256|128)\b", body), "a governed literal was left behind"


def test_look_alike_literals_are_left_alone_and_listed() -> None:
    lifted = lift("quant_int8")  # block 128 and group size 128
    src = lifted.source
    assert "(long long)warp * 128" in src and "(long long)warp * 128 + lane + 32 * k" in src
    assert "(blockIdx.x * ITEMS_PER_THREAD + wb_item_x) * BLOCK_THREADS + threadIdx.x" in src
    assert lifted.grid == ("ceil_div(n_groups * 32, BLOCK_THREADS * ITEMS_PER_THREAD)",)
    alike = [f for f in lifted.findings if not f.applied and "not governed" in f.reason]
    assert {f.line for f in alike} == {11, 23}
    # two 16s of a 2-D block each follow their own dimension
    stencil = lift("stencil5").source
    assert "(BLOCK_X * OUT_X) + threadIdx.x" in stencil and "BLOCK_Y + threadIdx.y" in stencil


def _reason(lifted: LiftedSource, transform: str) -> str:
    found = [f.reason for f in lifted.findings if f.transform == transform and not f.applied]
    assert found, lifted.notes
    return found[0]


def test_illegal_transforms_are_reported_with_the_reason() -> None:
    assert "__shared__" in _reason(lift("rms_norm"), "ROW_SPLIT")
    # stencil5 itself lifts OUT_Y (stencil_rows.py); without its row neighbours it does not
    row_only = (ROOT / "corpus" / "stencil5" / "stencil5.cu").read_text().replace(
        " + in[i - w] + in[i + w]", "")
    # a 2-D block takes VEC along x only where arrays are indexed by x plus a row offset
    # (vector_rows); the stencil's neighbours are read through i = y * w + x
    stencil = lift("stencil5", row_only)
    assert "no array is indexed by x" in _reason(stencil, "VEC")
    assert "VEC" not in {p.name for p in stencil.params}
    base = (ROOT / "corpus" / "embedding" / "embedding.cu").read_text()
    aliasing = base.replace("float* __restrict__ out", "float* out")
    lifted = lift("embedding", aliasing)
    assert "may alias table" in _reason(lifted, "VEC")
    assert "VEC" not in {p.name for p in lifted.params}
    # a strided read is read per lane at the lane's element; a strided write is refused
    strided = base.replace("table[(long long)id * d + j]", "table[(long long)id * d + 2 * j]")
    assert "table[(long long)id * d + 2 * (j + wb_v)]" in lift("embedding", strided).source
    spread = base.replace("out[(long long)t * d + j]", "out[(long long)t * d + 2 * j]")
    assert "is read as a value in `2 * j` and the body writes `out[(long long)t * d + 2 * j]`" \
        in _reason(lift("embedding", spread), "VEC")
    branchy = base.replace("out[(long long)t * d + j] = table[(long long)id * d + j];",
                           "if (id > 0) out[(long long)t * d + j] = table[(long long)id * d + j];")
    assert "branch" in _reason(lift("embedding", branchy), "VEC")


def test_constraints_parse_and_keep_vector_accesses_aligned() -> None:
    lifted = lift("silu_mul")
    assert "d % VEC == 0" in lifted.constraints and "VEC * 2 <= 16" in lifted.constraints
    names = [p.name for p in lifted.params] + ["d", "tokens", "elem_bytes"]
    for c in lifted.constraints:
        parse_constraint(c, known_names=names)
    space = lifted_template(lifted, "silu_mul").space({"tokens": 7, "d": 260, "elem_bytes": 2})
    assert {c["VEC"] for c in space} == {1, 2, 4}  # 260 = 4 * 65: no 8-wide vectors


def test_tile_family_for_the_transpose() -> None:
    lifted = lift("transpose")
    src = lifted.source
    assert "__shared__ float tile[TILE][TILE + PAD];" in src
    assert "for (int j = 0; j < TILE; j += BLOCK_ROWS)" in src
    assert lifted.block == ("TILE", "BLOCK_ROWS")
    assert lifted.grid == ("ceil_div(cols, TILE)", "ceil_div(rows, TILE)")
    assert "TILE % BLOCK_ROWS == 0" in lifted.constraints


def _corners(template: KernelTemplate, e: dict[str, Any]) -> list[dict[str, Any]]:
    """The default and the valid config farthest from it (every parameter at an end)."""
    return [dict(template.default_config()), *end_configs(template, e)[-1:]]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_corpus_templates_compile_at_their_corners(compiler: Compiler) -> None:
    for name in NAMES:
        template = lifted_template(lift(name), name)
        dtype = "bf16" if name == "silu_mul" else "fp32"
        for config in host_sample(_corners(template, env(name))):
            result = compiler.compile(template.render(config, dtype))
            assert result.ok, f"{name} {config}: {result.error_summary}\n{result.log[-1500:]}"


@pytest.mark.parametrize("folder", sorted(p.parent for kind in ("corpus", "corpus_holdout")
                                           for p in (ROOT / kind).glob("*/kernel.toml")),
                         ids=lambda p: p.name)
def test_committed_corpus_templates_are_what_the_templater_writes(folder: Path) -> None:
    """The folders' template.cu and launch rules (written by ``propose --write``) are the
    templater's output from their baseline.cu: the measured templates match the code."""
    data = tomllib.loads((folder / "kernel.toml").read_text())
    base = data["baseline"]
    scalars = {a["name"]: a["value"] for a in data["args"] if a["role"] == "scalar"}
    lifted = lift_kernel((folder / "baseline.cu").read_text(), entry=base["entry"],
                         grid=base["grid"], block=base["block"], scalars=scalars)
    assert lifted.source == (folder / "template.cu").read_text()
    written = data["template"]
    assert (list(lifted.grid), list(lifted.block)) == (written["grid"], written["block"])
    assert list(lifted.constraints) == written["constraints"]
    assert [p.name for p in lifted.params] == list(written["params"])


def test_launch_rules_are_rewritten_through_the_expression_tree() -> None:
    from workbench.templater.rules import min_cap, scale_divisor

    assert scale_divisor("(n + 255) // 256", "256", "B") == "ceil_div(n, B)"
    assert scale_divisor("ceil_div(n, 256) + 256", "256", "B") == "ceil_div(n, B) + 256"
    assert scale_divisor("rows", "256", "B") is None
    assert min_cap("min(ceil_div(n, B), 1024)", "GRID_BLOCKS") == \
        ("min(ceil_div(n, B), GRID_BLOCKS)", 1024)


def test_unparseable_or_empty_kernels_are_refused_with_the_line() -> None:
    from workbench.core.errors import CudaSourceError

    bad = 'extern "C" __global__ void k(float* y) {\n  y[0] = FOO(1;\n}\n'
    with pytest.raises(CudaSourceError) as err:
        lift_kernel(bad, entry="k", grid=["1"], block=["32"], scalars={})
    assert err.value.line == 2
    plain = 'extern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n'
    lifted = lift_kernel(plain, entry="k", grid=["1"], block=["32"], scalars={})
    assert lifted.params == ()
    assert any("appears nowhere" in f.reason for f in lifted.findings)


def test_a_block_size_dependency_it_cannot_model_keeps_the_block_size() -> None:
    """A hand-unrolled reduction (``if (tid < 128)``) ties the code to 256 threads in a way
    the analysis does not follow: the block size is not lifted, and the reason says why."""
    src = (ROOT / "corpus" / "rms_norm" / "rms_norm.cu").read_text().replace(
        "  for (int k = 128; k > 0; k >>= 1) {\n"
        "    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];\n"
        "    __syncthreads();\n  }\n",
        "  if (threadIdx.x < 128) partial[threadIdx.x] += partial[threadIdx.x + 128];\n"
        "  __syncthreads();\n")
    lifted = lift("rms_norm", src)
    assert "BLOCK_THREADS" not in {p.name for p in lifted.params}
    assert "outside a reduction loop" in _reason(lifted, "BLOCK_THREADS")
    assert "partial[256]" in lifted.source  # left exactly as written


# -- integer macros and the column walk (the held-out col_sum's miss) ------------------------

ROW_SUM = """#define BLOCK 256
#define GROUP 128
extern "C" __global__ void row_sum(float* __restrict__ out, const float* __restrict__ x, int d) {
  __shared__ float partial[BLOCK];
  __shared__ float warps[BLOCK / 32];
  const float* row = x + (long long)blockIdx.x * d;
  float s = 0.0f;
  for (int j = threadIdx.x; j < d; j += BLOCK) s += row[j];
  partial[threadIdx.x] = s;
  if (threadIdx.x < BLOCK / 32) warps[threadIdx.x] = 0.0f;
  __syncthreads();
  for (int k = BLOCK / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0] * GROUP + warps[0];
}
"""


def test_a_define_is_lifted_with_every_use_and_a_look_alike_define_stays(
        compiler: Compiler) -> None:
    lifted = lift_kernel(ROW_SUM, entry="row_sum", grid=["rows"], block=["256"],
                         scalars={"d": "d"})
    src = lifted.source
    assert "#define BLOCK BLOCK_THREADS\n#define GROUP 128\n" in src
    # the uses keep the author's name and follow the #define, including the ones no
    # transform recognises (warps[BLOCK / 32], tid < BLOCK / 32, the reduction's BLOCK / 2)
    for use in ("partial[BLOCK]", "warps[BLOCK / 32]", "threadIdx.x < BLOCK / 32",
                "int k = BLOCK / 2", "partial[0] * GROUP"):
        assert use in src, use
    assert "BLOCK_THREADS" in {p.name for p in lifted.params}
    assert any(f.transform == "#define GROUP" and not f.applied for f in lifted.findings)
    template = lifted_template(lifted, "row_sum")
    assert template.launch.to_dict()["block"] == ["BLOCK_THREADS"]
    for threads in (32, 1024):
        config = {**template.default_config(), "BLOCK_THREADS": threads}
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, result.log[-1500:]


def test_the_named_constant_transform_is_not_needed_for_defines() -> None:
    semantic = lift_kernel(ROW_SUM, entry="row_sum", grid=["rows"], block=["256"],
                           scalars={"d": "d"})
    assert "BLOCK_THREADS" in {p.name for p in semantic.params}
    # the block transform lifted the define's uses: the named-constant fallback stays out
    assert not any(f.transform == "named constants" for f in semantic.findings)


def test_the_column_walk_is_split_over_lanes(compiler: Compiler) -> None:
    folder = ROOT / "corpus_holdout" / "col_sum"
    text = (folder / "col_sum.cu").read_text()
    lifted = lift_kernel(text, entry="col_sum", grid=["ceil_div(cols, 256)"], block=["256"],
                         scalars={"rows": "rows", "cols": "cols"})
    src = lifted.source
    assert "(threadIdx.x / WALK_SPLIT)" in src
    assert "for (int r = (0) + (int)(threadIdx.x % WALK_SPLIT); r < rows; r += WALK_SPLIT)" in src
    assert "s += __shfl_xor_sync(" in src and "if (threadIdx.x % WALK_SPLIT == 0)" in src
    assert lifted.block == ("BLOCK_THREADS * WALK_SPLIT",)
    assert lifted.grid == ("ceil_div(cols, BLOCK_THREADS * ITEMS_PER_THREAD)",)
    assert "BLOCK_THREADS * WALK_SPLIT <= 1024" in lifted.constraints
    template = KernelTemplate.build(
        name="col_sum", source=src, entry="col_sum",
        params=[parameter_from_dict(p.name, dict(p.spec)) for p in lifted.params],
        constraints=list(lifted.constraints), grid=list(lifted.grid), block=list(lifted.block))
    space = template.space({"rows": 7, "cols": 1000})
    assert max(c["BLOCK_THREADS"] * c["WALK_SPLIT"] for c in space) == 1024
    for split in (1, 32):
        config = {**template.default_config(), "WALK_SPLIT": split, "BLOCK_THREADS": 32,
                  "ITEMS_PER_THREAD": 2}
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, result.log[-1500:]
    committed = (folder / "template.cu").read_text()
    assert committed == src  # what propose --write saved is the templater's output


def test_a_walk_that_needs_its_lanes_elsewhere_is_not_split() -> None:
    text = (ROOT / "corpus_holdout" / "col_sum" / "col_sum.cu").read_text()
    synced = text.replace("  out[c] = s;", "  __syncthreads();\n  out[c] = s;")
    lifted = lift_kernel(synced, entry="col_sum", grid=["ceil_div(cols, 256)"], block=["256"],
                         scalars={"rows": "rows", "cols": "cols"})
    assert "__syncthreads, whose lanes would change" in _reason(lifted, "WALK_SPLIT")
    halves = text.replace("float s = 0.0f;", "__half s = 0.0f;")
    lifted = lift_kernel(halves, entry="col_sum", grid=["ceil_div(cols, 256)"], block=["256"],
                         scalars={"rows": "rows", "cols": "cols"})
    assert "is a __half, which __shfl_xor_sync does not combine" in _reason(lifted, "WALK_SPLIT")
