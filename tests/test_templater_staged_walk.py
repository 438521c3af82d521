"""The staged walk (issue 28, nbody_accel): statement-bodied helpers written into their calls
(:mod:`workbench.templater.inline_bodies`) and rows of threads splitting the walk of a
staged tile (:mod:`workbench.templater.staged_walk`, JSPLIT).

Pure: the text a call becomes, the lifted knobs and constraints, and every refusal with its
line. Host (g++): spellings other hands write (a ``__device__`` function taking the sums by
reference, a plain inner loop, a tile loaded by a block-stride loop, float2 / float3
records, a potential, a kernel-density sum, a GEMV with x staged, an integer count) compute
at the default, the all-ends configs and mixes what they compute as written, at n = 300 (no
multiple of any tile) and at n below one tile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from held_back_harness import prepended
from helpers_templater import end_configs
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs
from test_templater_const_via import write_folder

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_bodies import expand_bodies
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.records import LiftedSource
from workbench.templater.semantic import lift_kernel

# -- statement-bodied helpers ----------------------------------------------------------------

#: A potential summed by a __device__ helper that takes the thread's sum by reference and its
#: own point under the kernel's name (bound under a fresh one).
HELPER = """\
__device__ void add_pair(float2 me, float2 other, float& phi) {
  const float dx = other.x - me.x;  // a comment the one-line block drops
  const float dy = other.y - me.y;
  phi -= rsqrtf(dx * dx + dy * dy + 0.01f);
}

extern "C" __global__ void k(float* out, const float* raw, int n) {
  const float2* pts = reinterpret_cast<const float2*>(raw);
  __shared__ float2 stage[128];
  const int p = blockIdx.x * 128 + threadIdx.x;
  const float2 me = p < n ? pts[p] : make_float2(0.0f, 0.0f);
  float phi = 0.0f;
  for (int base = 0; base < n; base += 128) {
    for (int t = threadIdx.x; t < 128; t += blockDim.x)
      stage[t] = base + t < n ? pts[base + t] : make_float2(1e9f, 1e9f);
    __syncthreads();
    for (int q = 0; q < 128; ++q) add_pair(me, stage[q], phi);
    __syncthreads();
  }
  if (p < n) out[p] = phi;
}
"""


def _lift(source: str, block: str = "128") -> LiftedSource:
    return lift_kernel(source, entry="k", grid=[f"ceil_div(n, {block})"], block=[block],
                       scalars={"n": "n"})


def test_a_helper_updating_a_sum_by_reference_is_written_into_its_call() -> None:
    written = expand_bodies(InlinedSource(HELPER, "baseline.cu"), "k")
    assert "    for (int q = 0; q < 128; ++q) { float2 wb_me = me; float2 other = stage[q]; " \
        "const float dx = other.x - wb_me.x; const float dy = other.y - wb_me.y; phi -= " \
        "rsqrtf(dx * dx + dy * dy + 0.01f); }\n" in written.text
    assert written.text.count("\n") == HELPER.count("\n")  # every line keeps its number
    assert [str(f) for f in written.findings] == [
        "INLINE_BODY: applied: add_pair (a __device__ function) written into its calls "
        "(lines 17): the analysis reads its statements (line 1)"]


def test_a_lambda_capturing_by_value_stays_a_call() -> None:
    source = HELPER.replace("add_pair(me, stage[q], phi);", "pull(stage[q]);").replace(
        "  for (int base", "  auto pull = [=](float2 o) mutable { phi -= o.x; };\n  for (int base")
    notes = [n for n in _lift(source).notes if n.startswith("INLINE_BODY")]
    assert notes == ["INLINE_BODY: not applied: pull (a lambda) is not written into its calls: "
                     "it captures `=`, not by reference only: a copy is taken where it is "
                     "defined (line 13)"]


def test_a_helper_with_a_return_or_a_local_named_like_the_kernels_stays_a_call() -> None:
    early = HELPER.replace("  phi -= rsqrtf", "  if (dx > 1.0f) return;\n  phi -= rsqrtf")
    assert "INLINE_BODY: not applied: add_pair (a __device__ function) is not written into its " \
        "calls: its body holds a return (`return;`) (line 4)" in _lift(early).notes
    shadow = HELPER.replace("const float dy", "const float p").replace("dy * dy", "p * p")
    assert "INLINE_BODY: not applied: add_pair (a __device__ function) is not written into its " \
        "calls: its body declares p, a name the kernel declares too: a read of it could mean " \
        "either (line 1)" in _lift(shadow).notes


# -- the staged walk: spellings, knobs, refusals --------------------------------------------

#: A kernel-density sum over 1-D points: a macro tile, a plain guarded inner loop, the load
#: by a conditional, the sum scaled after the walk.
DENSITY = """\
#define TILE 64

