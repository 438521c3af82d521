"""Items per thread with independent state (ILP) on compute-bound per-element kernels,
written as different people write them: Horner evaluation against ``__constant__``
coefficients, a Newton iteration with a branch, a nearest-point search over a table (a
kernel argument, or ``__constant__`` through a pointer), an escape-time (Mandelbrot) loop
with a data-dependent trip count. Each lifted template runs on the host (g++, every thread
of the launch in turn) at its default and its corner configs, and must print exactly what
the kernel as written prints; spellings the analysis cannot prove legal are refused naming
the line. Also: the per-item ``live`` test is left out of statements that are safe for an
item past the end (straight-line, shared table loads), kept where they are not.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    corner_configs,
    host_sample,
    lifted_template,
    run_on_host,
)

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")]

N = 1000  # not a multiple of any block * items: the last block has items past the end
ENV = {"n": N, "count": N, "m": 37, "maxit": 50}

# name -> (source, grid, block, arguments in order); kinds: "in" a
# float input of 2N, "out"/"iout" a float/int output of N, a scalar name, or "const:SYM:K"
# a __constant__ array SYM of K floats (filled, not passed).
KERNELS: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    "horner_macro_descending": ("""
#define DEG 12
__constant__ float coef[DEG + 1];
extern "C" __global__ void k(float* out, const float* x, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float r = coef[DEG];
  for (int d = DEG - 1; d >= 0; --d)
    r = r * v + coef[d];
  out[i] = r;
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "n", "const:coef:13"]),
    "horner_guarded_fma_blockdim": ("""
#ifndef ORDER
#define ORDER 9
#endif
__constant__ float c[ORDER];
extern "C" __global__ void k(float* y, const float* x, int count) {
  const int gid = blockDim.x * blockIdx.x + threadIdx.x;
  if (gid < count) {
    const float t = x[gid];
    float acc = 0.0f;
    #pragma unroll 3
    for (int j = 0; j < ORDER; j++) {
      acc = fmaf(acc, t, c[j]);
    }
    y[gid] = acc;
  }
}
""", ["(count + 255) // 256"], ["256"], ["out", "in", "count", "const:c:9"]),
    "newton_if_else": ("""
__constant__ float params[2];
extern "C" __global__ void k(float* root, const float* a, int n) {
  int idx = threadIdx.x + blockIdx.x * 64;
  if (idx >= n) return;
  float target = a[idx];
  float y = target > 1.0f ? target : 1.0f;
  for (int step = 0; step < 20; ++step) {
    float f = y * y * y - target * params[0];
    float df = 3.0f * y * y + params[1];
    if (fabsf(df) > 1e-12f)
      y = y - f / df;
    else
      y = y * 0.5f;
  }
  root[idx] = y;
}
""", ["ceil_div(n, 64)"], ["64"], ["out", "in", "n", "const:params:2"]),
    "newton_while_counter": ("""
extern "C" __global__ void k(float* out, const float* in, const float* scale, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) {
    float s = in[i] * in[i];
    float g = 1.0f;
    int it = 0;
    while (it < 16) {
      if (g > 0.0f) { g = 0.5f * (g + s / g); } else { g = 1.0f; }
      it++;
    }
    out[i] = g * scale[0];
  }
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "in", "n"]),
    "nearest_table_argument": ("""
extern "C" __global__ void k(float* dmin, const float* px, const float* py,
                             const float* tx, const float* ty, int n, int m) {
  int p = blockIdx.x * 256 + threadIdx.x;
  if (p >= n) return;
  float x = px[p], y = py[p];
  float best = 3.4e38f;
  int arg = -1;
  for (int j = 0; j < m; ++j) {
    float dx = x - tx[j];
    float dy = y - ty[j];
    float d2 = dx * dx + dy * dy;
    if (d2 < best) { best = d2; arg = j; }
  }
  dmin[p] = sqrtf(best) + (float)arg;
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "in", "in", "in", "n", "m"]),
    "nearest_constant_pointer": ("""
#define NT 24
__constant__ float table[NT * 3];
extern "C" __global__ void k(float* out, const float* pts, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const float* q = pts + 2 * t;
  float qx = q[0], qy = q[1];
  float d = 1e30f;
  for (int j = 0; j < NT; ++j) {
    const float* e = table + 3 * j;
    d = fminf(d, (qx - e[0]) * (qx - e[0]) + (qy - e[1]) * (qy - e[1]) - e[2]);
  }
  out[t] = d;
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "n", "const:table:72"]),
    "escape_time_while": ("""
#define MAXIT 64
extern "C" __global__ void k(int* iters, const float* cre, const float* cim, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float zr = 0.0f, zi = 0.0f, cr = cre[i], ci = cim[i];
  int it = 0;
  while (it < MAXIT && zr * zr + zi * zi <= 4.0f) {
    float t = zr * zr - zi * zi + cr;
    zi = 2.0f * zr * zi + ci;
    zr = t;
    ++it;
  }
  iters[i] = it;
}
""", ["ceil_div(n, 128)"], ["128"], ["iout", "in", "in", "n"]),
    "escape_time_for_break": ("""
extern "C" __global__ void k(float* out, const float* cx, const float* cy, int n, int maxit) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  float x = 0.0f, y = 0.0f;
  int count = 0;
  for (int it = 0; it < maxit; it++) {
    if (x * x + y * y > 4.0f) break;
    float xn = x * x - y * y + cx[i];
    y = 2.0f * x * y + cy[i];
    x = xn;
    count++;
  }
  out[i] = (float)count;
}
""", ["ceil_div(n, 256)"], ["256"], ["out", "in", "in", "n", "maxit"]),
    "escape_time_break_last_macro": ("""
