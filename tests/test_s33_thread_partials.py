"""One partial a thread of the launch under a fixed grid (issue 28, found while integrating
session 33's reduction work): ``partial[g] = s`` with ``g = blockIdx.x * blockDim.x +
threadIdx.x`` after a grid-stride walk. The kernel reads gridDim (the walk covers its data at
any grid), which used to clear BLOCK_THREADS, so the space ran blocks of up to 1024 threads
under the written grid of 256 blocks: 262,144 partials into an array sized for 65,536, a
write past the output at every block size above 256. BLOCK_THREADS is now refused there with
the line (:func:`workbench.templater.block_outputs.unfollowed_offset`); a walk that stores
only at its own counter keeps it."""

from __future__ import annotations

import pytest

from workbench.core.errors import TemplateError
from workbench.templater import lift_kernel

PER_THREAD = """extern "C" __global__ void k(float* partial, const float* x, int n) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int i = g; i < n; i += gridDim.x * blockDim.x)
    s += x[i] * x[i];
  partial[g] = s;
}
"""
#: the same store through the index written out, and after an early guard on the count
SPELLED_OUT = PER_THREAD.replace("  partial[g] = s;",
                                 "  partial[blockIdx.x * blockDim.x + threadIdx.x] = s;")
#: the walk as a while loop (the lift reads it as its for loop)
WHILE_WALK = PER_THREAD.replace(
    "  for (int i = g; i < n; i += gridDim.x * blockDim.x)\n    s += x[i] * x[i];",
    "  int i = g;\n  while (i < n) { s += x[i] * x[i]; i += gridDim.x * blockDim.x; }")
GRID_STRIDE_ONLY = """extern "C" __global__ void k(float* y, const float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = x[i] * x[i];
}
"""


def _lift(source: str) -> tuple[set[str], tuple[str, ...]]:
    try:
        lifted = lift_kernel(source, entry="k", grid=["256"], block=["256"],
                             scalars={"n": "n"})
    except TemplateError as nothing:
        return set(), (str(nothing),)
    return {p.name for p in lifted.params}, lifted.notes


@pytest.mark.parametrize("source", [PER_THREAD, SPELLED_OUT, WHILE_WALK])
def test_a_store_one_a_thread_of_a_fixed_grid_keeps_its_block(source: str) -> None:
    names, notes = _lift(source)
    assert "BLOCK_THREADS" not in names, notes
    assert any("BLOCK_THREADS: not applied:" in n and "partial[" in n and
               "the grid would stay while each block's share follows the block size" in n
               for n in notes), notes


def test_the_while_spelling_is_a_while_loop() -> None:
    assert "while (i < n)" in WHILE_WALK and "for (" not in WHILE_WALK


def test_a_walk_that_stores_at_its_own_counter_keeps_the_block_knob() -> None:
    names, notes = _lift(GRID_STRIDE_ONLY)
    assert "BLOCK_THREADS" in names, notes
