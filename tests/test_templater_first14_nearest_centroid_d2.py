"""First contact with held-back set 14's k-means distances (issue 28): benchmarks/
corpus_compute_unseen14/nearest_centroid_d2 takes each point's smallest squared distance to
64 ``__constant__`` centroids through a lambda with statements and a ``return``
(``auto dist2 = [&](int c) { const float* q = ...; const float a = p0 - q[0], ...; return
a * a + ...; };``), called as ``float best = dist2(0);`` and ``best = fminf(best,
dist2(c));``. Propose wrote no template on the H100: ITEMS_PER_THREAD's wrap (wrap.py) turned
every ``return`` after the index into ``continue`` — the lambda's own included — so the
lambda returned nothing and ``fminf(best, dist2(c))`` read a void (template.cu(66)); the
expert's main knob (several points a thread, each centroid read shared by them inside the
loop over centroids) was refused by ilp.py on that same ``return``.

Now a ``return`` inside a lambda is the lambda's: the wrap, the lane items (const_items.py)
and the apron outputs (apron.py) leave it (a lambda the inlining refuses still lifts and
compiles), and a lambda whose body ends in its one ``return
expr;`` is a value that INLINE_BODY writes into its calls (its statements just before the
statement holding the call, under fresh names, the call ``(expr)``), so the items share the
centroid loop. A second spelling (a point array, a ``-> float`` lambda looping over the
coordinates, the minimum by a compare, one ``if`` around the body) lifts the same knob.

Pure: the lifts' knobs and notes, the refusals of calls the statements cannot run before.
Host (g++): each lift against its kernel as written, bit for bit, at the default and the
expert's pick in the lift's knobs (every all-ends config and two more mixes under
WORKBENCH_FULL_MATRIX=1), and the refused lambda wrapped at 8 items; nvcc: the lane and
apron spellings' lifts compile with their by-copy lambdas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen14
import pytest
from held_back_harness import respelled, same_as_written
from helpers_nvcc import needs_nvcc, ptx_of
from helpers_templater import FULL_MATRIX, end_configs, lifted_template, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401  (the session fixture)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen14.ROOT / "nearest_centroid_d2"
KNOBS = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "STAGE", "MIN_BLOCKS_PER_SM")
#: The expert's pick (THREADS 64, ITEMS 8, SMEM 0, VEC 0: 165.0 us against 214.3 as written
#: on the H100) in the lift's knobs.
EXPERT_PICK = {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8, "STAGE": 0}
MIXES = [{"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 4, "UNROLL": 2, "STAGE": 1,
          "MIN_BLOCKS_PER_SM": 2},
         {"BLOCK_THREADS": 1024, "ITEMS_PER_THREAD": 2, "UNROLL": 1}]

#: Another hand: a point array, a lambda with a result type looping over the coordinates,
#: the running minimum by a compare, the body inside one ``if``.
ARRAY_POINT = """#define NUM_CENTROIDS 64

__constant__ float centroids[NUM_CENTROIDS * 4];

