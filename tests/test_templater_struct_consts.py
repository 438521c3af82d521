"""Tile sizes held in named members (issue 28: set 6's linear_gelu_lda reads ``Tile::ROWS``).

A struct's ``static constexpr int``, a namespace's ``constexpr int`` and an enumerator with an
explicit value are the same named integer as a ``#define``: every transform reads a use
spelled ``Tile::ROWS`` as that integer, where transforms lift some uses to one parameter the
others follow it, and the template keeps the author's spelling. A name defined twice, a value
that is not a literal and a template's member are not read. Lifted spellings are run on the
host (g++) at the default, every all-ends config and a sample, against the kernel as written.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    end_configs,
    host_sample,
    lifted_template,
    run_on_host,
)

from workbench.core.cuda_source import parse_cuda
from workbench.core.expr import parse_expr
from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import lift_kernel, offline_template
from workbench.templater.reduce_consts import member_constants, spell_members

ROOT = Path(__file__).resolve().parents[1]
LINEAR_GELU = ROOT / "benchmarks" / "corpus_compute_unseen6" / "linear_gelu_lda"

MEMBERS = """
struct Tile { static constexpr int ROWS = 16; static const unsigned COLS = 32u, PAD = 1;
              enum { DEPTH = 8 }; enum Sub { WIDE = 4 }; int not_static = 3; };
namespace cfg { constexpr int BW = 64; enum class Dim : int { A = 2, B }; struct In { static
                constexpr int Q = (5); }; }
enum Plain { kLanes = 32 };
template <int N> struct Dep { static constexpr int R = 16; };
struct Twice { static constexpr int X = 1; };
namespace again { constexpr int Y = 1; }
namespace again { constexpr int Y = 2; }
struct Expr { static constexpr int Z = 4 * 4; };
"""


def test_each_member_spelling_is_read_and_the_others_are_not() -> None:
    found = member_constants(parse_cuda(MEMBERS).tree.root_node)
    assert found == {"Tile::ROWS": 16, "Tile::COLS": 32, "Tile::PAD": 1, "Tile::DEPTH": 8,
                     "Tile::Sub::WIDE": 4, "Tile::WIDE": 4, "cfg::BW": 64, "cfg::Dim::A": 2,
                     "cfg::In::Q": 5, "Plain::kLanes": 32, "kLanes": 32, "Twice::X": 1,
                     "Expr::Z": 16}  # an integer expression of literals is its value


def test_qualified_uses_are_read_as_one_name_and_written_back_as_the_author_spelled_them() -> None:
    source = MEMBERS + ("__global__ void k(int* o) { o[0] = Tile::ROWS + cfg :: BW + "
                        "(int)cfg::Dim::A + Dep<1>::R + again::Y + Expr::Z + kLanes; }\n")
    spelled = spell_members(source, "k.cu")
    assert len(spelled.source_text.encode()) == len(source.encode())
    assert spelled.values == {"Tile__ROWS": 16, "cfg____BW": 64, "cfg__Dim__A": 2,
                              "Expr__Z": 16, "kLanes": 32}
    assert "Dep<1>::R + again::Y + Expr__Z" in spelled.source_text
    assert spelled.restore(spelled.source_text) == source


def test_linear_gelu_lda_lifts_its_tied_tiles_with_the_block() -> None:
    # the block (32 x 16) is tied to the shared tiles xs[Tile::ROWS][Tile::DEPTH] and
    # ws[Tile::DEPTH][Tile::COLS]: the register tile lifts them together (its host and
    # ptxas checks: tests/test_templater_regtile_gelu_lda.py), never the block alone
    result = offline_template(load_kernel_folder(LINEAR_GELU))
    names = {p.name for p in result.template.params}
    assert {"BM", "BN", "BK", "TM", "TN"} <= names and "BLOCK_X" not in names


@dataclass(frozen=True)
class Case:
    source: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    env: dict[str, int]
    setup: str  # C++ statements making the arrays and the launch's arguments
    call: str  # the kernel call
    output: str  # the array printed, and its length
    lifts: str  # a parameter the lift must make
    definition: str  # the member's definition in the template: it reads that parameter


CASES = {
    # a 2-D shared tile (a padded transpose) sized by a namespace constexpr, read as
    # cfg::TS (a GEMM so sized lifts the register tile instead: its host check is
    # tests/test_templater_regtile_guarded.py's namespace spelling)
    "namespace_constexpr_tiles": Case("""
