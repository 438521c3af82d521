"""Warp-per-row kernels whose lanes stride a segment from an offset the row reads (issue 28;
warp.py, warp_segments.py, warp_chains.py): ``for (j = begin + lane; j < end; j += 32)``.

Two spellings other than the corpus's csr_spmv_warp (tests/test_templater_warp_rows_csr.py):
a segmented sum over segment offsets with the row named by the global warp index (``>> 5``),
the lane ``threadIdx.x & 31`` and the offset written in place (``(lane) + offs[s]``); a
dense row L2 norm in double whose lane is ``threadIdx.x % warpSize`` and whose walk starts at
a local row base (``base + lane`` up to ``base + cols``), four warps from an ``#ifndef``
macro. Each lifts LANES (down to 2 lanes a row: the sub-warp groups of CSR-vector kernels),
the warps per block, ILP (independent sums a lane) and LDG (reads of the const inputs
through the read-only path), and computes on the host what the
kernel as written computes (within a tolerance: a sum's order changes with LANES and ILP) at the default, the all-ends corners and sampled mixes. Offsets that may
differ between the lanes of a row are refused with the line; a loop body that is not one
sum keeps LANES and is refused ILP with its line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    corner_configs,
    host_sample,
    lifted_template,
    run_merged_on_host,
)
from test_corpus_unseen3 import HOST_PRELUDE

from workbench.templater import LiftedSource, lift_kernel

WARP_SIZE = "static const int warpSize = 32;\n"
#: What every host program of :func:`_program` opens with.
_PREFIX = "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE, WARP_SIZE]) + "\n"

# segmented sum: the segment is the global warp index (>> 5, terms in another order), the
# lane `& 31` in place, the offset `offs[s]` read in the loop's start, doubling xor loop, an
# if-block guard and `!lane`
SEGSUM = r"""
extern "C" __global__ void k(float* out, const int* offs, const float* w, int nseg) {
  const int s = (threadIdx.x + blockIdx.x * blockDim.x) >> 5;
  if (s < nseg) {
    float acc = 0.0f;
    for (int i = (threadIdx.x & 31) + offs[s]; i < offs[s + 1]; i += 32) {
      acc += w[i] * w[i] + 1.0f;
    }
    for (int o = 1; o < 32; o <<= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (!(threadIdx.x & 31)) out[s] = acc;
  }
}
"""

# dense row L2 norm in double: warpSize for the lane, the warp and the step, an #ifndef
# macro for the warps a block, a local row base (size_t), `base + lane` up to `base + cols`,
# the halving loop tested bare (`d`)
ROW_NORM = r"""
#ifndef WPB
#define WPB 4
#endif
extern "C" __global__ void k(double* norm, const float* a, int rows, int cols) {
  int ln = threadIdx.x % warpSize;
  int r = threadIdx.x / warpSize + WPB * blockIdx.x;
  if (r >= rows) return;
  const size_t base = (size_t)r * cols;
  double ss = 0.0;
  for (size_t q = base + ln; q < base + cols; q += warpSize) ss += (double)a[q] * a[q];
  for (int d = warpSize / 2; d; d /= 2) ss += __shfl_down_sync(0xffffffff, ss, d);
  if (ln == 0) norm[r] = sqrt(ss);
}
"""

NSEG, ROWS, COLS = 29, 23, 70  # no multiple of a block's rows; rows of 0 .. 150 elements


def _offsets() -> np.ndarray:
    """Segment offsets: empty segments, short ones and a few longer than 64."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 12, size=NSEG)
    lengths[[3, 17]] = [150, 97]
    lengths[[0, 9, 28]] = 0
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def _array(ctype: str, name: str, values: np.ndarray) -> list[str]:
    body = ", ".join(str(int(v)) if ctype == "int" else float(v).hex() for v in values)
    return [f"  static {ctype} {name}[] = {{{body}}};"]


def _program(source: str, case: str, grid: Sequence[int], block: Sequence[int]) -> str:
    """C++ that launches ``source`` (entry ``k``) once on the host on ``case``'s inputs and
    prints every output element in hex (NaN where no thread wrote)."""
    g = ", ".join(f"{int(n)}u" for n in (*grid, 1, 1)[:3])
    b = ", ".join(f"{int(n)}u" for n in (*block, 1, 1)[:3])
    if case == "segsum":
        offs = _offsets()
        w = np.sin(0.37 * np.arange(offs[-1] + 1)).astype(np.float32)
        lines = [*_array("int", "offs", offs), *_array("float", "w", w),
                 f"  std::vector<float> out({NSEG}, NAN);",
                 f"  wb_launch({{{g}}}, {{{b}}}, [&] {{ k(out.data(), offs, w, {NSEG}); }});"]
    else:
        a = (np.cos(0.11 * np.arange(ROWS * COLS)) * (1 + np.arange(ROWS * COLS) % 5))
        lines = [*_array("float", "a", a.astype(np.float32)),
                 f"  std::vector<double> out({ROWS}, NAN);",
                 f"  wb_launch({{{g}}}, {{{b}}}, [&] {{ k(out.data(), a, {ROWS}, {COLS}); }});"]
    lines.append('  for (double v : out) std::printf("%a\\n", v);')
    return "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE, WARP_SIZE, source, "int main() {",
                      *lines, "  return 0;", "}"])


