"""The work of an apron kernel's output that no output changes is made once a thread before
the outputs' loops (workbench.templater.apron_hoist): ncc_patch8's template mean and energy
leave the loop, its window sums (written by the work after them) stay, and so does
corr7x7_bank4's accumulator array, written element by element (``acc[f] += ..``). The host
runs of both folders at OUT_Y > 1 are in tests/test_templater_first23_ncc.py and the corr7
tests."""

from __future__ import annotations

from pathlib import Path

import held_back_unseen17
import held_back_unseen23

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template

_LOOPS = "// OUT_Y x OUT_X outputs per thread"


def _outside_the_loops(source: str, line: str) -> bool:
    """Whether each copy of ``line`` stands before an outputs' loop nest (the INTERIOR and
    general copies of the work each have one), none inside one."""
    at = [i for i in range(len(source)) if source.startswith(line, i)]
    return bool(at) and all(source.find(_LOOPS, i) != -1 and
                            source.find(_LOOPS, i) < source.find("for (int wb_oy", i)
                            for i in at)


def _source(folder: str, root: Path) -> str:
    return offline_template(load_kernel_folder(root / folder)).template.source


def test_the_templates_sums_are_made_once_and_the_window_sums_per_output() -> None:
    source = _source("ncc_patch8", held_back_unseen23.SET.root)
    for line in ("float tsum = 0.0f;", "const float tmean = tsum * (1.0f / (PATCH * PATCH));",
                 "float tss = 0.0f;"):
        assert _outside_the_loops(source, line), line
    for line in ("float sI = 0.0f;", "float sIT = 0.0f;", "const float var = sII"):
        assert line in source and not _outside_the_loops(source, line), line


def test_an_accumulator_array_written_by_element_stays_per_output() -> None:
    source = _source("corr7x7_bank4", held_back_unseen17.SET.root)
    line = "float acc[NF] = {0.0f, 0.0f, 0.0f, 0.0f};"
    assert line in source and not _outside_the_loops(source, line)
