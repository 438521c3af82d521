"""Set 14's resize_bilinear_f16 (issue 28): PLANES_PER_THREAD (:mod:`.grid_planes`), several
values of an outer grid index a thread with the index math shared (the expert's PLANES).

The folder's kernel (the plane blockIdx.y read directly, its bound a disjunct of the early
return), a second hand's (float planes, the plane named first, the bound a conjunct of an
enclosing ``if``, ``%`` for the column, ``floorf``/``min`` clamps, a lerp helper) and a
third (the bound an early return of its own, a nearest-tap weight product) lift
PLANES_PER_THREAD {1, 2, 4, 8} with grid y ``ceil_div(extent, PLANES_PER_THREAD)``: the
coordinates and weights once, the loads and the store once a plane, each plane's statements
under the plane's bound. All three compute on the host bit for bit what they compute as written
(the default and the expert's pick in the lift's knobs; under WORKBENCH_FULL_MATRIX=1 also a
mix past the planes and the all-ends configs). A bound that is not the grid's extent, a
store that does not depend on the plane, a loop bounded by the plane and a read of what the
kernel writes are refused with their lines; a batched copy (only its index to share) and an
extent with no bound and no divisor take no planes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import held_back_unseen14
import numpy as np
import pytest
from helpers_templater import FULL_MATRIX, host_configs, lifted_template
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_inline_calls import Spelling, host_outputs, listed_configs, needs_gxx

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import LiftedSource, lift_kernel, offline_template
from workbench.templater.grid_planes import KNOB

FOLDER = held_back_unseen14.ROOT / "resize_bilinear_f16"
#: The expert's H100 pick in the lift's knobs (256 threads, 8 outputs and 4 planes a thread:
#: 2 planes at the check shape, so 2 of the 4 past the bound), then 8 planes over 64 threads
#: with 2 items under a register cap (FULL_MATRIX only).
MIXES = [{"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 8, "PLANES_PER_THREAD": 4},
         {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "PLANES_PER_THREAD": 8,
          "MIN_BLOCKS_PER_SM": 1}]

# another hand: float planes, the plane named first, the bound a conjunct of the enclosing
# if, the column by %, floorf and min clamps, the lerp a helper
SCALE = Spelling("""
__device__ __forceinline__ float lerp1(float a, float b, float t) { return a + t * (b - a); }

