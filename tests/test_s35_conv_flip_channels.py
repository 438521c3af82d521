"""Session 35: a true (flipped) 2-D convolution inside a channel loop.

Session 34 read a window loop as ``flipped`` (the value reads the point and the loop only
through ``y - i``: ``in[y + R - i]``) where no channel loop sits around the window. A
multi-channel NCHW convolution written the textbook way (``for (c) for (i) for (j)``,
``sy = y + R - i``) then lifted ITEMS_X / ITEMS_Y only. :func:`workbench.templater.conv._roles`
now reads the row loop as flipped among three loops too (the channel loop the remaining
one, the columns through ``x + j`` or ``x - j``), and what walks the window beside the
taps follows the walk: the kept reads' fill (:mod:`.conv_fold_keep`) runs the walk's rows
and columns (``_walk``, ``_first``), the per-channel refill (USE_SMEM = 2) stores each
tile row's input upwards as USE_SMEM = 1's fill does (``_tile_rows``).

Kernels (tests/spellings_s35_conv/, each on set 4's conv5_channels folder: out [h, w], in
[4, h, w], 100 weights in constant memory): flip_channels_nchw (the textbook form),
respelled twice: flip_channels_constexpr (constexpr sizes, size_t plane pointer, ``continue``
skips, a per-channel filter pointer), flip_channels_helper (the channel loop between the
window's rows and columns, a zero-padding helper, ``fmaf``, an ``if`` around the work);
and flip_bank_max (the largest response of a bank of 4 flipped filters: a fold after each
filter's taps, the input read kept in registers across the filters); flip_channels_inner
(the channel loop innermost) and flip_channels_cols_only (rows upwards, columns flipped:
OUT_X was refused inside a channel loop before). Each is checked bit
for bit against the kernel as written on the host (g++) at the default, mixes and the
all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen4
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template

FOLDER = held_back_unseen4.SET.root / "conv5_channels"
SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_conv"
BASE = {"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "MIN_BLOCKS_PER_SM"}
#: name -> (the knobs it lifts, the mixes its host check runs)
CASES: dict[str, tuple[set[str], list[dict[str, int]]]] = {
    "flip_channels_nchw": (BASE | {"USE_SMEM"}, [
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1},
        {"OUT_Y": 2, "OUT_X": 4, "USE_SMEM": 2, "BLOCK_X": 32, "BLOCK_Y": 4},
        {"OUT_Y": 8, "OUT_X": 1, "USE_SMEM": 0, "BLOCK_X": 8, "BLOCK_Y": 8}]),
    "flip_channels_constexpr": (BASE | {"USE_SMEM"}, [
        {"OUT_Y": 4, "OUT_X": 4, "USE_SMEM": 2, "BLOCK_X": 8, "BLOCK_Y": 4},
        {"OUT_Y": 2, "OUT_X": 2, "USE_SMEM": 1}]),
    "flip_channels_helper": (BASE | {"USE_SMEM"}, [
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 16, "BLOCK_Y": 4},
        {"OUT_Y": 2, "OUT_X": 4, "USE_SMEM": 0}]),
    "flip_channels_inner": (BASE | {"USE_SMEM"}, [
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 8, "BLOCK_Y": 8}]),
    "flip_channels_cols_only": (BASE | {"USE_SMEM"}, [
        {"OUT_Y": 2, "OUT_X": 4, "USE_SMEM": 2},
        {"OUT_Y": 4, "OUT_X": 2, "USE_SMEM": 1, "BLOCK_X": 32, "BLOCK_Y": 2}]),
    "flip_bank_max": (BASE, [
        {"OUT_Y": 4, "OUT_X": 2},
        {"OUT_Y": 2, "OUT_X": 8, "BLOCK_X": 32, "BLOCK_Y": 2}]),
}


def _folder(name: str, root: Path) -> KernelFolder:
    return respelled(FOLDER, root, (SPELLINGS / f"{name}.cu").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_flipped_window_in_a_channel_loop_lifts(name: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(name, tmp_path)).lifted
    assert {p.name for p in lifted.params} == CASES[name][0], lifted.notes
    assert {"ITEMS_X", "ITEMS_Y"}.isdisjoint(p.name for p in lifted.params)
    applied = [n for n in lifted.notes if n.startswith("OUT_Y: applied")]
    assert applied and (" - " in applied[0].split("input row ")[1][:12]) == (
        name != "flip_channels_cols_only"), lifted.notes
    assert any(n.startswith("OUT_X: applied") and "at input column" in n and " - " in
               n.split("input column ")[1][:12] for n in lifted.notes), lifted.notes
    if name == "flip_channels_nchw":
        spec = next(p.spec for p in lifted.params if p.name == "USE_SMEM")
        assert list(spec["values"]) == [0, 1, 2]
    if name == "flip_bank_max":
        assert any(n.startswith("KEPT_READS: applied") for n in lifted.notes), lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_flipped_window_in_a_channel_loop_computes_as_written(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]  # noqa: F811
) -> None:
    kf = _folder(name, tmp_path / "folder")
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), CASES[name][1])
    if not FULL_MATRIX:
        configs = configs[:len(CASES[name][1]) + 1] + configs[-1:]
    assert same_as_written(kf, template, configs, held_back_unseen4.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)
