"""Session 35: USE_SMEM where the plane's offset is declared after the bounds check.

A zero-padded window over a batch of planes (plane on blockIdx.z) is often written with the
plane's offset computed after the early return (``if (x >= W || y >= H) return; int plane
= blockIdx.z * H * W;``) and added inside the tap's bounds test (``in[plane + sy * W +
sx]``). The window family (:mod:`workbench.templater.conv`) lifted OUT_Y / OUT_X there but
no USE_SMEM: its tile is filled before the check, where ``plane`` is not declared yet. The
fill now re-declares the declarations after the check that the value reads where they are
the same for every thread of the block (:func:`~workbench.templater.conv.fill_blocker`:
no read of memory, no call, no thread index; a local derived from the thread's point is
refused as before), in the written order.

Kernels (tests/spellings_s35_conv/, each on set 27's conv5x5_zpad_batch folder: planes of
width x height, a 5 x 5 ``__constant__`` filter): zpad3_plane_late (a 3 x 3 filter, the
textbook form above), respelled twice: zpad5_plane_pointer_late (a true 5 x 5 convolution,
macros, the plane's size and pointer both after the return, size_t, ``continue`` skips) and
zpad5_plane_guarded_helper (an ``if`` around the work, a 64-bit offset declared inside it,
read through a zero-padding helper taking the offset, ``fmaf``); and a refusal: an offset
after the check that reads memory (a per-plane table) or the thread index keeps USE_SMEM
out, noted with the part in the way. Host (g++): bit for bit against the kernels as written
at the default, mixes and the all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen27
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import lift_kernel, offline_template

FOLDER = held_back_unseen27.SET.root / "conv5x5_zpad_batch"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_conv"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM", "MIN_BLOCKS_PER_SM"}
#: name -> the mixes its host check runs
CASES: dict[str, list[dict[str, int]]] = {
    "zpad3_plane_late": [
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1},
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 8, "BLOCK_Y": 4},
        {"OUT_Y": 2, "OUT_X": 4, "USE_SMEM": 0, "BLOCK_X": 32, "BLOCK_Y": 4}],
    "zpad5_plane_pointer_late": [
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 1, "BLOCK_X": 8, "BLOCK_Y": 8},
        {"OUT_Y": 2, "OUT_X": 1, "USE_SMEM": 1}],
    "zpad5_plane_guarded_helper": [
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 16, "BLOCK_Y": 4},
        {"OUT_Y": 16, "OUT_X": 1, "USE_SMEM": 1, "BLOCK_X": 128, "BLOCK_Y": 1}],
}


def _folder(name: str, root: Path) -> KernelFolder:
    return respelled(FOLDER, root, (SPELLINGS / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_late_plane_offset_lifts_the_tile(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert any(n.startswith("USE_SMEM: applied") for n in lifted.notes), lifted.notes


_TABLE = """
__constant__ float c_weights[5][5];
__constant__ int c_planes[8];
extern "C" __global__ void k(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    int plane = %s;
    float acc = 0.0f;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            int sy = y + i - 1, sx = x + j - 1;
            if (sy >= 0 && sy < H && sx >= 0 && sx < W)
                acc += c_weights[i][j] * in[plane + sy * W + sx];
        }
    out[y * W + x] = acc;
}
"""


@pytest.mark.parametrize(("plane", "tile"), [
    ("blockIdx.z * H * W", True),
    ("c_planes[blockIdx.z]", False),  # a read: the fill would read it for every element
    ("(blockIdx.z + threadIdx.z) * H * W", False),  # the thread index
])
def test_which_late_offsets_the_fill_redeclares(plane: str, tile: bool) -> None:
    lifted = lift_kernel(_TABLE % plane, entry="k",
                         grid=["ceil_div(W, 16)", "ceil_div(H, 16)", "4"], block=["16", "16", "1"],
                         scalars={"W": "W", "H": "H"})
    names = {p.name for p in lifted.params}
    assert {"OUT_Y", "OUT_X"} <= names, lifted.notes
    assert ("USE_SMEM" in names) == tile, lifted.notes
    if not tile:
        assert any(n.startswith("USE_SMEM: not applied: the value reads plane, declared after "
                                "the bounds check") and "cannot run in the block's fill" in n
                   for n in lifted.notes), lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_late_plane_offset_computes_as_written(name: str, tmp_path: Path,
                                                 host_flags: tuple[str, ...]  # noqa: F811
                                                 ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), CASES[name])
    if not FULL_MATRIX:
        configs = configs[:len(CASES[name]) + 1] + configs[-1:]
    assert same_as_written(kf, template, configs, held_back_unseen27.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)