#define MAX_ITER 80
extern "C" __global__ void k(int* out, const float* re, const float* im, int n) {
  const int tid = threadIdx.x + blockDim.x * blockIdx.x;
  if (tid < n) {
    float a = 0.0f, b = 0.0f;
    const float ca = re[tid], cb = im[tid];
    int n_iter = 0;
    for (int k = 0; k < MAX_ITER; ++k) {
      const float a2 = a * a - b * b + ca;
      b = 2.0f * a * b + cb;
      a = a2;
      n_iter = k + 1;
      if (a * a + b * b > 4.0f) {
        break;
      }
    }
    out[tid] = n_iter;
  }
}
""", ["ceil_div(n, 128)"], ["128"], ["iout", "in", "in", "n"]),
    "escape_time_counter_read_after": ("""
extern "C" __global__ void k(int* out, const float* re, const float* im, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float x = 0.0f, y = 0.0f;
  int it;
  for (it = 0; it < 40; ++it) {
    if (x * x + y * y > 4.0f) break;
    float t = x * x - y * y + re[i];
    y = 2.0f * x * y + im[i];
    x = t;
  }
  out[i] = it;
}
""", ["ceil_div(n, 128)"], ["128"], ["iout", "in", "in", "n"]),
    # a pragma between two loop headers and a chain of comparisons (both misread by the
    # grammar before cuda_source repaired them)
    "pragma_between_loops": ("""
