"""First contact with held-back set 18's namespaced templates (issue 28):
benchmarks/corpus_compute_unseen18/besselj0_miller_f64 calls ``bessel::j0_miller<60>(x[i])``
and haversine_nearest ``geo::nearest_body<geo::BLOCK>(..)``, ``BLOCK`` an enumerator
(``enum { BLOCK = 256 };``) in the namespace. The inliner read neither call (a qualified
callee), so the families saw a kernel with no work (haversine: nothing lifted; bessel: only
the block and items over the call). workbench/templater/inline_namespaces.py opens the file's
namespaces into its scope before the inliner (qualifiers and aliases dropped where no name
is then found twice), an unscoped enumerator binds a template parameter by name like a
``constexpr int`` (inline_bind.int_constants), and a file-scope enumerator's definition reads
the parameter its uses were lifted to (macros.file_constant_values), as a ``constexpr int``'s
does: the block lift's ``BLOCK_THREADS`` resized the tile while the walk kept stepping by
``BLOCK`` = 256 before that.
A shared tile tied to a square block whose loop sums over the tile's whole extent with no
loop walking tiles (set 18's dct8x8_blocks, opened the same way) is a transform's size, not
a tile's: smem_tiles keeps its block (its TILE 16 would compute a 16-point DCT).
Pure: both folders and a second spelling of each (two int template parameters, a namespace
alias, a nested namespace's ``constexpr int``, a struct's ``static constexpr`` member as the
argument) inline and lift; names found twice once opened, or a qualified name a local
shadows, keep the file as written with the line. Host (g++): each lift at its default and a
mix bit for bit against the kernel as written (the all-ends corners too under
WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen18
import pytest
from held_back_harness import prepended, respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.cuda_source import parse_cuda
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.analysis import integer_macros as reading_macros
from workbench.templater.inline_namespaces import open_namespaces
from workbench.templater.macros import integer_macros
from workbench.templater.plan import Plan
from workbench.templater.semantic import lift_kernel
from workbench.templater.smem_tiles import lift_tied_tiles

BESSEL = held_back_unseen18.SET.root / "besselj0_miller_f64"
HAVERSINE = held_back_unseen18.SET.root / "haversine_nearest"


#: The recurrence by another hand: the order a struct's static constexpr member, a template
#: of two ints (the order and the rescale's exponent), a nested namespace reached through an
#: alias, a ``for`` counting down, the parity by a bit test.
BESSEL_SPELLING = """namespace special {
namespace miller {
struct Order { static constexpr int kStart = 60; };
template <int START, int SCALE_EXP>
__device__ double j0(double v) {
  double above = 0.0, here = 1.0e-30, evens = 0.0;
  for (int m = START; m > 0; m--) {
    const double below = 2.0 * m / v * here - above;
    above = here;
    here = below;
    if ((m - 1) > 0 && ((m - 1) & 1) == 0) evens += here;
    if (fabs(here) > 1.0e60) {
      here *= 1.0e-60;
      above *= 1.0e-60;
      evens *= 1.0e-60;
    }
  }
  return here / (here + 2.0 * evens);
}
}  // namespace miller
}  // namespace special
namespace sm = special::miller;

