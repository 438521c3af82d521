"""First contact with held-back set 16's Collatz step counts (issue 28):
benchmarks/corpus_compute_unseen16/collatz_steps runs ``for (;;) { if (v <= 1ull || count ==
MAX_STEPS) break; collatz_step(v, count); }``. The items family shares that loop (each item
leaves it by its own exit, a select keeps the state it left with), but CHECK_EVERY read only
series loops (:mod:`workbench.templater.ilp_series_exit`: the exit not one test at the end of
a trip, line 22), so the lift had no knob for the expert's UNROLL (guarded steps between
checks of the exit).
workbench/templater/ilp_guarded_trips.py: a loop with no header test, left only by ``if (C)
break;`` exits in its body, runs CHECK_EVERY trips between its all-items-left tests, every
trip testing each item's exits in place: exact, no extra trip changes an item (refused: a
counter the items share, a barrier; a header test is not read).
Pure: the folder's lift and a second spelling (``while (true)``, two exits, a ternary step,
``if (tid < n) { ... }``, a cap of 100 the check shape's orbits reach) gain CHECK_EVERY;
refusals name their line. Host (g++): both lifts at the default, the expert's pick in the
lift's knobs and a mix of every knob, and the all-ends corners (first and last; every one
under WORKBENCH_FULL_MATRIX=1), bit for bit against the kernel as written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import held_back_unseen16
import pytest
from held_back_harness import respelled, same_as_written
from helpers_nvcc import needs_nvcc
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import lift_default_shape

FOLDER = held_back_unseen16.SET.root / "collatz_steps"
KNOBS = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "CHECK_EVERY", "BRANCHLESS", "MIN_BLOCKS_PER_SM")
#: The expert's H200 pick without its domain shortcut (128 threads, one orbit, one step a
#: check), then two orbits of 64 threads four steps a check, both sides of the step selected
#: (three blocks at the check shape's 301 starts, the last partly past them); a spelling
#: without one of these knobs takes the rest.
MIXES = [{"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "CHECK_EVERY": 1},
         {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "CHECK_EVERY": 4, "BRANCHLESS": 1}]


#: The same count by another hand: a ``while (true)`` left by two exits, the step a ternary
#: on ``x % 2``, the work under ``if (tid < n)``, and a cap of 100 steps that about half the
#: check shape's orbits reach (so the cap's exit runs inside grouped trips too).
SPELLING = """#define CAP 100
extern "C" __global__ void collatz_steps(int* steps, const unsigned* start, int n) {
  int tid = threadIdx.x + blockDim.x * blockIdx.x;
  if (tid < n) {
    unsigned long long x = (unsigned long long)start[tid];
    int k = 0;
    while (true) {
      if (x == 1ull || x == 0ull) break;
      x = (x % 2ull == 0ull) ? x / 2ull : 3ull * x + 1ull;
      k++;
      if (k >= CAP) break;
    }
    steps[tid] = k;
  }
}
"""


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="collatz_steps", grid=["ceil_div(n, 128)"],
                         block=["128"], scalars={"n": "n"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_groups_the_guarded_steps() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "for (int wb_chk = 0; wb_chk < CHECK_EVERY; ++wb_chk) {" in lifted.source
    assert any(n.startswith("CHECK_EVERY: applied: CHECK_EVERY trips of the loop") and
               n.endswith("(line 21)") for n in lifted.notes), lifted.notes


def test_the_spelling_groups_the_guarded_steps() -> None:
    names, notes, source = _lift(SPELLING)
    assert "CHECK_EVERY" in names and "ITEMS_PER_THREAD" in names, notes
    group = source.index("for (int wb_chk = 0; wb_chk < CHECK_EVERY; ++wb_chk) {")
    # both exits stay inside every trip of the group, tested per item
    assert source.index("x[wb_it] == 1ull", group) < source.index("if (wb_all_done) break;",
                                                                   group)
    assert source.index("k[wb_it] >= CAP", group) < source.index("if (wb_all_done) break;",
                                                                  group)


#: The spelling with its first exit as the loop's header test (``while (x > 1ull)``): each
#: item tests it before the loop and after every trip of a group.
HEADER = SPELLING.replace("    while (true) {\n      if (x == 1ull || x == 0ull) break;\n",
                          "    while (x > 1ull) {\n")


def test_a_header_test_runs_after_every_trip_of_the_group() -> None:
    names, notes, source = _lift(HEADER)
    assert "CHECK_EVERY" in names, notes
    test = "wb_done[wb_it] = wb_done[wb_it] | !(x[wb_it] > 1ull);  // its condition, as written"
    group = source.index("for (int wb_chk = 0; wb_chk < CHECK_EVERY; ++wb_chk) {")
    assert source.index(test) < source.index("while (true) {") < group  # before the first trip
    assert group < source.index(test, group) < source.index("    }\n    wb_all_done = true;")


def test_a_counter_the_items_share_stays_ungrouped() -> None:
    """``t`` steps once a shared trip, unread after the loop: extra trips after every item
    left would step it past every trip an item ran."""
    source = SPELLING.replace("    int k = 0;\n", "    int k = 0;\n    int t = 0;\n").replace(
        "      k++;\n      if (k >= CAP) break;\n",
        "      k = k + 1;\n      t++;\n      if (t >= CAP || x == 7ull) break;\n")
    names, notes, _ = _lift(source)
    assert "ITEMS_PER_THREAD" in names and "CHECK_EVERY" not in names, notes
    assert any(n.startswith("CHECK_EVERY: not applied: the exit test once every few trips: ")
               and "; guarded trips between exit checks (line 8): `t` is a counter the items "
               "share: a trip after every item left would step it past every trip an item ran"
               in n for n in notes), notes


ONE = "ITEMS_PER_THREAD == 1 && CHECK_EVERY == 1"


@pytest.mark.parametrize("source", [
    pytest.param(None, id="folder"), pytest.param(SPELLING, id="spelling")])
def test_one_item_one_trip_a_check_is_the_loop_as_written(source: str | None) -> None:
    """At ITEMS_PER_THREAD 1 and CHECK_EVERY 1 (the default) an exit jumps past the loop
    before the step, as ``break`` does as written (no step is run and taken back), and the
    select that restores a left item's state runs only at other configs (the H200 ran the default 0.75x of the kernel: 21 SASS a
    step against 17)."""
    text = offline_template(load_kernel_folder(FOLDER)).lifted.source if source is None \
        else _lift(source)[2]
    group = text.index("for (int wb_chk = 0; wb_chk < CHECK_EVERY; ++wb_chk) {")
    jump = text.index(f"if (({ONE}) && wb_done[wb_it]) goto wb_left_", group)
    label = text[jump:].split("goto ", 1)[1].split(";", 1)[0]
    step = "collatz_step" if source is None else "x[wb_it] = (x[wb_it] % 2ull"
    assert jump < text.index("++count[wb_it]" if source is None else step, group)
    assert text.count(f"goto {label};") == (1 if source is None else 2)
    assert text.index(f"goto {label};") < text.index(f"{label}:;") < text.index(
        "steps[", group)
    restore = text.index(f"if (!({ONE})) {{  // one item: it is in the loop here", group)
    assert text.index(" ? wb_keep_", restore) < text.index("if (wb_all_done) break;", group)


def _step_loop(source: str, work: Path) -> int:
    """SASS instructions (NOPs left out) of the innermost loop of ``source``'s
    collatz_steps on sm_90: from a label to the branch back to it (nvdisasm's labels)."""
    cu, cubin = work / "k.cu", work / "k.cubin"
    cu.write_text(source)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "--std=c++17", "-o", str(cubin),
                    str(cu)], check=True, capture_output=True)
    sass = subprocess.run(["nvdisasm", "-c", str(cubin)], check=True, capture_output=True,
                          text=True).stdout
    at: dict[str, int] = {}
    loops: list[int] = []
    count = 0
    for line in sass.splitlines():
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            at[label.group(1)] = count
        elif re.search(r"/\*[0-9a-f]{4,}\*/\s+(?!NOP)", line):
            count += 1
            back = re.search(r"\bBRA\b[^`]*`\((\.L_x_\d+)\)", line)
            if back and back.group(1) in at and count - at[back.group(1)] > 2:
                loops.append(count - at[back.group(1)])
    assert loops, sass
    return min(loops)