__constant__ float coef[16];
extern "C" __global__ void k(float* out, const float* x, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float v = x[i], acc = 0.0f;
  for (int r = 0; r < 2; ++r)
#pragma unroll 4
    for (int t = 0; t < 16; ++t)
      acc += coef[t] * sinf(v * coef[t] + r);
  out[i] = (acc >= 0 && acc < 4.0f && v >= 0) ? acc : -acc;
}
""", ["ceil_div(n, 128)"], ["128"], ["out", "in", "n", "const:coef:16"]),
}

_HOST = COOPERATIVE_BLOCK + r"""
#define __constant__
#define __expf expf
#define __sinf sinf
#define __cosf cosf
#define __fdividef(a, b) ((a) / (b))
"""


def scalars(args: list[str]) -> dict[str, str]:
    return {a: a for a in args if a in ENV}


def lift(name: str) -> LiftedSource:
    source, grid, block, args = KERNELS[name]
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars=scalars(args))


def program(source: str, args: list[str], grid: int, block: int) -> str:
    """The kernel, then a main that fills the inputs and constants (fixed values), runs the
    launch on the cooperative host block (barriers and shared memory as on the GPU: the
    items' walks may be staged in rounds through shared tiles) and prints the outputs."""
    lines = ["int main() {"]
    call = []
    for k, a in enumerate(args):
        if a.startswith("const:"):
            _, sym, size = a.split(":")
            lines.append(f"  for (int j = 0; j < {size}; ++j) {sym}[j] = "
                         f"(float)((j * 7 + 3) % 11) / 11.0f - 0.3f + 0.05f * j;")
        elif a in ("in", "out", "iout"):
            typ = "int" if a == "iout" else "float"
            lines.append(f"  std::vector<{typ}> a{k}({2 * N}, ({typ})-7);")
            if a == "in":
                lines.append(f"  for (int j = 0; j < {2 * N}; ++j) a{k}[j] = "
                             f"(float)((j * {37 + 2 * k}) % 101) / 40.0f - 1.2f;")
            call.append(f"a{k}.data()")
        else:
            call.append(str(ENV[a]))
    lines.append(f"  wb_launch({{{grid}, 1, 1}}, {{{block}, 1, 1}}, [&] {{ k({', '.join(call)}); }});")
    for k, a in enumerate(args):
        if a in ("out", "iout"):
            lines.append(f"  for (int j = 0; j < {N}; ++j) std::printf(\"%.9g\\n\", "
                         f"(double)a{k}[j]);")
    lines += ["  return 0;", "}"]
    return _HOST + source + "\n" + "\n".join(lines) + "\n"


def run(template: KernelTemplate, config: dict[str, Any], args: list[str], work: Path,
        tag: str) -> list[str]:
    launch = template.launch_for(config, ENV)
    source = template.render(config, "fp32").source if template.params else template.source
    return run_on_host(work, tag, program(source, args, launch.grid[0],
                                          launch.block[0])).split()


def checked_configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The default, the corners, and every item count at its largest other values."""
    configs = corner_configs(template, ENV)
    names = set(template.param_names)
    if "ITEMS_PER_THREAD" in names:
        top = {p.name: p.values()[-1] for p in template.params
               if p.name in ("UNROLL", "BRANCHLESS", "ITEMS_PER_THREAD")}
        for items in (2, 8):
            configs.append({**template.default_config(), **top, "ITEMS_PER_THREAD": items,
                            "BLOCK_THREADS": 96})
    space = template.space(ENV)
    return host_sample([c for c in configs if space.rejection(c) is None])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(name: str) -> None:
    source, grid, block, args = KERNELS[name]
    lifted = lift(name)
    assert "ITEMS_PER_THREAD" in {p.name for p in lifted.params}, lifted.notes
    written = KernelTemplate.build(name="k", source=source, entry="k", grid=grid, block=block)
    template = lifted_template(lifted)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = run(written, {}, args, work, "written")
        assert len(want) == N * sum(a in ("out", "iout") for a in args)
        assert "-7" not in want  # every output written
        for k, config in enumerate(checked_configs(template)):
            assert run(template, config, args, work, f"c{k}") == want, config


# The loops the items interleave in, and the knobs each family gets.
INTERLEAVED = ["horner_macro_descending", "horner_guarded_fma_blockdim", "newton_if_else",
               "newton_while_counter", "nearest_table_argument", "nearest_constant_pointer",
               "pragma_between_loops"]


@pytest.mark.parametrize("name", INTERLEAVED)
def test_compute_loops_interleave_items(name: str) -> None:
    lifted = lift(name)
    applied = [f.reason for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"
               and f.applied]
    assert applied and "interleave the items" in applied[0], lifted.notes
    # only the item's own loads and its store test `live`: the loop body runs unguarded
    assert lifted.source.count("if (wb_live[wb_it])") == 2, lifted.source


def test_branches_in_the_loop_get_branchless() -> None:
    for name in ("newton_if_else", "newton_while_counter", "nearest_table_argument"):
        assert "BRANCHLESS" in {p.name for p in lift(name).params}, name


def test_a_loop_of_known_length_can_be_unrolled_whole() -> None:
    knobs = {p.name: dict(p.spec) for p in lift("newton_if_else").params}
    assert knobs["UNROLL"]["values"] == [0, 1, 2, 4, 8, 20]
    knobs = {p.name: dict(p.spec) for p in lift("nearest_constant_pointer").params}
    assert knobs["UNROLL"]["values"] == [0, 1, 2, 4, 8, 24]
    knobs = {p.name: dict(p.spec) for p in lift("nearest_table_argument").params}
    assert knobs["UNROLL"]["values"] == [0, 1, 2, 4, 8]  # m: known only at run time
    knobs = {p.name: dict(p.spec) for p in lift("horner_macro_descending").params}
    assert knobs["UNROLL"]["values"] == [0, 1, 2, 4, 8]  # 12 trips, counted down: unknown


@pytest.mark.parametrize("name", ["escape_time_for_break", "escape_time_break_last_macro"])
def test_an_escape_time_loop_interleaves_items_until_all_left(name: str) -> None:
    """`if (C) break;` in a loop of item-independent length: each item gets a `done` flag,
    its statements run while it is not done, and the loop ends when every item is done
    (the host runs above check every config against the kernel as written)."""
    lifted = lift(name)
    applied = [f.reason for f in lifted.findings if f.transform == "ITEMS_PER_THREAD"
               and f.applied]
    assert applied and "interleave the items" in applied[0], lifted.notes
    if name == "escape_time_for_break":  # it loads at the item's place: guarded
        assert "wb_done[wb_it] = true; continue;" in lifted.source
    else:  # registers only: straight-line, the state kept by a select (ilp_exits)
        assert "wb_done[wb_it] = wb_done[wb_it] | (bool)(" in lifted.source
        assert "? wb_keep_a : a[wb_it]" in lifted.source, lifted.source
    assert "if (wb_all_done) break;" in lifted.source


def test_an_escape_time_counter_read_after_the_loop_is_per_item() -> None:
    """A counter declared before the loop and read after it: each item keeps its own, and
    the loop becomes one the items share (ilp_loops; refusals: test_templater_ilp_loops)."""
    lifted = lift("escape_time_counter_read_after")
    assert "int it[ITEMS_PER_THREAD]" in lifted.source and "++it[wb_it]" in lifted.source
    # a `while` on the item's state: one `while (true)` the items share, each leaving on
    # its own condition (test_templater_ilp_exits.py)
    lifted = lift("escape_time_while")
    assert "while (true) {" in lifted.source and "| !(" in lifted.source, lifted.source


GUARDED = {
    # a load at a place that depends on the item: it may be past the end for a done item
    "local_array_at_item_place": ("    acc += lut[(int)(v * 3.0f) & 3] * coef[t];\n",
                                  "  float lut[4] = {0.5f, 1.0f, 1.5f, 2.0f};\n"),
    # an integer division by the item's value: zero for a done item
    "integer_division": ("    acc += (float)(t / (1 + (q & 3))) * coef[t];\n", ""),
    # a load under the item's test
    "load_under_item_test": ("    if (v > 0.0f) acc += coef[t];\n", ""),
    # a load on one side of a choice on the item
    "load_under_item_choice": ("    acc += (v > 0.0f && coef[t] > 0.1f) ? coef[t] : 0.5f;\n",
                               ""),
}


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_statements_unsafe_for_a_done_item_keep_the_live_test(name: str) -> None:
    statement, local = GUARDED[name]
    source = ("__constant__ float coef[16];\n"
              'extern "C" __global__ void k(float* out, const float* x, int n) {\n'
              "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
              "  float v = x[i];\n  int q = (int)(v * 10.0f);\n  float acc = 0.0f;\n"
              + local + "  for (int t = 0; t < 16; ++t) {\n" + statement + "  }\n"
              "  out[i] = acc;\n}\n")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    loop = lifted.source[lifted.source.index("t < 16"):]
    assert "if (wb_live[wb_it])" in loop.split("out[i")[0], lifted.source
    template = lifted_template(lifted)
    written = KernelTemplate.build(name="k", source=source, entry="k",
                                   grid=["ceil_div(n, 128)"], block=["128"])
    args = ["out", "in", "n", "const:coef:16"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = run(written, {}, args, work, "written")
        for k, config in enumerate(checked_configs(template)):
            assert run(template, config, args, work, f"c{k}") == want, config


def test_a_pragma_before_a_braceless_loop_stays_with_that_loop() -> None:
    source = lift("pragma_between_loops").source
    assert "{\n#pragma unroll 4\n    for (int t = 0; t < 16; ++t)" in source, source
