"""Session 35: dilated ("a trous") windows in the window family (OUT_Y, OUT_X, USE_SMEM).

Set 28's dil2_conv5_valid sums a 5 x 5 filter at dilation 2 (``in[rowStart + c * DIL]``,
``rowStart = plane + (oy + r * DIL) * W + ox`` declared in the row loop): the family
(:mod:`workbench.templater.conv`) lifted nothing of it, its value reading the point and the
window only through ``y + D * i`` / ``x + D * j``. :mod:`workbench.templater.conv_dilate`
reads that step (a literal or a compile-time constant) and walks the ``OUT_Y + D * (n - 1)``
input rows of a thread's consecutive outputs once, output ``k`` taking input ``s`` through
tap ``(s - k) / D`` where that is whole (each output's taps in the written order; a row no
output of the thread needs is skipped at compile time). USE_SMEM's tile carries the dilated
apron (``D * (n - 1)``).

Kernels: the corpus folder itself and two respellings under tests/spellings_s35_dil/
(dil3_conv3_constexpr: a 3 x 3 filter at dilation 3 with constexpr sizes, int indices and
plain 2-D indexing; dil2_rowptr_helper: a 5 x 3 filter at dilation 2 along rows and 1 along
columns, the row pointer ``const float *row = in + ...`` and a helper reading the tap).
A third, dil2_zpad_skip, pads with zeros around each output (``continue`` skips in both
loops, taps at -2, 0, +2): the skips' conditions read the shifted point as the value does.
Gaps asserted: a dilated window inside a channel loop lifts no OUT_Y (noted); a dilated tap
reading two inputs lifts OUT_Y / OUT_X but no tile per read (noted).
Host (g++): bit for bit against the kernels as written at the default, mixes and the
all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen28
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

FOLDER = held_back_unseen28.SET.root / "dil2_conv5_valid"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_dil"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM", "MIN_BLOCKS_PER_SM"}
#: name ("" the corpus kernel as written) -> the mixes its host check runs
CASES: dict[str, list[dict[str, int]]] = {
    "": [
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 1},  # the expert's pick
        {"OUT_Y": 2, "OUT_X": 4, "USE_SMEM": 0, "BLOCK_Y": 2},
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 16, "BLOCK_Y": 4},
        {"OUT_Y": 16, "OUT_X": 1, "USE_SMEM": 1, "BLOCK_X": 64, "BLOCK_Y": 1},
        {"OUT_Y": 1, "OUT_X": 1, "USE_SMEM": 1}],
    "dil3_conv3_constexpr": [
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 1, "BLOCK_X": 8, "BLOCK_Y": 8},
        {"OUT_Y": 2, "OUT_X": 2, "USE_SMEM": 0}],
    "dil2_zpad_skip": [
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 16, "BLOCK_Y": 4},
        {"OUT_Y": 8, "OUT_X": 1, "USE_SMEM": 0}],
    "dil2_rowptr_helper": [
        {"OUT_Y": 8, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 16, "BLOCK_Y": 4},
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 0}],
}


def _folder(name: str, root: Path) -> KernelFolder:
    if not name:
        return load_kernel_folder(FOLDER)
    return respelled(FOLDER, root, (SPELLINGS / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_dilated_window_lifts(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    dilated = ("OUT_Y", "USE_SMEM") if name == "dil2_rowptr_helper" else \
        ("OUT_Y", "OUT_X", "USE_SMEM")  # its columns are not dilated
    for knob in dilated:
        assert any(n.startswith(f"{knob}: applied") and "dilation" in n
                   for n in lifted.notes), (knob, lifted.notes)


_CHANNELS = """
__constant__ float c_w[4 * 9];
extern "C" __global__ void k(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W - 4 || y >= H - 4) return;
    float acc = 0.0f;
    for (int ch = 0; ch < 4; ++ch)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                acc += c_w[ch * 9 + i * 3 + j] * in[(ch * H + y + 2 * i) * W + x + 2 * j];
    out[y * W + x] = acc;
}
"""


def test_a_dilated_window_in_a_channel_loop_is_a_gap() -> None:
    """Gap: a dilated window inside a channel loop lifts no OUT_Y (noted)."""
    lifted = lift_kernel(_CHANNELS, entry="k", grid=["ceil_div(W, 16)", "ceil_div(H, 16)"],
                         block=["16", "16"], scalars={"W": "W", "H": "H"})
    assert "OUT_Y" not in {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith("OUT_Y: not applied: the window reads y + 2 * i (dilated): "
                            "modelled without a channel loop around it") for n in lifted.notes), \
        lifted.notes


_TWO_INPUTS = """
__constant__ float c_w[9];
extern "C" __global__ void k(float *out, const float *a, const float *b, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W - 4 || y >= H - 4) return;
    float acc = 0.0f;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            acc += c_w[i * 3 + j] * (a[(y + 2 * i) * W + x + 2 * j] - b[(y + 2 * i) * W + x + 2 * j]);
    out[y * W + x] = acc;
}
"""


def test_a_dilated_window_of_two_inputs_has_no_tiles() -> None:
    """Gap: a dilated tap reading two inputs lifts OUT_Y / OUT_X, no tile per read."""
    lifted = lift_kernel(_TWO_INPUTS, entry="k", grid=["ceil_div(W, 16)", "ceil_div(H, 16)"],
                         block=["16", "16"], scalars={"W": "W", "H": "H"})
    assert {"OUT_Y", "OUT_X"} <= {p.name for p in lifted.params}, lifted.notes
    assert "USE_SMEM" not in {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith("USE_SMEM: not applied: the tap value reads a, b") and
               "a tile per read is modelled for a window read without dilation" in n
               for n in lifted.notes), lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_dilated_window_computes_as_written(name: str, tmp_path: Path,
                                              host_flags: tuple[str, ...]  # noqa: F811
                                              ) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), CASES[name])
    if not FULL_MATRIX:
        configs = configs[:len(CASES[name]) + 1] + configs[-1:]
    assert same_as_written(kf, template, configs, held_back_unseen28.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)
