"""Per-element kernels over a table with a cutoff branch that calls ``__device__`` helpers
of the same file, as different people write them. A helper whose body the analysis proves
pure (:mod:`workbench.templater.purity`: value parameters, scalar locals, constant
macros, pure calls; no loop, memory access, pointer, integer division by a variable) may
run on the side of the ``if`` not taken (BRANCHLESS) and for an item past the end (items
per thread without a ``live`` test); a load from a ``__constant__`` table at an index the
loops bound inside it (:mod:`workbench.templater.bounds`) cannot fault there either.
Each lifted template runs on the host (g++, every thread in turn) at its default, its
corners and ITEMS_PER_THREAD 2 / 4 with BRANCHLESS and UNROLL at their largest, and must
print what the kernel as written prints. Helpers and loads the analysis cannot prove safe
are refused naming the line and what is missing.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import COOPERATIVE_BLOCK, corner_configs, lifted_template, run_on_host

from workbench.core.cuda_source import parse_cuda
from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.purity import device_purity

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

N = 777  # no multiple of any block * items: the last block has items past the end

# name -> (source, grid, block, arguments in order): "in" a float input of 3N, "out" a
# float output of N, "n" the count, "const:SYM:K" a __constant__ array of K floats.
KERNELS: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    # flat index into the table, a helper calling a helper, guarded macro defaults,
    # blockDim in the index, an if/else whose sides both call helpers
    "morse_flat_index_if_else": ("""
#ifndef NSITE
#define NSITE 40
#endif
#ifndef CUT2
#define CUT2 1.0f
#endif
__constant__ float site[NSITE * 4];  // x, y, depth, width

__device__ __forceinline__ float decay(float r, float a) { return __expf(-a * r); }
__device__ float morse(float r, float d, float a) {
  const float t = 1.0f - decay(r, a);
  return d * t * t - d;
}