@needs_nvcc
@pytest.mark.skipif(shutil.which("nvdisasm") is None, reason="needs nvdisasm (SASS labels)")
def test_the_default_steps_as_the_kernel_as_written(tmp_path: Path) -> None:
    """sm_90: the default's step loop is the plain kernel's instruction for instruction in
    count (before: 21 a step against 17, the select restoring a left item's state and its
    copies), and its registers are the plain kernel's."""
    kf = load_kernel_folder(FOLDER)
    template = offline_template(kf).template
    default = template.render(template.default_config(), "fp32").source
    plain = kf.baseline.render({}, "fp32").source
    (tmp_path / "lift").mkdir()
    (tmp_path / "plain").mkdir()
    assert _step_loop(default, tmp_path / "lift") == _step_loop(plain, tmp_path / "plain")
    row = lift_default_shape.compare_folder(FOLDER, "sm_90", tmp_path)
    assert row.default.regs_per_thread == row.plain.regs_per_thread, \
        lift_default_shape.format_rows([row])


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    assert "CHECK_EVERY" in template.param_names
    mixes = [{k: v for k, v in m.items() if k in template.param_names} for m in MIXES]
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    return same_as_written(kf, template, configs, held_back_unseen16.SET.host_source, tmp_path,
                           flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 4


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_spelling_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SPELLING)
    assert _same_outputs(kf, tmp_path, host_flags) >= 4


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_header_spelling_computes_as_written(tmp_path: Path,
                                                 host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", HEADER)
    assert _same_outputs(kf, tmp_path, host_flags) >= 4