extern "C" __global__ void besselj0_miller_f64(float* __restrict__ out,
                                               const float* __restrict__ x, int n) {
  const int t = threadIdx.x + blockDim.x * blockIdx.x;
  if (t >= n) return;
  out[t] = (float)sm::j0<sm::Order::kStart, 60>(x[t]);
}
"""

#: The nearest neighbour by another hand: the block a namespace's ``constexpr int`` in a
#: nested namespace, the body a template of two ints (the tile and the floats a point),
#: called through an alias after ``using namespace``, the distance helper named otherwise,
#: the running min with its term first.
HAVERSINE_SPELLING = """namespace sphere {
namespace cfg { constexpr int kThreads = 256; }
__device__ inline float arc(float p1, float l1, float cp1, float p2, float l2, float cp2) {
  const float a = sinf(0.5f * (p2 - p1));
  const float b = sinf(0.5f * (l2 - l1));
  const float h = a * a + cp1 * cp2 * b * b;
  return 2.0f * asinf(sqrtf(h < 1.0f ? h : 1.0f));
}
template <int T, int STRIDE>
__device__ void closest(float* out, const float* a, const float* b, int na, int nb) {
  __shared__ float phi[T];
  __shared__ float lam[T];
  __shared__ float cph[T];
  const int tid = threadIdx.x;
  const int p = T * blockIdx.x + tid;
  const float myphi = p < na ? a[STRIDE * p] : 0.0f;
  const float mylam = p < na ? a[STRIDE * p + 1] : 0.0f;
  const float mycos = cosf(myphi);
  float d = 4.0f;
  for (int base = 0; base < nb; base += T) {
    if (base + tid < nb) {
      phi[tid] = b[STRIDE * (base + tid)];
      lam[tid] = b[STRIDE * (base + tid) + 1];
      cph[tid] = cosf(phi[tid]);
    }
    __syncthreads();
    const int m = T < nb - base ? T : nb - base;
    for (int q = 0; q < m; q++) d = fminf(arc(myphi, mylam, mycos, phi[q], lam[q], cph[q]), d);
    __syncthreads();
  }
  if (p < na) out[p] = d;
}
}  // namespace sphere
using namespace sphere;
namespace S = sphere;

