"""Every declaration of several variables is split before the analysis
(workbench/templater/point_split.py; issue 28): ``float dx = .., dy = ..;`` in a loop reads
as two declarations, as ``int x = .., y = ..;`` of the point did, so each family's facts see
each variable in its own statement. Lines the notes name inside their text (``the while loop
at line 44``) are told in the kernel's lines as written, however many lines the split added
before them (workbench/templater/inline_calls.py restores them)."""

from __future__ import annotations

from pathlib import Path

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import split_points

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"

NESTED = """__global__ void k(float* o, const float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float e = 0.0f, *last = o + n - 1;
  for (int s = 0; s < 4; ++s) {
    float dx = p[s] - i, dy = p[s + 1] - i;
    e += dx * dx + dy * dy;
  }
  if (i < n) o[i] = e + *last * 0.0f;
}
"""


def test_a_nested_declaration_of_several_variables_is_split_with_its_line_kept() -> None:
    split = split_points(InlinedSource(NESTED, "k.cu"), "k")
    lines = split.text.splitlines()
    assert lines[2:4] == ["  float e = 0.0f;", "  float *last = o + n - 1;"]
    assert lines[5:7] == ["    float dx = p[s] - i;", "    float dy = p[s + 1] - i;"]
    assert [split.baseline_line(n) for n in range(1, 12)] == [1, 2, 3, 3, 4, 5, 5, 6, 7, 8, 9]


def test_a_line_inside_a_note_is_the_kernels_line_as_written() -> None:
    """implied_vol_bisect declares four values in one statement before its while loop (line
    44 as written): the split moves the loop 4 lines down in the text the analysis reads, the
    note still names line 44."""
    folder = ROOT / "corpus_compute_unseen5" / "implied_vol_bisect"
    written = (folder / "baseline.cu").read_text().splitlines()
    assert written[43].lstrip().startswith("while (")
    result = offline_template(load_kernel_folder(folder))
    note = next(n for n in result.notes if n.startswith("ITEMS_PER_THREAD: applied"))
    assert "the while loop at line 44 is left by each item on its own" in note, note
