"""RUN_VEC: the runs a lane loop's fixed-trip inner loop reads, loaded as vectors before the
loop (workbench/templater/warp_runs.py; issue 28, set 9's gemv_q4_rows).

On the H100 the lift of gemv_q4_rows tuned to 2.42x (44 % of a copy) against the expert's
3.00x (55 %). At the expert's pick (a warp a row, one warp a block, two words in flight)
sm_90 SASS shows the gap: the lift read a word's eight activations ``xw[j]`` with eight
4-byte LDG.E a lane (16 for two words), the lanes 32 bytes apart, so each of those loads
touched all eight lines of the warp's span; the expert reads them as two float4 (4
LDG.E.128 for two words). With RUN_VEC 4 the lift's loads are the expert's: 4 LDG.E.128 of x
and 4 LDG.E (words, scales), 32 registers.

Spellings besides the folder (tests/test_templater_first9_gemv_q4_rows.py: the folder and
an 8-bit spelling whose index is a local ``c = 4 * w + b``): a grouped energy whose lane loop
is a ``while`` over groups of a macro width with ``#pragma unroll`` written, a ``<=`` bound,
``t += 1``, and two runs (the row through a local pointer at ``r * n``, so ``n % RUN_VEC``
is a constraint, and the weights at the group's own offset); it lifts RUN_VEC and computes
on the host what it computes as written at the default, every all-ends config and mixes.
What cannot move its reads before the loop is left as written, noted with the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_templater_const_via import write_folder
from test_templater_first9_gemv_q4_rows import GEMV, _checked, _host_runs

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult
from workbench.templater.semantic import lift_kernel

#: groups of GW columns a lane, the group's energy weighted per position; (32, 4) blocks
GROUPED = """\
#define GW 4
extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ a,
                             const float* __restrict__ wts, int rows, int n) {
  const int r = blockIdx.x * 4 + threadIdx.y;
  if (r >= rows) return;
  const float* row = a + (size_t)r * n;
  float acc = 0.0f;
  int g = threadIdx.x;
  while (g < n / GW) {
    float part = 0.0f;
#pragma unroll
    for (int t = 0; t <= GW - 1; t += 1) part += row[g * GW + t] * wts[t];
    acc += part * part;
    g += 32;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) out[r] = acc;
}
"""


def _grouped(root: Path, source: str = GROUPED) -> KernelFolder:
    return write_folder(root / "grouped", source, ["ceil_div(rows, 4)"], ["32", "4"],
                        [("out", "f32", "out", ["rows"]), ("a", "f32", "in", ["rows", "n"]),
                         ("wts", "f32", "in", ["4"]),
                         ("rows", "i32", "scalar", "rows"), ("n", "i32", "scalar", "n")],
                        {"rows": 9, "n": 136}, [])


def _knobs(result: TemplaterResult) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in result.lifted.params}


def test_the_folder_loads_a_words_activations_before_its_loop() -> None:
    result = offline_template(load_kernel_folder(GEMV))
    assert _knobs(result)["RUN_VEC"] == {
        "kind": "choice", "values": [1, 4], "default": 1,
        "description": "elements of xw each load of an inner loop's run moves, the run loaded "
                       "before the loop (as written: 1)"}
    source = result.lifted.source
    loads = source.index("WbVec<float, RUN_VEC> wb_run0_xw[8 / RUN_VEC];")
    loop = source.index("for (int j = 0; j < 8; j++)")
    assert loads < loop
    between = source[loads:loop]
    assert re.search(r"wb_run0_xw\[wb_r\] = \*reinterpret_cast<const WbVec<float, RUN_VEC>\*>"
                     r"\(&xw\[\(0 \+ wb_r \* RUN_VEC\)\]\);\n#pragma unroll\n\s*$", between), \
        between
    assert "xw[j]" not in source
    assert "wb_run0_xw[(j - 0) / RUN_VEC].v[(j - 0) % RUN_VEC]" in source


def test_a_second_spelling_lifts_two_runs_with_their_constraints(tmp_path: Path) -> None:
    result = offline_template(_grouped(tmp_path))
    knobs = _knobs(result)
    assert knobs["RUN_VEC"]["values"] == [1, 4], result.notes
    # the row at r * n (a size argument), the group at g * 4, the weights at 0
    assert "n % RUN_VEC == 0" in result.lifted.constraints
    assert "4 % RUN_VEC == 0" in result.lifted.constraints
    source = result.lifted.source
    assert "wb_run0_row[(t - 0) / RUN_VEC]" in source and \
        "wb_run1_wts[(t - 0) / RUN_VEC]" in source
    # the author's #pragma unroll stays the loop's only one, the loads before it
    head = source[source.index("WbVec<float, RUN_VEC> wb_run0_row"):
                  source.index("for (int t = 0;")]
    assert head.count("#pragma unroll") == 3, head  # two load loops, the author's


def test_the_knob_offers_the_widest_width_the_runs_allow() -> None:
    """Windows of four columns every two (overlapping): a run of four floats at a multiple
    of two only, so float2 is the widest aligned load (offered beside 1); a float4 at an
    odd group would be 8 bytes off its alignment."""
    lifted = _lift(GROUPED.replace("row[g * GW + t]", "row[2 * g + t]"))
    knobs = {p.name: dict(p.spec) for p in lifted.params}
    assert knobs["RUN_VEC"]["values"] == [1, 2], lifted.notes
    assert "2 % RUN_VEC == 0" in lifted.constraints


@pytest.mark.timeout(600)
def test_the_second_spelling_computes_what_it_computes_as_written(tmp_path: Path) -> None:
    kf = _grouped(tmp_path)
    result = offline_template(kf)
    configs = _checked(result, kf, [
        {"LANES": 8, "WARPS_PER_BLOCK": 2, "RUN_VEC": 4},
        {"LANES": 32, "WARPS_PER_BLOCK": 8, "RUN_VEC": 1, "MIN_BLOCKS_PER_SM": 2}])
    assert {c["RUN_VEC"] for c in configs} == {1, 4}
    plain, *got = _host_runs(kf, result, configs, tmp_path / "runs")
    assert not np.isnan(plain["out"]).any()
    for config, outputs in zip(configs, got, strict=True):
        np.testing.assert_allclose(outputs["out"], plain["out"], rtol=1e-5,
                                   atol=1e-5 * float(np.abs(plain["out"]).max()),
                                   err_msg=f"lift at {config}")


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="k", grid=["ceil_div(rows, 4)"], block=["32", "4"],
                       scalars={"rows": "rows", "n": "n"})


@pytest.mark.parametrize(("old", "new", "why", "at"), [
    # a store in the loop: the loads would move before it
    ("part += row[g * GW + t] * wts[t];", "{ part += row[g * GW + t] * wts[t]; out[r] = part; }",
     "`out[r] = part` stores to memory in the loop", 12),
    # a trip count known only at run time
    ("t <= GW - 1;", "t < n / 64;", "does not run between integer constants", 12),
    # an early exit
    ("part += row[g * GW + t] * wts[t];",
     "{ if (part > 1e30f) break; part += row[g * GW + t] * wts[t]; }",
     "`break;` leaves the loop early", 12),
    # the row read on some trips only; the weights still a run
    ("part += row[g * GW + t] * wts[t];",
     "part += (t % 2 == 0 ? row[g * GW + t] : 0.0f) * wts[t];",
     "`row[g * GW + t]` is not read on every trip", 12),
    # the row through a float2 view: no kernel pointer at an offset
    ("const float* row = a + (size_t)r * n;",
     "const float2* row2 = reinterpret_cast<const float2*>(a + (size_t)r * n);\n"
     "  const float* row = reinterpret_cast<const float*>(row2);",
     "`row` is not a kernel pointer or a fixed offset of one", 13),
    # a local pointer of another element type at an offset of the kernel's
    ("const float* row = a + (size_t)r * n;", "const unsigned char* row = "
     "(const unsigned char*)a;\n  const float* unused = a + (size_t)r * n;",
     "`row` is not a fixed offset of a in its own element type (float)", 6),
])
def test_what_cannot_move_its_reads_is_left_as_written(old: str, new: str, why: str,
                                                       at: int) -> None:
    assert old in GROUPED
    lifted = _lift(GROUPED.replace(old, new))
    notes = [n for n in lifted.notes if n.startswith("RUN_VEC: not applied")]
    assert any(why in n and f"(line {at})" in n for n in notes), lifted.notes
    source = lifted.source
    assert "wb_run0_row" not in source