extern "C" __global__ void haversine_nearest(float* out, const float* a, const float* b, int na,
                                             int nb) {
  S::closest<S::cfg::kThreads, 2>(out, a, b, na, nb);
}
"""

#: Knob mixes over the default, in the lifts' knobs: four items over 96 threads, the
#: branch as selects, the reciprocal of x (3001 over 384: eight blocks, the last partly);
#: two points a thread over 64 threads, two rows a block splitting each staged tile of 64,
#: the walk unrolled by 4 (300 of a over three blocks, the last partly; 333 of b over six
#: tiles, three rounds, the last tile partial).
BESSEL_MIXES = [{"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 4, "BRANCHLESS": 1, "DIV_RCP": 1}]
HAVERSINE_MIXES = [{"BLOCK_THREADS": 64, "ITEMS": 2, "JSPLIT": 2, "UNROLL": 4}]


def _notes(folder: KernelFolder) -> tuple[list[str], tuple[str, ...], str]:
    lifted = offline_template(folder).lifted
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_bessel_folder_inlines_its_namespaced_template() -> None:
    names, notes, source = _notes(load_kernel_folder(BESSEL))
    assert {"BLOCK_THREADS", "ITEMS_PER_THREAD", "BRANCHLESS", "DIV_RCP"} <= set(names), notes
    assert "WB_DRCP(2.0 * k, j0_miller_x[wb_it])" in source
    assert notes[0] == ("NAMESPACE: applied: namespace(s) bessel opened into the file scope: "
                        "1 qualified use(s) read by their names (line 7)")
    assert notes[1].startswith("INLINE: applied: j0_miller<60> inlined into besselj0_miller_f64")
    assert "bessel::" not in source and "namespace bessel {" not in source


def test_the_haversine_folder_follows_its_enumerator() -> None:
    names, notes, source = _notes(load_kernel_folder(HAVERSINE))
    assert {"BLOCK_THREADS", "ITEMS", "JSPLIT", "UNROLL"} <= set(names), notes
    assert "enum { BLOCK = BLOCK_THREADS };" in source
    assert "BLOCK: applied: BLOCK = 256 is BLOCK_THREADS: its definition now reads " \
        "BLOCK_THREADS, so its 7 use(s) follow (line 9)" in notes
    body = source.split("extern \"C\"", 1)[1]
    assert "256" not in body and "wb_rows_lat_s[BLOCK * JSPLIT]" in body
    assert "const int count = nb - start < BLOCK ? nb - start : BLOCK;" in body
    # the nearest so far, a min: the rows' partials combine by the same fminf
    assert "best[wb_u] = fminf(best[wb_u], wb_part_best[wb_u * BLOCK_THREADS + threadIdx.x]);" \
        in body


def test_the_spellings_inline_and_lift(tmp_path: Path) -> None:
    names, notes, source = _notes(respelled(BESSEL, tmp_path / "b", BESSEL_SPELLING))
    assert {"ITEMS_PER_THREAD", "BRANCHLESS", "DIV_RCP"} <= set(names), notes
    assert "WB_DRCP(2.0 * m, v[wb_it])" in source
    assert any(n.startswith("INLINE: applied: j0<Order::kStart, 60> inlined") for n in notes), \
        notes
    assert "sm::" not in source and "special::" not in source
    names, notes, source = _notes(respelled(HAVERSINE, tmp_path / "h", HAVERSINE_SPELLING))
    assert {"BLOCK_THREADS", "ITEMS", "JSPLIT"} <= set(names), notes
    assert "constexpr int kThreads = BLOCK_THREADS;" in source
    assert "S::" not in source and "using namespace" not in source


def test_a_name_found_twice_keeps_the_namespaces() -> None:
    """``geo::f`` beside a file-scope ``f``: opened, one would hide the other."""
    source = ("__device__ int f(int a) { return a; }\n"
              "namespace geo {\n"
              "__device__ int f(int a) { return 2 * a; }\n"
              "}\n"
              "extern \"C\" __global__ void k(int* o) { o[0] = geo::f(1) + f(1); }\n")
    text, findings = open_namespaces(source, "k", "k.cu")
    assert text == source
    assert [str(f) for f in findings] == [
        "NAMESPACE: not applied: the file's namespaces are not opened: f is declared in the "
        "file scope and again in namespace geo: opened, one would hide the other (line 3)"]


def test_a_shadowed_qualified_name_keeps_the_namespaces() -> None:
    """``cfg::N`` read where a local ``N`` is declared: unqualified, it would read the local."""
    source = ("namespace cfg {\n"
              "constexpr int N = 4;\n"
              "__device__ int twice(int v) { return 2 * v; }\n"
              "}\n"
              "extern \"C\" __global__ void k(int* o) {\n"
              "  const int N = 2;\n"
              "  o[0] = cfg::twice(cfg::N) * N;\n"
              "}\n")
    text, findings = open_namespaces(source, "k", "k.cu")
    assert text == source
    assert [str(f) for f in findings] == [
        "NAMESPACE: not applied: the file's namespaces are not opened: `cfg::N` is read "
        "where N is declared again: unqualified, it would read that one (line 7)"]
    assert open_namespaces(source.replace("const int N = 2;", "const int M = 2;").replace(
        "* N;", "* M;"), "k", "k.cu")[0].count("cfg") == 0


def test_a_min_also_summed_keeps_one_row() -> None:
    """A running value the walk both mins and adds to: the rows' partials would combine by
    neither, so JSPLIT (and the items it carries) is refused with the line."""
    source = HAVERSINE_SPELLING.replace(
        "cph[q]), d);", "cph[q]), d);\n    for (int q = 0; q < m; q++) d += phi[q];")
    lifted = lift_kernel(source, entry="haversine_nearest", grid=["ceil_div(na, 256)"],
                         block=["256"], scalars={"na": "na", "nb": "nb"})
    assert "JSPLIT" not in {p.name for p in lifted.params}
    assert "JSPLIT: not applied: `d += phi[q]` updates d by +, and the walk elsewhere by " \
        "fminf (line 29)" in lifted.notes, lifted.notes


#: A row sum over a 16 x 16 shared tile: ``N`` sizes the block, the grid and the tile, and
#: the sum runs over all ``N`` of a row with no loop walking tiles (the shape of set 18's
#: dct8x8_blocks, opened and inlined: ``k < N`` over ``pix[ty][k] * ctab[tx][k]``).
ROW_SUM = """#define N 16
extern "C" __global__ void k(float* out, const float* in, int W) {
  __shared__ float t[N][N];
  const int at = (blockIdx.y * N + threadIdx.y) * W + blockIdx.x * N + threadIdx.x;
  t[threadIdx.y][threadIdx.x] = in[at];
  __syncthreads();
  float s = 0.0f;
  for (int j = 0; j < N; ++j) s += t[threadIdx.y][j];
  out[at] = s;
}
"""


def _tied_tiles(source: str) -> Plan:
    parsed = parse_cuda(source, "k.cu")
    plan = Plan(parsed, parsed.kernel("k"), grid=["ceil_div(W, 16)", "ceil_div(H, 16)"],
                block=["16", "16"], scalars={"W": "W", "H": "H"})
    macros = integer_macros(parsed)
    with reading_macros({m.name: m.value for m in macros.values()}):
        assert lift_tied_tiles(plan)
    return plan


def test_a_sum_over_the_whole_tile_keeps_the_block() -> None:
    """``N`` is what each output sums, not a tile size: a TILE of 8 would sum 8 (the
    shared-tile family lifted TILE 8/16/32 here before)."""
    plan = _tied_tiles(ROW_SUM)
    assert not plan.params
    assert [str(f) for f in plan.findings if f.transform == "BLOCK_X"] == [
        "BLOCK_X: not applied: `j < N`: the loop sums over the whole extent N and no loop "
        "around it walks tiles, so N is what is summed, not a tile size: the block size is "
        "kept as written (line 8)"]


def test_a_sum_inside_a_tile_walk_still_lifts() -> None:
    """The same sum inside a loop over the row's tiles (``for (c0 ..; c0 += N)``) is one
    tile's share of the row: the tile lifts."""
    walked = ROW_SUM.replace(
        "  t[threadIdx.y][threadIdx.x] = in[at];\n  __syncthreads();\n  float s = 0.0f;\n"
        "  for (int j = 0; j < N; ++j) s += t[threadIdx.y][j];\n",
        "  float s = 0.0f;\n"
        "  for (int c0 = 0; c0 < W; c0 += N) {\n"
        "    t[threadIdx.y][threadIdx.x] = in[(blockIdx.y * N + threadIdx.y) * W + c0 + "
        "threadIdx.x];\n"
        "    __syncthreads();\n"
        "    for (int j = 0; j < N; ++j) s += t[threadIdx.y][j];\n"
        "    __syncthreads();\n"
        "  }\n")
    assert walked != ROW_SUM
    assert "TILE" in _tied_tiles(walked).params