def _host(work: Path, label: str, case: str,
          runs: Sequence[tuple[str, Sequence[int], Sequence[int]]]) -> list[np.ndarray]:
    """What each (source, grid, block) of ``runs`` writes on ``case``'s inputs, from one
    host program (each run's kernel in a namespace of its own)."""
    programs = [_program(source, case, grid, block) for source, grid, block in runs]
    return [np.array([float.fromhex(v) if "nan" not in v else np.nan for v in out.split()])
            for out in run_merged_on_host(work, label, _PREFIX, programs)]


CASES: dict[str, tuple[str, list[str], list[str], dict[str, str], str]] = {
    # source, grid, block, scalars, the warps-a-block knob
    "segsum": (SEGSUM, ["ceil_div(nseg, 2)"], ["64"], {"nseg": "nseg"}, "WARPS_PER_BLOCK"),
    "row_norm": (ROW_NORM, ["ceil_div(rows, 4)"], ["128"], {"rows": "rows", "cols": "cols"},
                 "WPB"),
}
ENVS = {"segsum": {"nseg": NSEG}, "row_norm": {"rows": ROWS, "cols": COLS}}


def _lift(name: str, source: str | None = None) -> LiftedSource:
    text, grid, block, scalars, _w = CASES[name]
    return lift_kernel(source or text, entry="k", grid=grid, block=block, scalars=scalars)


