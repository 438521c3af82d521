"""The lane-variance analysis behind CONST_VIA (workbench/templater/const_lanes.py; issue
28): which ``__constant__`` reads differ between the lanes of a warp, which are one address
a warp, and which the analysis cannot tell, each on a small kernel through ``lift_kernel``
(its findings name the verdict and the line)."""

from __future__ import annotations

import pytest

from workbench.templater import lift_kernel

#: (index expression context, launch block) -> expected verdict. Every kernel reads
#: ``tab[<index>]`` once into y[i]; ``i`` is the thread's flat position.
HEAD = "#define N 64\n__constant__ float tab[N];\n"
CASES: dict[str, tuple[str, list[str], str]] = {
    # the lane itself, through a local and a modulo
    "lane_mod": ("const int c = threadIdx.x % 32; y[i] = tab[c];", ["128"], "lane"),
    # a warp's index: threadIdx.x / 32 in a 1-D block is one value a warp
    "warp_index": ("int wid = threadIdx.x / 32; y[i] = tab[wid];", ["128"], "uniform"),
    "warp_shift": ("y[i] = tab[(threadIdx.x >> 5) + 2 * blockIdx.y];", ["128"], "uniform"),
    # threadIdx.y: one value a warp when the block's x is a whole warp, not when it is 16
    "row_of_wide_block": ("y[i] = tab[threadIdx.y];", ["32", "4"], "uniform"),
    "row_of_narrow_block": ("y[i] = tab[threadIdx.y];", ["16", "4"], "lane"),
    # loop counters with uniform bounds, a while counter stepped by ++
    "for_counter": ("float s = 0.0f; for (int k = 0; k < N; k += 4) s += tab[k]; y[i] = s;",
                    ["128"], "uniform"),
    "while_counter": ("float s = 0.0f; int k = 0; while (k < n % N) { s += tab[k]; ++k; }"
                      " y[i] = s;", ["128"], "uniform"),
    # a counter that starts at the lane
    "lane_strided": ("float s = 0.0f; for (int k = threadIdx.x % 8; k < N; k += 8) "
                     "s += tab[k]; y[i] = s;", ["128"], "lane"),
    # a local set under a lane-dependent condition
    "divergent_set": ("int k = 0; if (threadIdx.x & 1) k = 3; y[i] = tab[k];", ["128"],
                      "lane"),
    # a counter a lane-dependent break cuts short, read after the loop
    "divergent_exit": ("int k = 0; while (k < 8) { if (x[i] > 0.0f) break; ++k; } "
                       "y[i] = tab[k];", ["128"], "unknown"),
    # an index read from memory
    "from_memory": ("y[i] = tab[(int)x[i] & 63];", ["128"], "unknown"),
}


def _kernel(body: str) -> str:
    return HEAD + ("extern \"C\" __global__ void k(float* y, const float* x, int n) {\n"
                   "  int i = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + "
                   "threadIdx.x;\n  if (i >= n) return;\n  " + body + "\n}\n")


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_read_gets_its_verdict(name: str) -> None:
    body, block, want = CASES[name]
    grid = ["ceil_div(n, 128)"]
    lifted = lift_kernel(_kernel(body), entry="k", grid=grid, block=block,
                         scalars={"n": "n"})
    notes = [n for n in lifted.notes if n.startswith("CONST_VIA")]
    assert len(notes) == 1, lifted.notes
    knobs = {p.name for p in lifted.params}
    if want == "lane":
        assert notes[0].startswith("CONST_VIA: applied: tab is read at an index that varies")
        assert "CONST_VIA" in knobs
    elif want == "uniform":
        assert "tab is read at a warp-uniform index everywhere" in notes[0]
        assert "CONST_VIA" not in knobs
    else:  # offered: the copy holds the same bits, the search decides
        assert notes[0].startswith("CONST_VIA: applied: cannot tell whether the lanes of a "
                                   "warp read tab")
        assert "(line 7)" in notes[0] or "(line 6)" in notes[0]
        assert "CONST_VIA" in knobs


def test_the_lane_note_names_the_local_it_came_through() -> None:
    body, block, _want = CASES["lane_mod"]
    lifted = lift_kernel(_kernel(body), entry="k", grid=["ceil_div(n, 128)"], block=block,
                         scalars={"n": "n"})
    note = next(n for n in lifted.notes if n.startswith("CONST_VIA"))
    assert "(`tab[c]`: `c` <- threadIdx.x)" in note and "(line 6)" in note
