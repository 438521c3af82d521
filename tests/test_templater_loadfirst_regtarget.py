"""The register window's interior copy loads its slots first where ptxas may hold them all
(issue 28: dwconv3_nhwc's lift at the expert's pick, 389-398 us against the expert's 357 us
on the H100).

At 2 channels a lane, 4 x 4 outputs a thread, 8 pixels a block, ptxas schedules the window's
36 loads itself (ld.global.nc may move above the outputs' stores): the order the template
writes them in does not decide it, the register target does. Under ``__launch_bounds__(128,
0)`` (MIN_BLOCKS_PER_SM 0, the only value the probe timed) ptxas keeps 96 registers and
issues 21 of the 36 loads before the interior copy's first FFMA; with a minimum of one
resident block (MIN_BLOCKS_PER_SM 1, as the expert writes its ``__launch_bounds__(NTHREADS,
1)``) it takes 115 and issues 33 (the expert: 72 registers and 18 loads first at 0, 126 and
35 at 1; sm_90 cubins, nvdisasm). These tests keep that pick inside the lift's space with the
interior copy written, its registers above the window's live values without a spill, and
every config bit for bit on the host (dwconv3_nhwc and tests/spellings_d's channel-major
spelling).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import corner_configs
from test_corpus_unseen3 import _SPILLS, _ptxas_log
from test_templater_const_via import assert_prints_as_written, write_folder
from test_templater_lane_window_interior import _lift

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

SPELLING = Path(__file__).parent / "spellings_d" / "dw3_chmajor_taps.cu"
#: the expert's pick (VEC 2, PIX 8, ITEMS_X 4, ITEMS_Y 4, TAPS 1) in the lift's knobs
EXPERT = {"LANE_WINDOW": 1, "ITEMS_PER_THREAD": 4, "OUT_Y": 4, "LANE_VEC": 2,
          "OUTER_THREADS": 8, "CONST_VIA": 1}
#: window values at that pick: (4 + 2) x (4 + 2) slots of 2 channels, and the 9 taps and the
#: bias in registers (LANE_REGS 1)
LIVE = 36 * 2 + 10 * 2
_REGS = re.compile(r"Used (\d+) registers")


def _spelling(root: Path) -> tuple[KernelFolder, TemplaterResult]:
    kf = write_folder(root / "dw3_chmajor_taps", SPELLING.read_text(),
                      ["ceil_div(W, 4)", "H"], ["128"],
                      [("dst", "f32", "out", ["H", "W", 32]),
                       ("src", "f32", "in", ["H", "W", 32]), ("bias", "f32", "in", [32]),
                       ("H", "i32", "scalar", "H"), ("W", "i32", "scalar", "W")],
                      {"H": 11, "W": 29}, [("k9", [288])])
    return kf, offline_template(kf)


def _window_configs(result: TemplaterResult, kf: KernelFolder) -> list[dict[str, Any]]:
    """The expert-like window under one and four resident blocks, 2 x 2 outputs at one
    channel, then the corners (the knobs a spelling lacks left out)."""
    base = result.template.default_config()
    names = set(result.template.param_names)
    picks = [{**EXPERT, "MIN_BLOCKS_PER_SM": 1, "LANE_REGS": 1},
             # 128 threads a block either way: four such blocks leave 128 registers a thread
             # (at 64 threads or fewer, four blocks are one block's twin, out of the space)
             {**EXPERT, "MIN_BLOCKS_PER_SM": 4, "OUTER_THREADS": 8 if "LANE_VEC" in names else 4},
             {"LANE_WINDOW": 1, "ITEMS_PER_THREAD": 2, "OUT_Y": 2, "MIN_BLOCKS_PER_SM": 1}]
    out = [{**base, **{k: v for k, v in p.items() if k in names}} for p in picks]
    return out + corner_configs(result.template, kf.env(kf.check_shape, "fp32"))


def test_the_spelling_lifts_the_window_and_its_interior_copy(tmp_path: Path) -> None:
    _kf, result = _spelling(tmp_path)
    names = [p.name for p in result.lifted.params]
    assert {"LANE_WINDOW", "OUT_Y", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"} <= set(names)
    assert any(n.startswith("WINDOW_INTERIOR: applied") and "2 bounds test(s)" in n
               for n in result.notes), result.notes
    # channel-major taps: a lane's channels are not consecutive in k9 (refused, the line)
    assert any(n.startswith("LANE_VEC: not applied") and "(line 19)" in n
               for n in result.notes), result.notes


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["dwconv3_nhwc", "spelling"])
def test_register_targets_print_what_the_kernel_as_written_prints(name: str,
                                                                  tmp_path: Path) -> None:
    kf, result = _spelling(tmp_path) if name == "spelling" else \
        _lift("dwconv3_nhwc", tmp_path)
    assert_prints_as_written(kf, result, _window_configs(result, kf), tmp_path / "run")


@needs_nvcc
@pytest.mark.timeout(300)
def test_one_resident_block_lets_ptxas_hold_the_window(tmp_path: Path) -> None:
    """At the expert's pick, MIN_BLOCKS_PER_SM 1 is in the space with the interior copy
    written; ptxas gives it registers for every live window value (115 measured, 96 at 0),
    no spill at either."""
    kf, result = _lift("dwconv3_nhwc", tmp_path)
    env = kf.env(kf.check_shape, "fp32")
    regs = {}
    for blocks in (0, 1):
        config = {**result.template.default_config(), **EXPERT, "LANE_REGS": 1,
                  "MIN_BLOCKS_PER_SM": blocks}
        assert result.template.space(env).rejection(config) is None, config
        source = result.template.render(config, "fp32").source
        assert "__launch_bounds__((32 / LANE_VEC) * OUTER_THREADS, MIN_BLOCKS_PER_SM)" in \
            source and "  if (wb_inner) {" in source
        log = _ptxas_log(source, tmp_path, f"expert_pick_{blocks}")
        spills = _SPILLS.findall(log)
        assert spills and all(sp == ("0", "0") for sp in spills), log
        regs[blocks] = int(_REGS.findall(log)[0])
    assert regs[1] >= LIVE and regs[1] > regs[0], regs
