"""conv1d_mix7's CO_PER_THREAD space under ptxas -v (workbench/templater/conv_mix.py): its
corners compile without spills, and the configs its register constraints drop do spill
(the constraints say why they are there). The host checks of the same lift:
tests/test_templater_convmix_channels.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from held_back_unseen7 import _folder
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import NVCC, _ptxas_log

from workbench.templater import offline_template

needs_nvcc = pytest.mark.skipif(NVCC is None, reason="needs nvcc")


_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@needs_nvcc
@pytest.mark.timeout(300)
def test_conv1d_mix7_corners_compile_without_spills_and_the_cap_drops_spilling_ones(
        tmp_path: Path) -> None:
    plain = _folder("conv1d_mix7")
    template = offline_template(plain).template
    env = plain.env("large", "fp32")
    space = template.space(env)
    ends = end_configs(template, env)
    # 16 channels and 8 items a thread take ptxas 20 s: the default run checks the largest
    # corner with one item (WORKBENCH_FULL_MATRIX=1: every corner)
    checked = ends if FULL_MATRIX else [ends[0], max(
        (c for c in ends if c["T_ITEMS"] == 1),
        key=lambda c: (c["CO_PER_THREAD"], c["MIX_UNROLL"], c["BLOCK_THREADS"]))]
    for i, config in enumerate(checked):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"end{i}")
        assert _SPILLS.findall(log) == [("0", "0")], f"{config}:\n{log}"
    # 8 channels x 2 items under a 32-register cap (2048 threads an SM): ptxas spills, and
    # the register constraint keeps the config out of the space (16 channels of one item no
    # longer spill there since the interior copy's warp-uniform branch keeps the filter's
    # reads on the uniform datapath: the constraint is conservative for them)
    default = template.default_config()
    capped = {**default, "BLOCK_THREADS": 1024, "CO_PER_THREAD": 8, "T_ITEMS": 2,
              "MIN_BLOCKS_PER_SM": 2}
    # (the channel loop unrolled 8 times or more keeps its constraint, a register cap of 128
    # or more: since T_ITEMS its window's loads come first and ptxas -v no longer spills
    # the configs it drops, 768 threads x 8 channels x 16 unrolled at 39 registers)
    for label, config in (("capped", capped),):
        assert space.rejection(config) is not None, config
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, label)
        assert any(s != ("0", "0") for s in _SPILLS.findall(log)), log
