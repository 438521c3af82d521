"""First contact with held-back set 18's Welford rows (issue 28):
benchmarks/corpus_compute_unseen18/welford_rows_warp runs Welford's update (a loop-carried
chain with a divide) over a warp's strided row, ``for (int j = lane; live && j < cols; j +=
32)``, so each lane had one load in flight a step. The lift read the condition as no bound
(``live && j < cols`` is not ``j < bound``) and kept only WARPS_PER_BLOCK and LANES (H200:
1.00x, 54 % of a copy; the expert's float4 loads 1.71x, 92 %).
workbench/templater/lane_bound.py reads a lane loop's ``j < n`` beside conjuncts the loop
cannot change (a per-row ``live``) as the bound under those guards; the warp family's vector
lanes (VEC, ITEMS_PER_THREAD: :mod:`.vector`) keep the guards in their loop's condition.
ITEMS_PER_THREAD at VEC 1 loads that many elements a lane before it applies any, then runs
the updates in the order as written: the chain's loads ahead, bit for bit. VEC > 1 (and
LANES < 32) give a lane other elements, merged by the kernel's own shuffle tree: as close as
the kernel's tolerance. A row kept in registers (REG_ROW) refuses a guarded loop. Where VEC
refuses the loop (no unit-stride stream: a column-major matrix's row), AHEAD
(workbench/templater/warp_ahead.py) loads the next AHEAD steps' reads, then runs their
bodies in order: bit for bit at every AHEAD; a read under a branch, a store in the loop or an
index the chain computes refuses it with the line.
Pure: the folder's lift and a second spelling (a running maximum and its first index, the
guard after the bound, ``warpSize``, a row pointer, a device ``if`` in the chain) gain VEC
and ITEMS_PER_THREAD with the guard in the vector loop; a guard the loop writes, a load in
the guard or a file-scope flag refuses VEC with the line.
Host (g++): the folder's lift at the default and the chain's loads ahead bit for bit, the
expert's pick (float4) within the folder's tolerance; the spelling bit for bit at the
default and the float4 pick (the argmax is exact in any partition); the column-major
spelling at the default, 8 steps ahead (bit for bit) and 4 ahead at 8 lanes. The all-ends
corners and more mixes under WORKBENCH_FULL_MATRIX=1.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import held_back_unseen18
import numpy as np
import pytest
from held_back_harness import prepended, respelled
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen18.SET.root / "welford_rows_warp"
KNOBS = ("WARPS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM")
#: The chain's loads ahead (four elements a lane in flight, as written otherwise: bit for
#: bit) over eight warps (as written) with a minimum of 2 blocks; the expert's H200 pick spelled in the
#: lift's knobs (two warps, a warp a row, float4); under WORKBENCH_FULL_MATRIX=1 also 8 lanes
#: a row with two float2s ahead, and float4s at both ends of the warps, lanes and items (the
#: all-ends corners hold VEC at 1: 8 floats is no vector of 16 bytes).
LOADS_AHEAD = {"WARPS_PER_BLOCK": 8, "LANES": 32, "VEC": 1, "ITEMS_PER_THREAD": 4,
               "MIN_BLOCKS_PER_SM": 2}
EXPERT_PICK = {"WARPS_PER_BLOCK": 2, "LANES": 32, "VEC": 4, "ITEMS_PER_THREAD": 1}
MIXES = [LOADS_AHEAD, EXPERT_PICK,
         {"WARPS_PER_BLOCK": 4, "LANES": 8, "VEC": 2, "ITEMS_PER_THREAD": 2},
         {"WARPS_PER_BLOCK": 1, "LANES": 4, "VEC": 4, "ITEMS_PER_THREAD": 1},
         {"WARPS_PER_BLOCK": 32, "LANES": 4, "VEC": 4, "ITEMS_PER_THREAD": 4,
          "MIN_BLOCKS_PER_SM": 1}]


#: Another sequential chain by another hand: a row's maximum and its first index (a branch
#: in the chain), the guard an int after the bound, ``warpSize`` as the lane mask and the
#: step, a row pointer, the merge written inline with ties to the lower index.
SPELLING = """#define ROWS_PER_CTA 8
#define LOWEST (-3.402823466e+38f)