extern "C" __global__ void scale_planes(const float* __restrict__ src, float* __restrict__ dst,
                                        int planes, int in_h, int in_w, int out_h, int out_w) {
  int plane = blockIdx.y;
  int t = threadIdx.x + blockDim.x * blockIdx.x;
  if (t < out_h * out_w && plane < planes) {
    int r = t / out_w;
    int c = t % out_w;
    float fy = (r + 0.5f) * in_h / out_h - 0.5f;
    float fx = (c + 0.5f) * in_w / out_w - 0.5f;
    if (fy < 0.0f) fy = 0.0f;
    if (fx < 0.0f) fx = 0.0f;
    int r0 = min((int)floorf(fy), in_h - 1);
    int c0 = min((int)floorf(fx), in_w - 1);
    int r1 = min(r0 + 1, in_h - 1);
    int c1 = min(c0 + 1, in_w - 1);
    float wy = fy - r0, wx = fx - c0;
    const float* img = src + plane * in_h * in_w;
    float a = lerp1(img[r0 * in_w + c0], img[r0 * in_w + c1], wx);
    float b = lerp1(img[r1 * in_w + c0], img[r1 * in_w + c1], wx);
    dst[(plane * out_h + r) * out_w + c] = lerp1(a, b, wy);
  }
}
""", "scale_planes", ("ceil_div(OH * OW, 128)", "P"), ("128",),
    {"planes": "P", "in_h": "H", "in_w": "W", "out_h": "OH", "out_w": "OW"},
    {"src": ("P * H * W", False), "dst": ("P * OH * OW", True)},
    "scale_planes(src, dst, P, H, W, OH, OW)", {"P": 3, "H": 7, "W": 11, "OH": 10, "OW": 17},
    frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", KNOB}))

# a third: the plane's bound its own early return before the index's, a nearest-tap weight
# product in one store, the column by %
GUARDED = Spelling("""
extern "C" __global__ void rz(float* out, const float* in, int p, int h, int w, int ho, int wo) {
  const int plane = blockIdx.y;
  if (plane >= p) return;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= ho * wo) return;
  const int oy = idx / wo, ox = idx % wo;
  const float sy = fmaxf((oy + 0.5f) * h / ho - 0.5f, 0.0f);
  const float sx = fmaxf((ox + 0.5f) * w / wo - 0.5f, 0.0f);
  const int y0 = min((int)sy, h - 1), x0 = min((int)sx, w - 1);
  const float* s = in + (size_t)plane * h * w;
  out[(size_t)plane * ho * wo + idx] = s[y0 * w + x0] * (1.0f - (sy - y0)) * (1.0f - (sx - x0));
}
""", "rz", ("ceil_div(OH * OW, 128)", "P"), ("128",),
    {"p": "P", "h": "H", "w": "W", "ho": "OH", "wo": "OW"},
    {"out": ("P * OH * OW", True), "in": ("P * H * W", False)},
    "rz(out, in, P, H, W, OH, OW)", {"P": 3, "H": 7, "W": 11, "OH": 10, "OW": 17},
    frozenset({"BLOCK_THREADS", "ITEMS_PER_THREAD", KNOB}))


def lift(s: Spelling) -> LiftedSource:
    return lift_kernel(s.source, entry=s.entry, grid=list(s.grid), block=list(s.block),
                       scalars=dict(s.scalars))


def edited(old: str, new: str, grid: tuple[str, ...] = SCALE.grid) -> Spelling:
    assert old in SCALE.source, old
    return replace(SCALE, source=SCALE.source.replace(old, new), grid=grid)


def plane_findings(lifted: LiftedSource) -> list[tuple[bool, int | None, str]]:
    return [(f.applied, f.line, f.reason) for f in lifted.findings if f.transform == KNOB]


def test_the_folders_planes_share_the_coordinates_and_weights() -> None:
    made = offline_template(load_kernel_folder(FOLDER))
    lifted = made.lifted
    names = [p.name for p in lifted.params]
    assert names == ["BLOCK_THREADS", KNOB, "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"], made.notes
    assert next(p for p in lifted.params if p.name == KNOB).spec["values"] == [1, 2, 4, 8]
    assert lifted.grid[1] == f"ceil_div(p, {KNOB})"
    source = lifted.source
    # the bound left the guard; the index math once, the taps' loads and the store a plane
    assert "if (idx >= ho * wo) continue;" in source
    assert source.count("fmaxf(sx, 0.0f)") == 1 and source.count("(float)ho") == 1
    plane = f"(blockIdx.y * {KNOB} + wb_pq)"
    assert f"if ({plane} < p) v11[wb_pq] = __half2float(src[wb_pq][y1 * w + x1]);" in source
    assert f"out[(size_t){plane} * ho * wo + idx]" in source
    (applied, at, reason), = plane_findings(lifted)
    assert applied and at == 12 and "7 local(s) become one copy per plane" in reason
    assert "11 local(s) of index math shared" in reason


def test_a_second_hands_planes_are_lifted_from_the_enclosing_if() -> None:
    lifted = lift(SCALE)
    assert SCALE.lifts <= {p.name for p in lifted.params}, lifted.notes
    assert lifted.grid[1] == f"ceil_div(P, {KNOB})"
    assert "if (t < out_h * out_w) {" in lifted.source
    assert lifted.source.count("floorf(fy)") == 1
    (applied, at, reason), = plane_findings(lifted)
    assert applied and at == 6 and "bounded by `planes` a plane" in reason


def test_a_bound_of_its_own_leaves_with_its_return() -> None:
    lifted = lift(GUARDED)
    assert GUARDED.lifts <= {p.name for p in lifted.params}, lifted.notes
    assert "plane >= p" not in lifted.source and "if (idx >= ho * wo) continue;" in \
        lifted.source
    (applied, at, reason), = plane_findings(lifted)
    assert applied and at == 3 and "7 local(s) of index math shared" in reason


@pytest.mark.parametrize(("old", "new", "at", "why"), [
    ("plane < planes", "plane < planes - 1", 8, "is not the grid's extent"),
    ("dst[(plane * out_h + r) * out_w + c] = lerp1(a, b, wy);",
     "dst[(plane * out_h + r) * out_w + c] = lerp1(a, b, wy);\n    if (plane == 0) dst[t] = wy;",
     24, "written at a place that does not depend on the plane"),
    ("float a = lerp1(", "for (int k = 0; k < plane; ++k) wx *= 0.5f;\n    float a = lerp1(", 21,
     "the loop's condition `k < plane` depends on the plane"),
    ("float a = lerp1(img[r0 * in_w + c0]", "float a = lerp1(dst[r0 * in_w + c0]", 21,
     "reads memory the kernel writes"),
])
def test_what_the_planes_cannot_share_is_refused_with_the_line(old: str, new: str, at: int,
                                                               why: str) -> None:
    lifted = lift(edited(old, new))
    (applied, line, reason), = plane_findings(lifted)
    assert not applied and line == at and why in reason, reason
    assert KNOB not in {p.name for p in lifted.params}


def test_a_batched_copy_and_an_unbounded_extent_take_no_planes() -> None:
    copy = replace(SCALE, source="""