extern "C" __global__ void k(float* out, const float* xy, int n) {
  const int p = blockDim.x * blockIdx.x + threadIdx.x;
  if (p < n) {
    const float px = xy[2 * p], py = xy[2 * p + 1];
    float u = 0.0f;
    for (int j = 0; j < NSITE; j++) {
      const float ddx = px - site[4 * j];
      const float ddy = py - site[4 * j + 1];
      const float rr = ddx * ddx + ddy * ddy;
      if (rr < CUT2) {
        u += morse(sqrtf(rr), site[4 * j + 2], site[4 * j + 3]);
      } else {
        u -= 0.001f * decay(rr, site[4 * j + 3]);
      }
    }
    out[p] = u;
  }
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "n", "const:site:160"]),
    # a pointer row into the table (table + 3 * c), literal block, early return, a
    # brace-less cutoff `if`, `inline __device__` helper with a local and a float division
    "gauss_pointer_row_braceless": ("""
#define NC 24
__constant__ float centers[NC * 3];

inline __device__ float bump(float d2, float w) {
  float s = w * w;
  return w * expf(-d2 / s);
}

extern "C" __global__ void k(float* dens, const float* pts, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  float x = pts[3 * i], y = pts[3 * i + 1], z = pts[3 * i + 2];
  float acc = 0.0f;
  for (int c = 0; c < NC; ++c) {
    const float* ctr = centers + 3 * c;
    float dx = x - ctr[0], dy = y - ctr[1];
    float d2 = dx * dx + dy * dy;
    if (d2 <= 2.25f)
      acc += bump(d2, ctr[2]) * z;
  }
  dens[i] = acc;
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "n", "const:centers:72"]),
    # two tables (two __constant__ arrays, one read at an offset), row/col names from a
    # 1-D launch, a shifted potential whose shift is a helper of table terms only
    "shifted_pair_two_tables": ("""
#define M 32
#define RC 1.5f
__constant__ float pos_tab[2 * M];
__constant__ float coef_tab[M];

__device__ float soft_inv6(float r2, float s) {
  float inv = s / (r2 + 0.05f);
  float inv3 = inv * inv * inv;
  return inv3 * inv3;
}

extern "C" __global__ void k(float* energy, const float* loc, int n) {
  int row = threadIdx.x + 64 * blockIdx.x;
  if (row >= n) return;
  float ax = loc[row];
  float ay = loc[n + row];
  float total = 0.0f;
  #pragma unroll 1
  for (int col = 0; col < M; col += 1) {
    float bx = ax - pos_tab[col];
    float by = ay - pos_tab[M + col];
    float r2 = bx * bx + by * by;
    if (r2 < RC * RC) {
      float shift = soft_inv6(RC * RC, coef_tab[col]);
      total += soft_inv6(r2, coef_tab[col]) - shift;
    }
  }
  energy[row] = total;
}
""", ["ceil_div(n, 64)"], ["64"], ["out", "in", "n", "const:pos_tab:64", "const:coef_tab:32"]),
}

_HOST = r"""
#define __constant__
#define __expf expf
#define __fdividef(a, b) ((a) / (b))
static inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }
"""


def lift(source: str, grid: list[str], block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars={"n": "n"})


def program(source: str, args: list[str], grid: int, block: int) -> str:
    """The kernel, then a main that fills the inputs and constants (fixed values), runs every
    thread of the launch in turn and prints the outputs."""
    lines = ["int main() {"]
    call = []
    for k, a in enumerate(args):
        if a.startswith("const:"):
            _, sym, size = a.split(":")
            lines.append(f"  for (int j = 0; j < {size}; ++j) {sym}[j] = "
                         f"(float)((j * 7 + 3) % 11) / 8.0f - 0.4f + 0.02f * j;")
        elif a in ("in", "out"):
            lines.append(f"  std::vector<float> a{k}({3 * N}, -7.0f);")
            if a == "in":
                lines.append(f"  for (int j = 0; j < {3 * N}; ++j) a{k}[j] = "
                             f"(float)((j * {37 + 2 * k}) % 101) / 30.0f - 1.4f;")
            call.append(f"a{k}.data()")
        else:
            call.append(str(N))
    # the threads of a block as coroutines: a per-block table (TABLE) meets at a barrier
    lines.append(f"  wb_launch({{{grid}u, 1u, 1u}}, {{{block}u, 1u, 1u}}, [&] {{ "
                 f"k({', '.join(call)}); }});")
    for k, a in enumerate(args):
        if a == "out":
            lines.append(f"  for (int j = 0; j < {N}; ++j) std::printf(\"%.9g\\n\", "
                         f"(double)a{k}[j]);")
    lines += ["  return 0;", "}"]
    return COOPERATIVE_BLOCK + _HOST + source + "\n" + "\n".join(lines) + "\n"


def run(template: KernelTemplate, config: dict[str, Any], args: list[str], work: Path,
        tag: str) -> list[str]:
    launch = template.launch_for(config, {"n": N})
    source = template.render(config, "fp32").source if template.params else template.source
    return run_on_host(work, tag, program(source, args, launch.grid[0],
                                          launch.block[0])).split()


def checked_configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The default, the corners, and 2 and 4 items with every other knob at its largest."""
    configs = corner_configs(template, {"n": N})
    top = {p.name: p.values()[-1] for p in template.params
           if p.name in ("UNROLL", "BRANCHLESS")}
    for items in (2, 4):
        configs.append({**template.default_config(), **top, "ITEMS_PER_THREAD": items})
    space = template.space({"n": N})
    return [c for c in configs if space.rejection(c) is None]


@pytest.mark.slow  # 9 to 13 s each on the shared 2-core machine (six g++ host runs)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_pure_helpers_convert_and_every_checked_config_matches(name: str) -> None:
    source, grid, block, args = KERNELS[name]
    lifted = lift(source, grid, block)
    params = {p.name for p in lifted.params}
    assert {"ITEMS_PER_THREAD", "BRANCHLESS"} <= params, lifted.notes
    # the loop body runs unguarded for items past the end: only the item's own loads and
    # its store test `live` (the helpers and the in-bounds table loads are safe for it)
    assert lifted.source.count("if (wb_live[wb_it])") == 2, lifted.source
    written = KernelTemplate.build(name="k", source=source, entry="k", grid=grid, block=block)
    template = lifted_template(lifted)
    configs = checked_configs(template)
    assert any(c.get("BRANCHLESS") == 1 and c.get("ITEMS_PER_THREAD") == 4 for c in configs)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = run(written, {}, args, work, "written")
        assert len(want) == N and "-7" not in want
        for k, config in enumerate(configs):
            got = run(template, config, args, work, f"c{k}")
            if config.get("FAST_MATH"):  # rsqrtf and multiplies: a few ulp off
                assert [float(v) for v in got] == pytest.approx(
                    [float(v) for v in want], rel=1e-4, abs=1e-6), config
            else:
                assert got == want, config