extern "C" __global__ void welford_rows_warp(float* mean_out, float* var_out, const float* x,
                                             int rows, int cols) {
  const int l = threadIdx.x & (warpSize - 1);
  const int r = blockIdx.x * ROWS_PER_CTA + (threadIdx.x >> 5);
  const int ok = r < rows;
  const float* rowp = x + (size_t)(ok ? r : 0) * cols;
  float best = LOWEST;
  int at = cols;
  for (int c = l; c < cols && ok; c += warpSize) {
    const float v = rowp[c];
    if (v > best) {
      best = v;
      at = c;
    }
  }
  for (int o = warpSize / 2; o >= 1; o >>= 1) {
    const float ob = __shfl_down_sync(0xffffffffu, best, o);
    const int oa = __shfl_down_sync(0xffffffffu, at, o);
    if (ob > best || (ob == best && oa < at)) {
      best = ob;
      at = oa;
    }
  }
  if (ok && l == 0) {
    mean_out[r] = best;
    var_out[r] = (float)at;
  }
}
"""


#: The same statistics by a third hand over a column-major matrix (a row's element j at
#: ``x[j * rows + r]``): no unit-stride stream for VEC, so the chain's loads ahead (AHEAD);
#: the merge written inline under ``if (ct > 0.0f)``, ``>>`` for the warp, a clamped row.
COLUMN_MAJOR = """#define WARPS 8

extern "C" __global__ void welford_rows_warp(float* mean_out, float* var_out, const float* x,
                                             int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  const bool live = row < rows;
  const int r = live ? row : 0;
  float cnt = 0.0f, mu = 0.0f, ss = 0.0f;
  for (int j = lane; live && j < cols; j += 32) {
    const float v = x[(size_t)j * rows + r];
    cnt += 1.0f;
    const float delta = v - mu;
    mu += delta / cnt;
    ss += delta * (v - mu);
  }
  for (int off = 16; off > 0; off >>= 1) {
    const float cb = __shfl_down_sync(0xffffffffu, cnt, off);
    const float mb = __shfl_down_sync(0xffffffffu, mu, off);
    const float sb = __shfl_down_sync(0xffffffffu, ss, off);
    const float ct = cnt + cb;
    if (ct > 0.0f) {
      const float delta = mb - mu;
      mu += delta * (cb / ct);
      ss += sb + delta * delta * (cnt * cb / ct);
      cnt = ct;
    }
  }
  if (live && lane == 0) {
    mean_out[row] = mu;
    var_out[row] = ss / (float)cols;
  }
}
"""
#: Its configs: eight steps ahead over two warps, four at 8 lanes a row (the default and
#: the first in every run; all of them and the all-ends corners under FULL_MATRIX).
AHEAD_MIXES = [{"WARPS": 2, "LANES": 32, "AHEAD": 8},
               {"WARPS": 8, "LANES": 8, "AHEAD": 4, "MIN_BLOCKS_PER_SM": 2},
               {"AHEAD": 2}]


#: The spelling's lane loop as a ``while`` (another hand again): the counter declared before
#: it, the guard after the bound, the step its last statement (workbench/templater/
#: loop_forms.py reads it as its ``for``, the guard a conjunct the body cannot change).
WHILE_SPELLING = SPELLING.replace("""  for (int c = l; c < cols && ok; c += warpSize) {
    const float v = rowp[c];
    if (v > best) {
      best = v;
      at = c;
    }
  }
""", """  int c = l;
  while (c < cols && ok) {
    const float v = rowp[c];
    if (v > best) {
      best = v;
      at = c;
    }
    c += warpSize;
  }