#: Host forms of the fast intrinsics FAST_MATH writes (the host runs the libm calls: the
#: GPU gate checks the approximations against the folder's tolerance).
HOST_SOURCE = prepended("#define __sinf(v) sinf(v)\n#define __cosf(v) cosf(v)\n")


def _same_outputs(kf: KernelFolder, mixes: list[dict[str, Any]], tmp_path: Path,
                  flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, mixes)
    if not FULL_MATRIX:  # the default and the mix (the all-ends corners: slow)
        configs = configs[:2]
    return same_as_written(kf, template, configs, HOST_SOURCE, tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("which", ["folder", "spelling"])
def test_the_bessel_lift_computes_as_written(which: str, tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(BESSEL) if which == "folder" else \
        respelled(BESSEL, tmp_path / "folders", BESSEL_SPELLING)
    assert _same_outputs(kf, BESSEL_MIXES, tmp_path, host_flags) >= 2


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("which", ["folder", "spelling"])
def test_the_haversine_lift_computes_as_written(which: str, tmp_path: Path,
                                                host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(HAVERSINE) if which == "folder" else \
        respelled(HAVERSINE, tmp_path / "folders", HAVERSINE_SPELLING)
    assert _same_outputs(kf, HAVERSINE_MIXES, tmp_path, host_flags) >= 2
