"""Session 34: register rows and columns for a true (flipped) 2-D convolution.

conv5x5_zpad_batch (set 27; 0.36x of the expert on the H200 at first contact) reads its
window as ``sy = y + kHalf - i``, ``sx = x + kHalf - j``: the filter flipped, the value
reading the point and the window index only through ``y - i`` and ``x - j``. The window
family (:mod:`workbench.templater.conv`) read only ``y + i``, so the kernel got ITEMS_X /
ITEMS_Y. A window loop is now marked ``flipped`` where the value reads it only through the
difference (a nest without a channel loop; :func:`~workbench.templater.conv._roles`,
``_columns``): the rewrite walks the OUT_Y + 4 input rows (OUT_X + 4 columns) downwards,
tap ``wb_r + k - (OUT_Y - 1)`` of output ``k`` at step ``wb_r``, so every output still adds
its taps in the written order (i, then j) and every config is bit-identical to the kernel as
written; USE_SMEM's tile still holds the block's inputs upwards (the thread reads it from
the top). The kernel's store goes through a local pointer ``float *dst = out + blockIdx.z *
planeSize`` (``conv._output_base``: a pointer set once into an output argument, not moving
with the point), and its work sits inside ``if (x < width && y < height) {..}``.

Host (g++): the corpus kernel and two respellings (tests/spellings_s34_zpad/: macros, an
early return, a size_t plane index and ``continue`` skips; a correlation-order window
against the mirrored filter ``w[K - 1 - i][K - 1 - j]`` through a zero-padding helper) bit
for bit against the kernels as written at the default, a mix of knobs and the all-ends
configs' first and last; and a third, mixed: the rows flipped, the columns upwards against
``c_weights[i][kTaps - 1 - j]``, read through ``fmaf``. The macro respelling declares its plane offset
after the early return: USE_SMEM's fill re-declares it (session 35,
tests/test_s35_conv_late_plane.py; a gap until then).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen27
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

KERNEL = held_back_unseen27.SET.root / "conv5x5_zpad_batch"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s34_zpad"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM", "MIN_BLOCKS_PER_SM"}
#: name -> (the knobs it lifts, the mixes its host check runs)
CASES: dict[str, tuple[set[str], list[dict[str, int]]]] = {
    "conv5x5_zpad_batch": (KNOBS, [
        {"OUT_Y": 4, "USE_SMEM": 1},
        {"OUT_Y": 2, "OUT_X": 4, "USE_SMEM": 0, "BLOCK_X": 32, "BLOCK_Y": 4},
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 8, "BLOCK_Y": 4},
        {"OUT_Y": 16, "USE_SMEM": 1, "BLOCK_X": 128, "BLOCK_Y": 1,
         "MIN_BLOCKS_PER_SM": 4}]),
    "zpad_conv5_macro_skip": (KNOBS, [
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 1},
        {"OUT_Y": 16, "BLOCK_X": 32, "BLOCK_Y": 2}]),
    "zpad_conv5_rows_flipped_only": (KNOBS, [
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 1, "BLOCK_X": 8, "BLOCK_Y": 8},
        {"OUT_Y": 2, "OUT_X": 2, "USE_SMEM": 0}]),
    "zpad_conv5_mirrored_helper": (KNOBS, [
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1},
        {"OUT_Y": 8, "USE_SMEM": 0, "BLOCK_X": 64, "BLOCK_Y": 2}]),
}


def _folder(name: str, root: Path) -> KernelFolder:
    if name == "conv5x5_zpad_batch":
        return load_kernel_folder(KERNEL)
    return respelled(KERNEL, root, (SPELLINGS / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_flipped_window_lifts_rows_and_columns(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    assert {p.name for p in lifted.params} == CASES[name][0], lifted.notes
    assert any(n.startswith("OUT_Y: applied: each thread computes OUT_Y consecutive rows of "
                            "the 5 x 5 window sum") for n in lifted.notes), lifted.notes
    assert "ITEMS_Y" not in {p.name for p in lifted.params}
    flipped = name != "zpad_conv5_mirrored_helper"  # the mirrored filter reads y + i
    assert any(("at input row y - i" in n) == flipped for n in lifted.notes
               if n.startswith("OUT_Y: applied")), lifted.notes


_FLIP = """#define K 3
extern "C" __global__ void k(float *out, const float *in, const float *w, int n, int h)
{{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= n || y >= h) return;
    float s = 0.0f;
    for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j) {{
            int r = {row}, c = {col};
            if (r >= 0 && r < h && c >= 0 && c < n) s += w[i * K + j] * in[r * n + c];
        }}
    out[y * n + x] = s;
}}
"""


@pytest.mark.parametrize(("row", "col", "lifts"), [
    ("y + 1 - i", "x + 1 - j", {"OUT_Y", "OUT_X"}),  # both flipped
    ("y - 1 + i", "x + 1 - j", {"OUT_Y", "OUT_X"}),  # rows upwards, columns flipped
    ("y + 1 - i", "x - 1 + j", {"OUT_Y", "OUT_X"}),  # rows flipped, columns upwards
    ("y + 1 - 2 * i", "x + 1 - j", set()),  # a stride of 2: not a window
    ("y + 1 - i", "x + 1 - j + i", set()),  # a column reading the row index
])
def test_which_windows_read_as_flipped(row: str, col: str, lifts: set[str]) -> None:
    lifted = lift_kernel(_FLIP.format(row=row, col=col), entry="k",
                         grid=["ceil_div(n, 16)", "ceil_div(h, 16)"], block=["16", "16"],
                         scalars={"n": "n", "h": "h"})
    names = {p.name for p in lifted.params}
    assert names & {"OUT_Y", "OUT_X"} == lifts, lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_flipped_window_computes_as_written(name: str, tmp_path: Path,
                                                host_flags: tuple[str, ...]  # noqa: F811
                                                ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), CASES[name][1])
    if not FULL_MATRIX:
        configs = configs[:4] + configs[-2:] if name == "conv5x5_zpad_batch" else configs[:3]
    assert same_as_written(kf, template, configs, held_back_unseen27.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)