extern "C" __global__ void nearest_centroid_d2(float* __restrict__ d2,
                                               const float* __restrict__ x, int n) {
  constexpr int kDim = 4;
  int idx = threadIdx.x + blockIdx.x * blockDim.x;
  if (idx < n) {
    float pt[kDim];
    for (int d = 0; d < kDim; ++d) pt[d] = x[idx * kDim + d];
    auto sq_dist = [&](const int k) -> float {
      float s = 0.0f;
      for (int j = 0; j < kDim; ++j) {
        const float t = pt[j] - centroids[k * kDim + j];
        s += t * t;
      }
      return s;
    };
    float best = 3.0e38f;
    for (int k = 0; k < NUM_CENTROIDS; ++k) {
      const float dk = sq_dist(k);
      if (dk < best) best = dk;
    }
    d2[idx] = best;
  }
}
"""
#: Its own knobs: BRANCHLESS for the compare, no STAGE (kDim is no macro it reads).
ARRAY_MIXES = [{"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 4, "UNROLL": 2, "BRANCHLESS": 1,
                "MIN_BLOCKS_PER_SM": 2},
               {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8, "UNROLL": 64}]


def _folder_source() -> str:
    return (FOLDER / "nearest_centroid_d2.cu").read_text()


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="nearest_centroid_d2", grid=["ceil_div(n, 256)"],
                       block=["256"], scalars={"n": "n"})


def _note(notes: tuple[str, ...] | list[str], prefix: str) -> str:
    found = [n for n in notes if n.startswith(prefix)]
    assert len(found) == 1, (prefix, notes)
    return found[0]


def test_the_folder_lift_shares_each_centroid_among_its_points() -> None:
    lifted = _lift(_folder_source())
    assert tuple(p.name for p in lifted.params) == KNOBS
    assert _note(lifted.notes, "INLINE_BODY") == (
        "INLINE_BODY: applied: dist2 (a lambda) written into its calls (lines 23, 25): the "
        "analysis reads its statements (line 18)")
    items = _note(lifted.notes, "ITEMS_PER_THREAD")
    assert items.startswith("ITEMS_PER_THREAD: applied: ") and \
        "1 loop(s) of item-independent length interleave the items" in items, items
    source = lifted.source
    assert "dist2(" not in source and "next item" not in source
    loop = source[source.index("for (int c = 1; c < NUM_CENTROIDS; ++c) {"):]
    assert "const float* wb_q_2 = centroids + wb_c_2 * DIM;" in loop  # once a centroid
    assert "best[wb_it] = fminf(best[wb_it], (wb_a_2[wb_it] * wb_a_2[wb_it] + " in loop


#: Two calls a statement, the centroids taken in pairs: the first call's value is kept in a
#: local before the second call's statements run.
PAIRED = _folder_source().replace(
    "float best = dist2(0);", "float best = fminf(dist2(0), dist2(32));").replace(
    "for (int c = 1; c < NUM_CENTROIDS; ++c) best = fminf(best, dist2(c));",
    "for (int c = 1; c < NUM_CENTROIDS / 2; ++c) "
    "best = fminf(best, fminf(dist2(c), dist2(c + 32)));")


def test_two_calls_in_one_statement_keep_the_first_value_in_a_local() -> None:
    lifted = _lift(PAIRED)
    assert _note(lifted.notes, "INLINE_BODY").startswith(
        "INLINE_BODY: applied: dist2 (a lambda) written into its calls (lines 23, 25)")
    assert "interleave the items" in _note(lifted.notes, "ITEMS_PER_THREAD")
    source = lifted.source
    first = source.index("wb_dist2_2[wb_it] = (wb_a_2[wb_it] * wb_a_2[wb_it] + ")
    second = source.index("wb_a_4[wb_it] = p0[wb_it] - wb_q_4[0];")
    assert first < second < source.index("fminf(best[wb_it], fminf(wb_dist2_2[wb_it], (wb_a_4")


def test_a_value_of_no_plain_type_beside_another_call_keeps_the_lambda() -> None:
    lifted = _lift(PAIRED.replace("return a * a + b * b + e * e + f * f;",
                                  "return fmaf(a, a, b * b + e * e + f * f);"))
    assert _note(lifted.notes, "INLINE_BODY") == (
        "INLINE_BODY: not applied: dist2 (a lambda) is not written into its calls: `float "
        "best = fminf(dist2(0), dist2(32));` evaluates more than the call, and the type of "
        "`fmaf(a, a, b * b + e * e + f * f)` (its value, kept in a local before the "
        "statement) is not plain (line 23)")
    assert "auto dist2 = [&](int c) {" in lifted.source


def test_another_spelling_lifts_the_same_items() -> None:
    lifted = _lift(ARRAY_POINT)
    assert {"BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL"} <= {p.name for p in lifted.params}
    assert _note(lifted.notes, "INLINE_BODY").startswith(
        "INLINE_BODY: applied: sq_dist (a lambda) written into its calls")
    assert "interleave the items" in _note(lifted.notes, "ITEMS_PER_THREAD")
    assert "dk[wb_it] = ((float)(wb_s[wb_it]));" in lifted.source  # the declared result type


@pytest.mark.parametrize(("old", "new", "why", "at"), [
    ("best = fminf(best, dist2(c));", "best = c > 7 ? fminf(best, dist2(c)) : best;",
     "is inside `c > 7 ? fminf(best, dist2(c)) : best`: it runs only sometimes", 25),
    ("best = fminf(best, dist2(c));", "if (best > 0.0f && dist2(c) < best) best = dist2(c);",
     "runs only sometimes or after another part of it", 25),
    ("for (int c = 1; c < NUM_CENTROIDS; ++c) best = fminf(best, dist2(c));",
     "for (int c = 1; c < NUM_CENTROIDS + (int)dist2(0); ++c) best = fminf(best, 1.0f);",
     "is in the header of `for (int c = 1;", 25),
    ("best = fminf(best, dist2(c));", "if (dist2(c) < best) best = fminf(best, 1.0f);",
     "is in the header of `if (dist2(c) < best)", 25),
], ids=["conditional", "and", "loop_header", "if_condition"])
def test_a_call_its_statements_cannot_run_before_keeps_the_lambda(old: str, new: str, why: str,
                                                                  at: int) -> None:
    source = _folder_source()
    assert source.count(old) == 1
    lifted = _lift(source.replace(old, new))
    note = _note(lifted.notes, "INLINE_BODY")
    assert note.startswith("INLINE_BODY: not applied: dist2 (a lambda) is not written into its "
                           "calls: ") and why in note and note.endswith(f"(line {at})"), note
    assert "auto dist2 = [&](int c) {" in lifted.source
    assert "return a * a + b * b + e * e + f * f;" in lifted.source  # the lambda's own


#: The folder's lambda taking its point by copy ([=]): left as written (not a reference
#: capture), its `return` stays the lambda's while the items wrap the body.
BY_COPY = _folder_source().replace("auto dist2 = [&](int c)", "auto dist2 = [=](int c)")


def test_a_lambda_left_as_written_keeps_its_return_when_the_items_wrap() -> None:
    lifted = _lift(BY_COPY)
    assert "captures `=`" in _note(lifted.notes, "INLINE_BODY")
    assert "ITEMS_PER_THREAD" in {p.name for p in lifted.params}
    source = lifted.source
    body = source[source.index("auto dist2 = [=](int c) {"):source.index("float best")]
    assert "return a * a + b * b + e * e + f * f;" in body and "continue" not in body, body
    assert source.count("continue;  // next item") == 1  # the guard's exit only


#: A per-channel lane layout (a 32 x P block, const_items.py's own item loop, not the wrap's)
#: calling a by-copy lambda with two returns: they stay the lambda's.
LANES = """extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x,
                             const float* __restrict__ s, int npix) {
  const int lane = threadIdx.x;
  const int outer = blockIdx.x * blockDim.y + threadIdx.y;
  if (outer >= npix) return;
  auto relu_scale = [=](float v) {
    if (v < 0.0f) return 0.0f;
    const float scaled = v * s[lane];  // not `if (c) return a; return b;` (guarded_returns)
    return scaled;
  };
  y[outer * 32 + lane] = relu_scale(x[outer * 32 + lane]);
}
"""


@needs_nvcc
def test_the_lane_items_leave_a_lambda_its_returns() -> None:
    lifted = lift_kernel(LANES, entry="k", grid=["ceil_div(npix, 8)"], block=["32", "8"],
                         scalars={"npix": "npix"})
    assert "ITEMS_X: applied: 32 lanes x 8 outer threads a block: each thread keeps its lane" \
        in _note(lifted.notes, "ITEMS_X")
    source = lifted.source
    body = source[source.index("auto relu_scale"):source.index("y[outer * 32 + lane] =")]
    assert "if (v < 0.0f) return 0.0f;" in body and "return scaled;" in body and \
        "continue" not in body, body
    assert source.count("continue;  // the next outer item") == 1
    ptx_of(lifted_template(lifted), {"ITEMS_X": 4, "OUTER_THREADS": 4, "MIN_BLOCKS_PER_SM": 0},
           "fp32")  # compiles


#: A Laplacian over a shared apron tile (apron.py's outputs a thread) whose result goes
#: through a by-copy lambda with two returns: they stay the lambda's.
APRON = """extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[8 + 2][32 + 2];
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  for (int c = threadIdx.x; c < 34; c += 32)
    for (int r = threadIdx.y; r < 10; r += 8) {
      const int gr = (int)blockIdx.y * 8 + r - 1;
      const int gc = (int)blockIdx.x * 32 + c - 1;
      t[r][c] = (gr >= 0 && gr < h && gc >= 0 && gc < w) ? in[gr * w + gc] : 0.0f;
    }
  __syncthreads();
  if (x >= w || y >= h) return;
  auto clamped = [=](float v) {
    if (v < 0.0f) return 0.0f;
    const float kept = v;  // not `if (c) return a; return b;` (guarded_returns)
    return kept;
  };
  float s = 0.0f;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      s += ((dy == 0 && dx == 0) ? -4.0f : 1.0f) * t[threadIdx.y + 1 + dy][threadIdx.x + 1 + dx];
  out[y * w + x] = clamped(s);
}
"""


@needs_nvcc
def test_the_apron_outputs_leave_a_lambda_its_returns() -> None:
    lifted = lift_kernel(APRON, entry="k", grid=["ceil_div(w, 32)", "ceil_div(h, 8)"],
                         block=["32", "8"], scalars={"h": "h", "w": "w"})
    assert _note(lifted.notes, "OUT_XY").startswith("OUT_XY: applied: apron tile t")
    source = lifted.source
    body = source[source.index("auto clamped"):source.index("float s = 0.0f;")]
    assert "if (v < 0.0f) return 0.0f;" in body and "return kept;" in body and \
        "continue" not in body, body
    template = lifted_template(lifted)
    ptx_of(template, {**template.default_config(), "OUT_X": 2, "OUT_Y": 2}, "fp32")  # compiles


def _configs(kf: KernelFolder, mixes: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """The lift of ``kf`` and its default with ``mixes`` over it (every all-ends config
    too under WORKBENCH_FULL_MATRIX=1), each inside the space."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space = template.space(env)
    default = dict(template.default_config())
    out: list[dict[str, Any]] = []
    for config in [default, *({**default, **m} for m in mixes),
                   *(end_configs(template, env) if FULL_MATRIX else [])]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return template, out


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_what_the_kernel_computes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    template, configs = _configs(kf, [EXPERT_PICK, *(MIXES if FULL_MATRIX else [])])
    assert same_as_written(kf, template, configs, held_back_unseen14.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_array_spelling_computes_what_it_computes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", ARRAY_POINT)
    template, configs = _configs(kf, ARRAY_MIXES if FULL_MATRIX else ARRAY_MIXES[:1])
    assert same_as_written(kf, template, configs, held_back_unseen14.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_paired_calls_compute_what_they_compute(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", PAIRED)
    template, configs = _configs(kf, [EXPERT_PICK])
    assert same_as_written(kf, template, configs, held_back_unseen14.host_source, tmp_path,
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_wrapped_lambda_computes_what_it_computes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", BY_COPY)
    template, configs = _configs(kf, [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8}])
    assert same_as_written(kf, template, configs, held_back_unseen14.host_source, tmp_path,
                           host_flags) == len(configs)