namespace cfg { constexpr int TS = 16; }
extern "C" __global__ void tr(const float* in, float* out, int rows, int cols) {
  __shared__ float t[cfg::TS][cfg::TS + 1];
  int x = blockIdx.x * cfg::TS + threadIdx.x, y = blockIdx.y * cfg::TS + threadIdx.y;
  if (x < cols && y < rows) t[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * cfg::TS + threadIdx.x;
  y = blockIdx.x * cfg::TS + threadIdx.y;
  if (x < rows && y < cols) out[y * rows + x] = t[threadIdx.x][threadIdx.y];
}
""", ("ceil_div(cols, 16)", "ceil_div(rows, 16)"), ("16", "16"), {"rows": 37, "cols": 41},
        "std::vector<float> in(rows * cols), out(rows * cols, -1.0f);"
        "for (int i = 0; i < rows * cols; ++i) in[i] = (i % 13) * 0.25f - 1.0f;",
        "tr(in.data(), out.data(), rows, cols)", "out", "TILE", "constexpr int TS = TILE;"),
    # a tree reduction over a block sized by an enum class member behind static_cast
    "enum_class_tree_reduction": Case("""
enum class Cfg : int { kThreads = 128 };
extern "C" __global__ void rowsum(const float* x, float* out, int cols) {
  __shared__ float part[static_cast<int>(Cfg::kThreads)];
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += static_cast<int>(Cfg::kThreads))
    s += x[(size_t)blockIdx.x * cols + j];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int h = static_cast<int>(Cfg::kThreads) / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
""", ("rows",), ("128",), {"rows": 3, "cols": 1000},
        "std::vector<float> x(rows * cols), out(rows, -1.0f);"
        "for (int i = 0; i < rows * cols; ++i) x[i] = (i % 17) * 0.125f - 1.0f;",
        "rowsum(x.data(), out.data(), cols)", "out", "BLOCK_THREADS",
        "{ kThreads = BLOCK_THREADS }"),
    # a grid-stride loop whose block is an unnamed enum's member inside a struct, its stride
    # read in a device helper
    "struct_enum_grid_stride": Case("""
struct Launch { enum : int { THREADS = 256 }; };
__device__ int stride() { return gridDim.x * Launch::THREADS; }  // a helper's use follows too
extern "C" __global__ void axpb(const float* x, float* y, float a, int n) {
  for (int i = blockIdx.x * Launch::THREADS + threadIdx.x; i < n; i += stride())
    y[i] = a * x[i] + 1.0f;
}
""", ("ceil_div(n, 256)",), ("256",), {"n": 1500},
        "std::vector<float> x(n), y(n, -1.0f); const float a = 0.75f;"
        "for (int i = 0; i < n; ++i) x[i] = (i % 11) * 0.5f - 2.0f;",
        "axpb(x.data(), y.data(), a, n)", "y", "BLOCK_THREADS", "{ THREADS = BLOCK_THREADS }"),
}


def _program(source: str, env: dict[str, int], grid: list[int], block: list[int],
             case: Case) -> str:
    dims = lambda d: "{" + ", ".join(str(v) for v in [*d, 1, 1][:3]) + "}"  # noqa: E731
    scalars = "".join(f"const int {k} = {v};" for k, v in env.items())
    return (COOPERATIVE_BLOCK + source + "\nint main() {" + scalars + case.setup +
            f"wb_launch({dims(grid)}, {dims(block)}, [&] {{ {case.call}; }});"
            f'for (float v : {case.output}) std::printf("%a\\n", v); return 0; }}\n')


def _lift(case: Case) -> Any:
    kernel = parse_cuda(case.source).kernel(None)
    scalars = {p.name: p.name for p in kernel.params if p.is_scalar}
    return lift_kernel(case.source, entry=kernel.name, grid=list(case.grid),
                       block=list(case.block), scalars=scalars)


@pytest.mark.parametrize("name", sorted(CASES))
def test_member_spellings_lift_and_keep_the_author_spelling(name: str) -> None:
    case = CASES[name]
    lifted = _lift(case)
    assert case.lifts in {p.name for p in lifted.params}, lifted.notes
    assert case.definition in lifted.source, lifted.notes
    body = lifted.source[lifted.source.index('extern "C"'):]
    written = case.source[case.source.index('extern "C"'):]
    qualified = re.compile(r"\w+\s*::\s*\w+")
    # the uses keep the author's names (a vectorized loop's stride is rebuilt from the knob)
    assert set(qualified.findall(body)) == set(qualified.findall(written))
    assert "__" not in re.sub(r"__\w+__|__syncthreads|__shared__|__global__", "",
                              lifted.source.split("#endif")[-1])


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(CASES))
def test_member_spellings_compute_the_kernel_as_written_on_the_host(name: str) -> None:
    case = CASES[name]
    lifted = _lift(case)
    template = lifted_template(lifted, parse_cuda(case.source).kernel(None).name)
    env = dict(case.env)
    written_grid = [int(parse_expr(g).evaluate(env)) for g in case.grid]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        expected = run_on_host(work, "written", _program(
            case.source, env, written_grid, [int(b) for b in case.block], case))
        configs = [dict(template.default_config()), *end_configs(template, env)]
        assert len(configs) > 2
        for i, config in enumerate(host_sample(configs)):
            launch = template.launch_for(config, env)
            defines = "".join(f"#define {k} {v}\n" for k, v in config.items())
            got = run_on_host(work, f"cfg{i}", _program(
                defines + lifted.source, env, list(launch.grid), list(launch.block), case))
            assert got == expected, config