""")


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="welford_rows_warp", grid=["ceil_div(rows, 8)"],
                         block=["256"], scalars={"rows": "rows", "cols": "cols"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_loads_ahead_under_the_guard() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "for (int wb_j0 = (lane) * VEC; (live) && wb_j0 < cols; " \
        "wb_j0 += (LANES) * (VEC * ITEMS_PER_THREAD)) {" in lifted.source
    assert "cols % VEC == 0" in lifted.constraints
    assert "VEC: applied: lane loop over j vectorized (line 19)" in lifted.notes
    assert not [n for n in lifted.notes if n.startswith("REG_ROW")], lifted.notes


def test_the_spelling_loads_ahead_under_its_guard() -> None:
    names, notes, source = _lift(SPELLING)
    assert {"LANES", "VEC", "ITEMS_PER_THREAD"} <= set(names), notes
    assert "for (int wb_c0 = (l) * VEC; (ok) && wb_c0 < cols; " in source
    assert "at = (c + wb_v);" in source


def test_the_while_spelling_loads_ahead_under_its_guard() -> None:
    assert WHILE_SPELLING != SPELLING
    names, notes, source = _lift(WHILE_SPELLING)
    assert {"LANES", "VEC", "ITEMS_PER_THREAD"} <= set(names), notes
    assert "for (int wb_c0 = (l) * VEC; (ok) && wb_c0 < cols; " in source


def test_a_while_whose_guard_the_body_writes_stays_a_while() -> None:
    """``best < 1e30f`` beside the bound changes with the body: the loop is no counted walk
    (the families read it as written; the warp family then finds the lane outside a loop)."""
    names, notes, _ = _lift(WHILE_SPELLING.replace("c < cols && ok", "c < cols && best < 1e30f"))
    assert "LANES" not in names and "VEC" not in names, notes
    assert "LANES: not applied: the lane is used in `c = l` (only lane loops and lane == 0 are " \
        "modelled) (line 12)" in notes, notes


@pytest.mark.parametrize(("change", "conjunct"), [
    # the guard is a local the loop writes: it may end the walk early
    (("if (v > best) {", "ok = v < 1e30f;\n    if (v > best) {"), "ok"),
    # the guard loads memory the loop could store to
    (("c < cols && ok;", "c < cols && rowp[0] > LOWEST;"), "rowp[0] > LOWEST"),
    # a file-scope flag: another thread may store to it while the loop runs
    (("c < cols && ok;", "c < cols && g_scan;"), "g_scan"),
])
def test_a_guard_the_loop_may_change_refuses_vec(change: tuple[str, str],
                                                 conjunct: str) -> None:
    source = SPELLING.replace("const int ok", "int ok").replace(
        "#define LOWEST", "__device__ int g_scan = 1;\n#define LOWEST", 1)
    names, notes, _ = _lift(source.replace(*change))
    assert "VEC" not in names and "LANES" in names, notes
    assert f"VEC: not applied: the lane loop's condition `c < cols && {conjunct}` is not " \
        "`c < bound` (beside guards the loop cannot change) (line 13)" in notes, notes


def test_a_guarded_row_read_twice_is_not_kept() -> None:
    """Two passes over the row under ``ok``: REG_ROW's fill does not carry the guard, so it
    refuses, naming it; the passes still vectorize."""
    source = SPELLING.replace("  for (int o = warpSize", """  float s = 0.0f;
  for (int c = l; c < cols && ok; c += warpSize) s += rowp[c];
  best += 0.0f * s;
  for (int o = warpSize""")
    names, notes, _ = _lift(source)
    assert "REG_ROW" not in names and "VEC" in names, notes
    assert "REG_ROW: not applied: the lane loop over rowp runs under the guard `ok` beside " \
        "`c < cols`, which the kept row's fill and passes do not carry (line 12)" in notes


def test_a_strided_chain_loads_ahead() -> None:
    names, notes, source = _lift(COLUMN_MAJOR)
    assert names == ["WARPS", "LANES", "AHEAD", "MIN_BLOCKS_PER_SM"], notes
    assert "VEC: not applied: no array is indexed by j (line 10)" in notes
    assert "AHEAD: applied: lane loop over j: 1 read(s) a step loaded AHEAD steps ahead, the " \
        "steps' bodies then in the order as written (line 10)" in notes
    assert "for (int wb_j0 = lane; (live) && wb_j0 < cols; wb_j0 += (LANES) * AHEAD) {" \
        in source
    assert "wb_ahead0[wb_u] = x[(size_t)j * rows + r];" in source
    assert "#else\n  for (int j = lane; live && j < cols; j += LANES) {" in source


@pytest.mark.parametrize(("change", "reason"), [
    # a read only some steps make: loading it early could read past what the loop reads
    (("const float v = x[(size_t)j * rows + r];",
      "const float v = (j & 1) ? x[(size_t)j * rows + r] : 0.0f;"),
     "`x[(size_t)j * rows + r]` is read under a branch or inner loop of the body (line 11)"),
    # a store in the loop: an early load could miss it
    (("    cnt += 1.0f;\n", "    cnt += 1.0f;\n    mean_out[r] = v;\n"),
     "`mean_out[r] = v` writes memory in the lane loop (line 13)"),
    # an index the chain computes: not known a step ahead
    (("x[(size_t)j * rows + r]", "x[(size_t)j * rows + (int)cnt % rows]"),
     "the index of `x[(size_t)j * rows + (int)cnt % rows]` reads `cnt`, which the loop "
     "assigns (the load would not be known a step ahead) (line 11)"),
])
def test_loads_that_may_not_move_refuse_ahead(change: tuple[str, str], reason: str) -> None:
    names, notes, _ = _lift(COLUMN_MAJOR.replace(*change))
    assert "AHEAD" not in names and "LANES" in names, notes
    assert f"AHEAD: not applied: {reason}" in notes, notes


@needs_nvcc
@pytest.mark.parametrize("config", [{}, EXPERT_PICK], ids=["default", "expert_pick"])
def test_the_folder_lift_compiles(tmp_path: Path, config: dict[str, int]) -> None:
    template = offline_template(load_kernel_folder(FOLDER)).template
    cu = tmp_path / "k.cu"
    cu.write_text(template.render({**template.default_config(), **config}, "fp32").source)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(cu)],
                   check=True, capture_output=True)


#: The host simulation has no ``warpSize`` built in (the spelling reads it).
_HOST = prepended("static const int warpSize = 32;\n")


def _same_walk(config: dict[str, Any]) -> bool:
    """Each lane reads the elements it reads as written, in the same order."""
    return config["LANES"] == 32 and config.get("VEC", 1) == 1


def _check(kf: KernelFolder, configs: list[dict[str, Any]], work: Path,
           flags: tuple[str, ...], exact: bool) -> None:
    """The lift of ``kf`` at ``configs`` against ``kf`` as written on the host: bit for bit
    where ``exact`` or the walk is the same (:func:`_same_walk`), within the folder's
    tolerance otherwise."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _run(kf, _HOST(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, work / "plain", flags)
    runs = [(_HOST(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, work / "lift"), strict=True):
        for name, values in want.items():
            assert not np.isnan(values).any(), name
            if exact or _same_walk(config):
                assert (got[name] == values).all(), f"{config}: {name} differs"
            else:
                np.testing.assert_allclose(got[name], values, rtol=1e-4, atol=1e-6,
                                           err_msg=f"{config}: {name}")


def _configs(kf: KernelFolder, picked: list[dict[str, int]],
             every: list[dict[str, int]] = MIXES) -> list[dict[str, Any]]:
    """The default and ``picked`` (every mix and the all-ends corners under
    WORKBENCH_FULL_MATRIX=1), the warps knob named as the lift names it (the author's
    macro: ``ROWS_PER_CTA`` in the spelling)."""
    template = offline_template(kf).template
    warps = template.param_names[0]
    mixes = [{warps if k == "WARPS_PER_BLOCK" else k: v for k, v in m.items()}
             for m in (every if FULL_MATRIX else picked)]
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    return configs if FULL_MATRIX else configs[:1 + len(mixes)]


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    _check(kf, _configs(kf, [LOADS_AHEAD, EXPERT_PICK]), tmp_path, host_flags, exact=False)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_spelling_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SPELLING)
    _check(kf, _configs(kf, [EXPERT_PICK]), tmp_path, host_flags, exact=True)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_while_spelling_computes_as_written(tmp_path: Path,
                                                host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", WHILE_SPELLING)
    _check(kf, _configs(kf, [LOADS_AHEAD]), tmp_path, host_flags, exact=True)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_strided_chain_computes_as_written(tmp_path: Path,
                                               host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", COLUMN_MAJOR)
    _check(kf, _configs(kf, AHEAD_MIXES[:2], AHEAD_MIXES), tmp_path, host_flags, exact=False)
