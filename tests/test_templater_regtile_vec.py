"""VEC: float4 loads of a register-tiled GEMM's shared tiles (issue 28, part A.2).

The analysis offers VEC where a tile's store is a (guarded) load of a float pointer whose
index steps by one element along the tile's row; the rendered vector path takes a 16-byte
load only where the guard holds at all four positions and the run is contiguous and
aligned at run time. On the host: with leading dimensions that are multiples of four the
vector path is taken and the product is right; with the matrices one float off 16-byte
alignment it is never taken and the product is still right; other stores are refused
with their line and keep the scalar loop.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import FULL_MATRIX, corner_configs, host_sample, lifted_template
from regtile_spellings import Spelling, lift, simulate
from test_templater_regtile_batch import BATCHED
from test_templater_regtile_spellings import SPELLINGS

from workbench.core.kernel_folder.load import load_kernel_folder
from workbench.templater.offline import offline_template

ROOT = Path(__file__).resolve().parents[1]

ALL = {**BATCHED, **SPELLINGS}
ALIGNED = {"batch": 2, "M": 37, "N": 44, "K": 28}  # rows of A and B start 16-byte aligned


def _env(s: Spelling) -> dict[str, int]:
    """ALIGNED, with one product for a kernel whose grid has no batch dimension."""
    return {**ALIGNED, "batch": ALIGNED["batch"] if len(s.grid) == 3 else 1}


def _vec_config(s: Spelling, **values: int) -> dict[str, object]:
    """The default with VEC = 4 and ``values`` (TM = TN = 2 unless given): a valid config."""
    template = lifted_template(lift(s), s.entry)
    config: dict[str, object] = dict(template.default_config())
    config.update({"VEC": 4, "TM": 2, "TN": 2, **values})
    assert template.space({**_env(s), "elem_bytes": 4}).rejection(config) is None
    return config


@pytest.mark.parametrize("name", sorted(ALL))
def test_vec_is_offered_with_its_divisibility_constraint(name: str) -> None:
    lifted = lift(ALL[name])
    assert "VEC" in {p.name for p in lifted.params}, lifted.notes
    vec = [c for c in lifted.constraints if c.startswith("VEC == 1 or")]
    assert vec and "% 4 == 0" in vec[0]
    assert "#if VEC == 4" in lifted.source and "float4" in lifted.source


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(ALL))
def test_vector_path_is_taken_where_aligned_and_never_where_not(name: str) -> None:
    s = ALL[name]
    template = lifted_template(lift(s), s.entry)
    config = _vec_config(s)
    with tempfile.TemporaryDirectory() as tmp:
        worst, loads = simulate(s, template, config, _env(s), Path(tmp))
        assert worst < 1e-3 and loads > 0, (worst, loads)
        worst, loads = simulate(s, template, config, _env(s), Path(tmp), offset=1)
        assert worst < 1e-3 and loads == 0, (worst, loads)


_FAST = "wb_v0[wb_s] = wb_v;"  # the fast path keeps its first tile's vectors


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(ALL) if FULL_MATRIX else sorted(ALL)[::len(ALL) - 1])
def test_interior_tiles_take_the_untested_loads_and_misaligned_rows_never(name: str) -> None:
    """The straight-line path (every vector of the thread tested first, then all loaded)
    runs on the interior tiles of aligned matrices, where its products are right, and never
    one float off alignment: counted by a second increment on its loads only."""
    s = ALL[name]
    lifted = lift(s)
    assert lifted.source.count(_FAST) == 1 and "if (wb_fast) {" in lifted.source
    template = lifted_template(lifted, s.entry)
    counted = lifted_template(dataclasses.replace(
        lifted, source=lifted.source.replace(_FAST, _FAST + " ++wb_vector_loads;")), s.entry)
    config = _vec_config(s)
    with tempfile.TemporaryDirectory() as tmp:
        worst, loads = simulate(s, template, config, _env(s), Path(tmp))
        worst_counted, both = simulate(s, counted, config, _env(s), Path(tmp))
        assert worst < 1e-3 and worst_counted == worst and both > loads > 0, (loads, both)
        worst, loads = simulate(s, template, config, _env(s), Path(tmp), offset=1)
        _, both = simulate(s, counted, config, _env(s), Path(tmp), offset=1)
        assert worst < 1e-3 and loads == both == 0, (worst, loads, both)


CORPUS = {"gemm_smem": ROOT / "benchmarks" / "corpus_compute" / "gemm_smem",
          "sgemm_nt": ROOT / "benchmarks" / "corpus_compute_unseen2" / "sgemm_nt",
          "dense_relu": ROOT / "benchmarks" / "corpus_compute_unseen3" / "dense_relu"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_widest_register_tile_fits_two_blocks_per_sm_without_spills(
        name: str, compiler: Any) -> None:
    """At 128 x 128 x 32 with 8 x 8 per thread (256 threads) and float4 loads, ptxas keeps
    each corpus GEMM in at most 128 registers (two blocks per SM) with no spills: the tests
    of the thread's vectors stay in a rolled loop, so nothing of them is live across the
    product loop."""
    template = offline_template(load_kernel_folder(CORPUS[name])).template
    config = {**template.default_config(), "BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8,
              "VEC": 4}
    result = compiler.compile(template.render(config, "fp32"))
    assert result.ok and result.usage is not None, result.error_summary
    usage = result.usage
    assert usage.spill_store_bytes == usage.spill_load_bytes == 0, usage
    assert usage.regs_per_thread <= 128, usage


# -- refusals ------------------------------------------------------------------------------

BASE = SPELLINGS["blockdim_rowcol_ceil_count_unroll_ifndef"]


def _vec_findings(source: str) -> list[tuple[str, int]]:
    s = Spelling(source, BASE.grid, BASE.block, BASE.scalars, BASE.call, entry=BASE.entry)
    lifted = lift(s)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings)
    return [(f.reason, f.line) for f in lifted.findings if f.transform == "VEC" and
            not f.applied]


@pytest.mark.parametrize("edit,reason,line", [
    (("tile_a[threadIdx.y][threadIdx.x] = a[row * k + t * TILE + threadIdx.x];",
      "tile_a[threadIdx.y][threadIdx.x] = 2.0f * a[row * k + t * TILE + threadIdx.x];"),
     "is not a load `X[index]`", 16),
    (("tile_b[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];",
      "tile_b[threadIdx.y][threadIdx.x] = b[col * k + t * TILE + threadIdx.y];"),
     "does not step by one element along the tile's row", 24),
    (("__global__ void matmul_kernel(const float *a,",
      "__global__ void matmul_kernel(const double *a,"),
     "is not a pointer to float", 16),
])
def test_stores_the_vector_path_cannot_take_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    """The line is the load's (the if / else fill reads as one select per element since
    3c71b5c, so the refusal names the store's line, not the if's)."""
    assert edit[0] in BASE.source
    found = _vec_findings(BASE.source.replace(edit[0], edit[1], 1))
    assert len(found) == 1, found
    assert reason in found[0][0], found
    assert found[0][1] == line


def test_a_load_address_the_analysis_cannot_evaluate_refuses_the_register_tile() -> None:
    """A masked index (`& 0x7fffffff`) is not evaluated by the pairing probe, so the register
    tile itself is refused naming the load and its line (before, it was lifted and only its
    vector path refused)."""
    edit = ("tile_a[threadIdx.y][threadIdx.x] = a[row * k + t * TILE + threadIdx.x];",
            "tile_a[threadIdx.y][threadIdx.x] = a[(row * k + t * TILE + threadIdx.x) & 0x7fffffff];")
    assert edit[0] in BASE.source
    s = Spelling(BASE.source.replace(*edit, 1), BASE.grid, BASE.block, BASE.scalars, BASE.call,
                 entry=BASE.entry)
    refused = [(f.reason, f.line) for f in lift(s).findings
               if f.transform == "REGISTER_TILE" and not f.applied]
    assert any("& 0x7fffffff" in r and "cannot be shown" in r and line == 16
               for r, line in refused), refused


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ALL))
def test_vec_templates_compile_with_nvcc_at_corners(name: str, compiler: Any) -> None:
    s = ALL[name]
    template = lifted_template(lift(s), s.entry)
    env = {**_env(s), "elem_bytes": 4}
    for config in host_sample([_vec_config(s, BM=64, BN=64, TM=4, TN=4),
                               *corner_configs(template, env)]):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{config}: {result.error_summary}\n{result.log[-1500:]}"


# -- the unit-stride probe -----------------------------------------------------------------

def _probe(index: str) -> bool | None:
    from tree_sitter import Node

    from workbench.core.cuda_source import parse_cuda
    from workbench.templater.analysis import text, walk
    from workbench.templater.regtile_vec import unit_stride

    source = parse_cuda(f"__global__ void k(float* x, int K, int M) {{ x[{index}] = 0; }}",
                        "probe.cu")
    sub = next(n for n in walk(source.tree.root_node) if n.type == "subscript_expression")
    idx = sub.child_by_field_name("indices") or sub.child_by_field_name("index")
    assert idx is not None
    idx = idx.named_children[0] if idx.type == "subscript_argument_list" else idx

    def at(r: int, c: int) -> Any:
        def leaf(n: Node) -> int | None:
            return {"r": r, "c": c}.get(text(n)) if n.type == "identifier" else None
        return leaf
    return unit_stride(idx, at)


@pytest.mark.parametrize("index,expected", [
    ("r * K + c", True), ("(long long)r * K + 4 + c", True), ("K * (r + 1) - K + c", True),
    ("c * M + r", False), ("r * K + 2 * c", False), ("c / 2 + r", False),
    ("r + (c << (K - 600))", None), ("r * K + c + (int)sizeof(float)", None),
])
def test_the_probe_steps_along_the_row_or_says_it_cannot_tell(index: str,
                                                              expected: bool | None) -> None:
    assert _probe(index) is expected