HELPERS = """
#define SCALE 3
__device__ float g_seen;
__device__ float pure_a(float x, float y) { float t = x * y; return fminf(t, 0.0f) / (y + 1.0f); }
__device__ float pure_b(float x) { return pure_a(x, 2.0f) + x / SCALE; }
__device__ float loops(float x) { float s = 0.0f; for (int k = 0; k < 4; ++k) s += x; return s; }
__device__ float writes(float x) { g_seen = x; return x; }
__device__ float reads_pointer(const float* p) { return p[0]; }
__device__ int int_div(int a, int b) { return a / b; }
__device__ float recursive(float x) { return x > 1.0f ? recursive(x * 0.5f) : x; }
__device__ float calls_impure(float x) { return writes(x) + 1.0f; }
__device__ float reads_global(float x) { return x * g_seen; }
__device__ float overloaded(float x) { return x; }
__device__ float overloaded(float x, float y) { g_seen = y; return x; }
__device__ float fmaxf(float a, float b) { g_seen = a; return a > b ? a : b; }
__device__ float calls_own_fmaxf(float x) { return fmaxf(x, 0.0f); }
"""


def test_purity_proves_pure_helpers_and_names_what_the_others_do() -> None:
    verdict = device_purity(parse_cuda(HELPERS + 'extern "C" __global__ void k() {}\n', "h.cu"))
    assert verdict["pure_a"] is None and verdict["pure_b"] is None
    expected = {"loops": "a loop", "writes": "`g_seen = x` writes outside its locals",
                "reads_pointer": "parameter `const float* p` is not a value",
                "int_div": "`a / b` may divide an integer by zero",
                "recursive": "it calls `recursive`, not shown pure",
                "calls_impure": "it calls `writes`, not shown pure",
                "reads_global": "it reads `g_seen`",
                "overloaded": "defined more than once",
                # the file's own fmaxf is what its calls reach, not the math function
                "calls_own_fmaxf": "it calls `fmaxf`, not shown pure"}
    for name, why in expected.items():
        found = verdict[name]
        assert found is not None and why in found, (name, found)
        assert "(line " in found


