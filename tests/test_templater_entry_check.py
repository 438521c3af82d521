"""The offline templater refuses a lift the kernel folder's reader cannot follow (pure tier).

`propose --write` checks that the written template holds an ``extern "C"`` kernel named as
the folder's entry; a lift whose text the reader misreads passed the gate on the GPU and was
then refused at the write (dwconv3_nhwc on the H100, 2026-11-27 16:34Z: a branch whose brace
opened inside ``#ifdef __CUDA_ARCH__ ... #else ... #endif``). offline.entry_problem makes the
same check when the lift is made, where the host's tests see it."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.offline import entry_problem

ROOT = Path(__file__).resolve().parents[1]

BALANCED = '''extern "C" __global__ void k(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool ok = i < n;
#ifdef __CUDA_ARCH__
  ok = __all_sync(__activemask(), ok);
#endif
  if (ok) {
    y[i] = 1.0f;
  }
}
'''

# the same branch with its brace opened on both sides of the conditional
SPLIT_BRACE = BALANCED.replace(
    "#ifdef __CUDA_ARCH__\n  ok = __all_sync(__activemask(), ok);\n#endif\n  if (ok) {\n",
    "#ifdef __CUDA_ARCH__\n  if (__all_sync(__activemask(), ok)) {\n#else\n  if (ok) {\n#endif\n")


def test_a_kernel_the_reader_follows_has_no_problem() -> None:
    assert entry_problem(BALANCED, "k", "template.cu") is None


def test_a_brace_opened_inside_a_conditional_is_named() -> None:
    assert SPLIT_BRACE != BALANCED
    problem = entry_problem(SPLIT_BRACE, "k", "template.cu")
    assert problem is not None and problem.startswith("template.cu: ") and \
        'extern "C" __global__ function named k' in problem


def test_another_entry_name_is_named() -> None:
    problem = entry_problem(BALANCED, "kernel_b", "template.cu")
    assert problem is not None and "named kernel_b" in problem


@pytest.mark.parametrize("folder", ["corpus_compute_unseen6/dwconv3_nhwc",
                                    "corpus_compute_unseen7/conv1d_mix7"])
def test_the_interior_copies_lift_to_text_the_reader_follows(folder: str) -> None:
    """Both interior copies take a warp's vote: their lifts must read as the entry kernel."""
    kf = load_kernel_folder(ROOT / "benchmarks" / folder)
    result = offline_template(kf)
    assert "__all_sync(__activemask()" in result.template.source
    assert entry_problem(result.template.source, kf.baseline.entry, "template.cu") is None