def _knobs(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


@pytest.mark.parametrize("name", sorted(CASES))
def test_own_spellings_lift_the_segment_knobs(name: str) -> None:
    lifted = _lift(name)
    knobs = _knobs(lifted)
    warps = CASES[name][4]
    assert {"LANES", warps, "ILP", "LDG"} <= set(knobs), lifted.notes
    assert knobs["LANES"]["min"] == 2 and "VEC" not in knobs
    assert lifted.grid[0].endswith(f"{warps} * (32 // LANES))")
    body = lifted.source.split("extern")[1]
    assert "warpSize" not in body and "& 31" not in body and "+= 32" not in body


def _configs(name: str, template: Any) -> list[dict[str, Any]]:
    """The default, the corners, then 2 lanes with four sums over 16 warps and 8 lanes with
    two sums in one warp through the read-only path."""
    default, warps = dict(template.default_config()), CASES[name][4]
    return [*corner_configs(template, ENVS[name]),
            {**default, "LANES": 2, "ILP": 4, warps: 16},
            {**default, "LANES": 8, "ILP": 2, "LDG": 1, warps: 1}]


@pytest.mark.parametrize("name", sorted(CASES))
def test_own_spellings_compute_as_written_on_host(name: str, tmp_path: Path) -> None:
    source, _grid, block, _scalars, _w = CASES[name]
    template = lifted_template(_lift(name))
    items = NSEG if name == "segsum" else ROWS
    blocks = -(-items // (int(block[0]) // 32))
    space = template.space(dict(ENVS[name]))
    configs = host_sample(_configs(name, template))
    runs: list[tuple[str, Sequence[int], Sequence[int]]] = [(source, [blocks], [int(block[0])])]
    for config in configs:
        assert space.rejection(config) is None, config
        launch = template.launch_for(config, ENVS[name])
        runs.append((template.render(config, "fp32").source, launch.grid, launch.block))
    want, *got = _host(tmp_path, name, name, runs)
    assert want.shape == (items,) and not np.isnan(want).any()
    for config, outputs in zip(configs, got, strict=True):
        np.testing.assert_allclose(outputs, want, rtol=1e-5, atol=2e-5, err_msg=str(config))


# -- refused: offsets the analysis cannot show the same for every lane of a row -----------

@pytest.mark.parametrize(("old", "new", "why"), [
    # the offset read through the lane's own element: differs between lanes
    ("for (int i = (threadIdx.x & 31) + offs[s]; i < offs[s + 1]; i += 32) {",
     "for (int i = (threadIdx.x & 31) + offs[s + (threadIdx.x & 1)]; i < offs[s + 1]; "
     "i += 32) {", "threadIdx.x is read in"),
    # the offset from a shuffle's result: a call, per lane
    ("    float acc = 0.0f;\n",
     "    float acc = 0.0f;\n    const int b0 = __shfl_sync(0xffffffffu, offs[s], 3);\n",
     None),
])
def test_segment_offsets_it_cannot_show_uniform_are_refused(old: str, new: str,
                                                           why: str | None) -> None:
    assert old in SEGSUM
    changed = SEGSUM.replace(old, new)
    if why is None:  # use the shuffled offset in the start
        changed = changed.replace("(threadIdx.x & 31) + offs[s];", "(threadIdx.x & 31) + b0;")
        why = "`b0` may differ between the lanes of an item"
    lifted = lift_kernel(changed, entry="k", grid=["ceil_div(nseg, 2)"], block=["64"],
                         scalars={"nseg": "nseg"})
    assert "LANES" not in _knobs(lifted) and "ILP" not in _knobs(lifted)
    at = next(i + 1 for i, t in enumerate(changed.splitlines()) if "i += 32" in t)
    found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
    assert found and why in found[0] and f"(line {at})" in found[0], lifted.notes


def test_an_offset_assigned_in_the_kernel_is_refused() -> None:
    changed = ROW_NORM.replace("const size_t base = (size_t)r * cols;",
                               "size_t base = (size_t)r * cols;\n  base += 0;")
    lifted = _lift("row_norm", changed)
    assert "LANES" not in _knobs(lifted)
    found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
    assert found and "`base` may differ between the lanes" in found[0], lifted.notes


def test_a_bound_it_cannot_show_uniform_is_refused() -> None:
    changed = SEGSUM.replace("    float acc = 0.0f;\n",
                             "    float acc = 0.0f;\n    int stop = offs[s + 1];\n    stop -= 0;\n")
    changed = changed.replace("i < offs[s + 1]; i += 32", "i < stop; i += 32")
    lifted = lift_kernel(changed, entry="k", grid=["ceil_div(nseg, 2)"], block=["64"],
                         scalars={"nseg": "nseg"})
    assert "LANES" not in _knobs(lifted)
    at = next(i + 1 for i, t in enumerate(changed.splitlines()) if "i < stop" in t)
    found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
    assert found and "bound `stop`" in found[0] and f"(line {at})" in found[0], lifted.notes


def test_an_unrolled_segment_loop_keeps_lanes_without_ilp() -> None:
    changed = ROW_NORM.replace("  for (size_t q", "#pragma unroll 2\n  for (size_t q")
    lifted = _lift("row_norm", changed)
    knobs = _knobs(lifted)
    assert {"LANES", "LDG"} <= set(knobs) and "ILP" not in knobs, lifted.notes
    refused = [n for n in lifted.notes if n.startswith("ILP: not applied")]
    assert refused and "#pragma unroll 2" in refused[0], lifted.notes


def test_a_segment_loop_that_is_not_one_sum_keeps_lanes_without_ilp() -> None:
    changed = SEGSUM.replace("acc += w[i] * w[i] + 1.0f;", "acc = fmaxf(acc, w[i]);")
    lifted = lift_kernel(changed, entry="k", grid=["ceil_div(nseg, 2)"], block=["64"],
                         scalars={"nseg": "nseg"})
    knobs = _knobs(lifted)
    assert "LANES" in knobs and "ILP" not in knobs, lifted.notes
    at = next(i + 1 for i, t in enumerate(changed.splitlines()) if "fmaxf" in t)
    refused = [n for n in lifted.notes if n.startswith("ILP: not applied")]
    assert refused and "is not `acc += term;`" in refused[0] and f"(line {at})" in refused[0]