REFUSED = {
    # the helper writes memory: running it on the side not taken would be seen
    "impure_helper": ("__device__ float hits;\n"
                      "__device__ float count_hit(float v) { hits += 1.0f; return v; }\n",
                      "      acc += count_hit(tab[j]);\n",
                      "`count_hit`, a __device__ function whose body is not pure"),
    # one past the table's end: j + 1 reaches NT (bounds cannot show it inside)
    "load_past_the_table": ("", "      acc += tab[j + 1];\n",
                            "a side loads `tab[j + 1]`, which is not loaded"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unprovable_helpers_and_loads_are_refused_with_the_line(name: str) -> None:
    helper, statement, why = REFUSED[name]
    source = ("#define NT 16\n__constant__ float tab[NT];\n" + helper +
              'extern "C" __global__ void k(float* out, const float* x, int n) {\n'
              "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
              "  float v = x[i], acc = 0.0f;\n  for (int j = 0; j < NT; ++j) {\n"
              "    float d = v - tab[j];\n    if (d * d < 0.5f) {\n" + statement +
              "    }\n  }\n  out[i] = acc;\n}\n")
    lifted = lift(source, ["ceil_div(n, 128)"], ["128"])
    assert "BRANCHLESS" not in {p.name for p in lifted.params}
    found = [str(f) for f in lifted.findings if f.transform == "BRANCHLESS"]
    assert found and why in found[0], found
    if_line = source.splitlines().index("    if (d * d < 0.5f) {") + 1
    call_line = if_line + 1
    assert f"(line {call_line})" in found[0], found
    items = [str(f) for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"]
    if name == "impure_helper":
        # its write would run in another order once items interleave: no interleaved items
        # (items by wrapping, one after another as threads run them, remain)
        assert "wb_it]" not in lifted.source
        assert items and "calls `count_hit`, a __device__ function whose body is not pure" \
            in items[0] and f"(line {call_line})" in items[0], items
    else:  # items still lift; the unprovable statement keeps its `live` test
        assert "ITEMS_PER_THREAD" in {p.name for p in lifted.params}
        loop = lifted.source[lifted.source.index("for (int j"):]
        assert "if (wb_live[wb_it])" in loop.split("out[i")[0]


def test_an_impure_helper_in_a_statement_shared_by_the_items_refuses_items() -> None:
    """A call made once per item as written, with no item-dependent argument, would run once
    per thread under interleaved items: refused with the line (items by wrapping, one
    whole item after another, remain)."""
    source = ("#define NT 8\n__constant__ float tab[NT];\n__device__ int trips;\n"
              "__device__ float tick(float w) { trips = trips + 1; return w; }\n"
              'extern "C" __global__ void k(float* out, const float* x, int n) {\n'
              "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
              "  float v = x[i], acc = 0.0f;\n  for (int j = 0; j < NT; ++j) {\n"
              "    float w = tick(tab[j]);\n    acc += v * w;\n  }\n  out[i] = acc;\n}\n")
    lifted = lift(source, ["ceil_div(n, 128)"], ["128"])
    assert "wb_it]" not in lifted.source
    found = [str(f) for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"]
    assert found and "`tick`, a __device__ function whose body is not pure: `trips = trips " \
        "+ 1` writes outside its locals" in found[0] and "(line 10)" in found[0], found


BOUNDS = {
    # (table declaration, loop header, the side's statements, converts?)
    "pointer_row_address_of": ("__constant__ float tab[NT * 3];",
                               "for (int j = 0; j < NT; ++j)",
                               "const float* p = &tab[3 * j]; acc += p[2];", True),
    "pointer_row_past_the_end": ("__constant__ float tab[NT * 3];",
                                 "for (int j = 0; j < NT; ++j)",
                                 "const float* p = tab + 3 * j; acc += p[3];", False),
    "one_based_counter": ("__constant__ float tab[NT];", "for (int j = 1; j <= NT; j++)",
                          "acc += tab[j - 1];", True),
    "counted_down_unknown": ("__constant__ float tab[NT];",
                             "for (int j = NT - 1; j >= 0; --j)", "acc += tab[j];", False),
    "device_global_table": ("__device__ float tab[2 * NT];", "for (int j = 0; j < NT; ++j)",
                            "acc += tab[NT + j] * tab[2 * j + 1];", True),
    "table_argument": ("", "for (int j = 0; j < NT; ++j)", "acc += w[j];", False),
}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_side_loads_convert_only_where_bounds_show_them_inside_the_table(name: str) -> None:
    """A load made only on one side converts when the loops bound its index inside a
    file-scope device table (pointer rows, offsets, one-based counters); past the end, a
    counter whose range it cannot read, or a pointer argument: refused, naming the load."""
    table, loop, side, converts = BOUNDS[name]
    source = ("#define NT 16\n" + table + "\n"
              'extern "C" __global__ void k(float* out, const float* x, const float* w, '
              "int n) {\n  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
              "  float v = x[i], acc = 0.0f;\n  " + loop + " {\n"
              "    if (v > 0.5f) { " + side + " }\n  }\n  out[i] = acc;\n}\n")
    lifted = lift(source, ["ceil_div(n, 128)"], ["128"])
    found = [str(f) for f in lifted.findings if f.transform == "BRANCHLESS"]
    assert ("BRANCHLESS" in {p.name for p in lifted.params}) == converts, found
    if not converts:
        assert found and "which is not loaded unconditionally before the `if`" in found[0] \
            and "(line 8)" in found[0], found  # the line of the load