extern "C" __global__ void k(float* dens, const float* x, int n) {
  __shared__ float xs[TILE];
  int i = threadIdx.x + blockIdx.x * TILE;
  float xi = 0.0f;
  if (i < n) xi = x[i];
  float sum = 0.0f;
  for (int base = 0; base < n; base += TILE) {
    xs[threadIdx.x] = (base + threadIdx.x < n) ? x[base + threadIdx.x] : 0.0f;
    __syncthreads();
    for (int q = 0; q < TILE; q++) {
      if (base + q < n) {
        const float d = (xs[q] - xi) * 4.0f;
        sum += expf(-0.5f * d * d);
      }
    }
    __syncthreads();
  }
  if (i < n) dens[i] = sum / n;
}
"""

#: A GEMV with x staged a block at a time, the tile loop and walk by blockDim.x, the row
#: clamped so every lane reads a row (its sum stored only where the row exists).
GEMV = """\
extern "C" __global__ void k(float* y, const float* A, const float* x, int rows, int cols) {
  __shared__ float xs[256];
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = min(row, rows - 1);
  const float* a = A + (size_t)r * cols;
  float acc = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += blockDim.x) {
    const int c = c0 + threadIdx.x;
    xs[threadIdx.x] = c < cols ? x[c] : 0.0f;
    __syncthreads();
    for (int q = 0; q < blockDim.x && c0 + q < cols; ++q) acc += a[c0 + q] * xs[q];
    __syncthreads();
  }
  if (row < rows) y[row] = acc;
}
"""

#: Neighbours within a radius, counted in an int over float3 records: exact in any order.
COUNT = """\
extern "C" __global__ void k(float* out, const float* raw, int n) {
  __shared__ float3 tile[128];
  const float3* pts = (const float3*)raw;
  const int p = blockIdx.x * 128 + threadIdx.x;
  const float3 me = pts[min(p, n - 1)];
  int near = 0;
  for (int start = 0; start < n; start += blockDim.x) {
    if (start + threadIdx.x < n) tile[threadIdx.x] = pts[start + threadIdx.x];
    __syncthreads();
    const int m = min(n - start, (int)blockDim.x);
    for (int q = 0; q < m; ++q) {
      const float dx = tile[q].x - me.x, dy = tile[q].y - me.y, dz = tile[q].z - me.z;
      near += dx * dx + dy * dy + dz * dz < 0.25f ? 1 : 0;
    }
    __syncthreads();
  }
  if (p < n) out[p] = (float)near;
}
"""

#: The host forms of float3 (the harness's prelude has float2 and float4).
FLOAT3 = """\
struct float3 { float x, y, z; };
static inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
"""


def _knobs(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


def test_every_spelling_lifts_the_rows_and_the_items() -> None:
    for source, block, count in [(HELPER, "128", "128"), (DENSITY, "64", "BLOCK_THREADS"),
                                 (COUNT, "128", "BLOCK_THREADS")]:
        lifted = _lift(source, block)
        fast = ["FAST_MATH"] if "expf(" in source else []  # the walk's compute: __expf
        assert list(_knobs(lifted)) == ["BLOCK_THREADS", "ITEMS", "JSPLIT", "UNROLL", *fast,
                                        "MIN_BLOCKS_PER_SM"], lifted.notes
        assert _knobs(lifted)["JSPLIT"]["values"] == [1, 2, 4, 8]
        # the walk's loop, with no pragma of the author's: any factor computes the same (a
        # loop of constant trips, 64, whole too)
        assert _knobs(lifted)["UNROLL"]["values"][:5] == [0, 1, 2, 4, 8]
        assert _knobs(lifted)["UNROLL"]["default"] == 0
        assert _knobs(lifted)["ITEMS"]["values"] == [1, 2, 4]
        assert _knobs(lifted)["BLOCK_THREADS"]["kind"] == "pow2"  # the space's size
        assert lifted.block == ("BLOCK_THREADS", "JSPLIT")
        assert lifted.grid == ("ceil_div(n, BLOCK_THREADS * ITEMS)",)
        assert "BLOCK_THREADS * JSPLIT <= 1024" in lifted.constraints
        assert any(c.endswith(f"* {count} * JSPLIT + (4 * BLOCK_THREADS * ITEMS if JSPLIT > 1 "
                              "else 0) <= 49152") for c in lifted.constraints), lifted.constraints
    gemv = lift_kernel(GEMV, entry="k", grid=["ceil_div(rows, 256)"], block=["256"],
                       scalars={"rows": "rows", "cols": "cols"})
    assert list(_knobs(gemv)) == ["BLOCK_THREADS", "ITEMS", "JSPLIT", "UNROLL",
                                  "MIN_BLOCKS_PER_SM"]
    assert "4 * BLOCK_THREADS * JSPLIT + (4 * BLOCK_THREADS * ITEMS if JSPLIT > 1 else 0) " \
        "<= 49152" in gemv.constraints


def test_the_notes_say_the_sums_are_reordered_or_exact() -> None:
    floats = [n for n in _lift(DENSITY, "64").notes if n.startswith("JSPLIT")]
    assert floats == ["JSPLIT: applied: the walk over each tile split over JSPLIT rows of "
                      "threads, the sums of sum added in row order by row 0 (floats within "
                      "the folder's tolerances: the gate checks them) (line 9)"]
    ints = [n for n in _lift(COUNT).notes if n.startswith(("JSPLIT", "ITEMS:"))]
    assert ints == ["ITEMS: applied: p, me, near kept once an item; the walk shares each "
                    "staged element among a thread's items (line 4)",
                    "JSPLIT: applied: the walk over each tile split over JSPLIT rows of "
                    "threads, the sums of near added in row order by row 0 (integer sums: "
                    "exact) (line 7)"]


def _refused(source: str, name: str = "JSPLIT") -> list[str]:
    lifted = _lift(source)
    assert name not in _knobs(lifted)
    return [n for n in lifted.notes if n.startswith(f"{name}:")]


def test_a_running_maximum_combines_by_its_max() -> None:
    """A running max (from any start) splits over the rows: their partials combine by the
    same fmaxf, exactly; one the walk also adds to is refused (neither combine is right)."""
    source = COUNT.replace("int near = 0;", "float near = 0.0f;").replace(
        "near += dx * dx + dy * dy + dz * dz < 0.25f ? 1 : 0;",
        "near = fmaxf(near, dx * dx + dy * dy + dz * dz);")
    assert [n for n in _lift(source.replace("0.0f;", "-1.0f;")).notes
            if n.startswith("JSPLIT")] == [
        "JSPLIT: applied: the walk over each tile split over JSPLIT rows of threads, near by "
        "fmaxf combined in row order by row 0 (exact: a min or max of the same values, in any "
        "order) (line 7)"]
    mixed = source.replace("dz * dz);", "dz * dz);\n      near += dx;")
    assert _refused(mixed) == ["JSPLIT: not applied: `near += dx` updates near by +, and the "
                               "walk elsewhere by fmaxf (line 14)"]


def test_a_term_reading_another_sum_or_a_sum_not_from_zero_is_refused() -> None:
    chained = COUNT.replace("int near = 0;", "int near = 0;\n  int far = 0;").replace(
        "? 1 : 0;", "? 1 : 0;\n      far += near;")
    assert _refused(chained) == ["JSPLIT: not applied: `far += near`: its term reads the "
                                 "running sum near: the rows' partial sums would not add up to "
                                 "it (line 15)"]
    offset = COUNT.replace("int near = 0;", "int near = 1;")
    assert _refused(offset) == ["JSPLIT: not applied: `int near = 1;`: the walk updates near, "
                                "which is not a number declared as 0 (line 6)"]


def test_a_walk_reading_what_the_load_declared_is_refused() -> None:
    source = DENSITY.replace(
        "    xs[threadIdx.x] = (base + threadIdx.x < n) ? x[base + threadIdx.x] : 0.0f;",
        "    const int at = base + threadIdx.x;\n    xs[threadIdx.x] = at < n ? x[at] : 0.0f;"
    ).replace("if (base + q < n)", "if (at - threadIdx.x + q < n)")
    lifted = _lift(source, "64")
    assert "JSPLIT" not in _knobs(lifted)
    assert "JSPLIT: not applied: the walk reads at, which the tile's load declares: the rows " \
        "run the load apart (line 14)" in lifted.notes


def test_items_refused_where_the_block_index_is_read_again_keep_the_rows() -> None:
    source = COUNT.replace("  int near = 0;", "  const int first = blockIdx.x;\n  int near = 0;")
    lifted = _lift(source)
    assert list(_knobs(lifted)) == ["BLOCK_THREADS", "JSPLIT", "UNROLL", "MIN_BLOCKS_PER_SM"]
    assert "ITEMS: not applied: `const int first = blockIdx.x;` reads blockIdx.x besides the " \
        "output index: the items' blocks would be told apart otherwise (line 6)" in lifted.notes



# -- the host simulation ---------------------------------------------------------------------


def _folder(root: Path, source: str, sizes: dict[str, int], tolerance: str) -> KernelFolder:
    """A folder of one spelling at ``sizes``, compared within ``tolerance`` (an inline TOML
    table): the rows add the sums in another order."""
    if "rows" in sizes:
        args: list[tuple[str, str, str, Any]] = [
            ("y", "f32", "out", ["rows"]), ("A", "f32", "in", ["rows", "cols"]),
            ("x", "f32", "in", ["cols"]), ("rows", "i32", "scalar", "rows"),
            ("cols", "i32", "scalar", "cols")]
        grid, block = ["ceil_div(rows, 256)"], ["256"]
    else:
        out = "dens" if "dens" in source else "out"
        width = 3 if "float3" in source else 2 if "float2" in source else 1
        shape: list[Any] = ["n", width] if width > 1 else ["n"]
        args = [(out, "f32", "out", ["n"]), ("raw" if width > 1 else "x", "f32", "in", shape),
                ("n", "i32", "scalar", "n")]
        size = "64" if "TILE 64" in source else "128"
        grid, block = [f"ceil_div(n, {size})"], [size]
    write_folder(root, source, grid, block, args, sizes, [])
    toml = root / "kernel.toml"
    toml.write_text(toml.read_text().replace("fp32 = { rtol = 0, atol = 0 }",
                                             f"fp32 = {tolerance}"))
    return load_kernel_folder(root)


#: Mixes over the default (each valid for every spelling): two rows of 64 threads with two
#: items, four rows of 32 with four items, eight rows of 32 with one item, four rows of 256
#: with two items (1024 threads).
MIXES = [{"BLOCK_THREADS": 64, "ITEMS": 2, "JSPLIT": 2},
         {"BLOCK_THREADS": 32, "ITEMS": 4, "JSPLIT": 4, "MIN_BLOCKS_PER_SM": 4},
         {"BLOCK_THREADS": 32, "ITEMS": 1, "JSPLIT": 8},
         {"BLOCK_THREADS": 256, "ITEMS": 2, "JSPLIT": 4}]

SPELLINGS = {"helper": (HELPER, {"n": 300}, {"n": 5}),
             "density": (DENSITY, {"n": 300}, {"n": 7}),
             "gemv": (GEMV, {"rows": 300, "cols": 300}, {"rows": 5, "cols": 9}),
             "count": (COUNT, {"n": 300}, {"n": 3})}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", list(SPELLINGS))
@pytest.mark.parametrize("small", [False, True])
def test_a_spelling_computes_what_it_computes_as_written(name: str, small: bool,
                                                          tmp_path: Path) -> None:
    """The default, every all-ends config and the mixes (n = 300: no multiple of any tile;
    small: below one tile). Float sums within 1e-4 absolute: a row of the GEMV adds 300
    products of about 1 with signs mixed (at 64 threads, two rows and two items the
    largest difference was 3.8e-5, on a sum of -57.35)."""
    source, sizes, tiny = SPELLINGS[name]
    exact = name == "count"
    kf = _folder(tmp_path / name, source, tiny if small else sizes,
                 "{ rtol = 0, atol = 0 }" if exact else "{ rtol = 1e-5, atol = 1e-4 }")
    result = offline_template(kf)
    env = kf.env(kf.check_shape, "fp32")
    space = result.template.space(env)
    base = dict(result.template.default_config())
    mixes = [{**base, **m} for m in MIXES]
    configs = [base, *end_configs(result.template, env), *mixes]
    assert {c["JSPLIT"] for c in configs} == {1, 2, 4, 8} and \
        {c["ITEMS"] for c in configs} == {1, 2, 4} and \
        {c["BLOCK_THREADS"] for c in configs} >= {32, 1024}
    for c in configs:
        assert space.rejection(c) is None, (c, space.rejection(c))
    host = prepended(FLOAT3 + "#define __expf(v) expf(v)\n")  # FAST_MATH's form, as written
    runs = [(host(kf.baseline.render({}, "fp32").source), kf.baseline.launch_for({}, env))]
    runs += [(host(result.template.render(c, "fp32").source),
              result.template.launch_for(c, env)) for c in configs]
    plain, *got = folder_runs(kf, runs, _inputs(kf), tmp_path / "runs")
    output = next(a.name for a in kf.args if a.role == "out")
    assert not np.isnan(plain[output]).any() and np.abs(plain[output]).max() > 0
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, plain, f"{name} at {config}")