extern "C" __global__ void scale_planes(const float* src, float* dst, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[blockIdx.y * n + i] = 2.0f * src[blockIdx.y * n + i];
}
""", scalars={"n": "N"})
    lifted = lift(copy)
    assert KNOB not in {p.name for p in lifted.params} and not plane_findings(lifted)
    # no bound, no argument launched with the grid's y, no divisor of 3 in 2..8
    unbounded = lift(edited(" && plane < planes", "", grid=(SCALE.grid[0], "3")))
    (applied, _, reason), = plane_findings(unbounded)
    assert not applied and "nothing bounds the plane" in reason
    # a literal extent with no bound: its divisors, the grid divided
    four = lift(edited(" && plane < planes", "", grid=(SCALE.grid[0], "4")))
    assert next(p for p in four.params if p.name == KNOB).spec["values"] == [1, 2, 4]
    assert four.grid[1] == f"4 // {KNOB}"


@needs_gxx
@pytest.mark.timeout(600)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """Bit for bit (per plane the same float operations in the same order)."""
    kf = load_kernel_folder(FOLDER)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    configs = host_configs(template, env, MIXES) if FULL_MATRIX else \
        [default, {**default, **MIXES[0]}]
    assert template.space(env).rejection(configs[-1]) is None
    inputs = _inputs(kf)
    host = held_back_unseen14.host_source
    want = _run(kf, host(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        for name, values in want.items():
            assert not np.isnan(values).any()
            assert (got[name] == values).all(), f"{kf.name} at {config}: {name} differs"


@needs_gxx
@pytest.mark.timeout(600)
@pytest.mark.parametrize("s", [SCALE, GUARDED], ids=["scale", "guarded"])
def test_the_other_spellings_compute_what_they_compute_as_written(
        s: Spelling, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    env = {**s.env, "elem_bytes": 4}
    want = host_outputs(s, s.source, [-(-env["OH"] * env["OW"] // 128), env["P"]], [128],
                        tmp_path / "plain", host_flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(s), s.entry)
    default = dict(template.default_config())
    pick = {**default, "BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, KNOB: 4}  # 3 planes: 1 past
    configs = [*listed_configs(template, env), pick] if FULL_MATRIX else [default, pick]
    for i, config in enumerate(configs):
        assert template.space(env).rejection(config) is None, config
        launch = template.launch_for(config, env)
        got = host_outputs(s, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), tmp_path / f"c{i}", host_flags)
        np.testing.assert_array_equal(got, want, err_msg=str(config))
