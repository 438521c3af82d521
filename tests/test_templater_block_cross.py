"""A block size that steps another grid dimension (workbench/templater/block.py, issue 28):
``px = blockIdx.x * blockDim.y + threadIdx.y`` under ``grid = ceil_div(npix, 4)``, block
(32, 4): each block's x extent is its y size, so lifting BLOCK_Y must make the x grid
``ceil_div(npix, BLOCK_Y)``. Before the fix the grid stayed at ``ceil_div(npix, 4)`` and at
BLOCK_Y = 2 half the pixels were never written (found by the CONST_VIA work). Checked on
the host (g++, the cooperative block as on the GPU): the lifted template at BLOCK_Y = 1, 2,
8 prints what the kernel as written prints. A grid rule that does not divide by the size
(``(npix + 3) / 4``) cannot follow it: the block size stays as written, with the line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_corpus_unseen3 import _inputs, folder_runs
from test_templater_const_via import FOLDERS, _folder

from workbench.templater import offline_template

CROSSED = FOLDERS["scale_shift"][0].replace("4 * blockIdx.x + threadIdx.y",
                                            "blockIdx.x * blockDim.y + threadIdx.y")


def test_the_grid_follows_a_block_size_that_steps_another_dimension(tmp_path: Path) -> None:
    assert FOLDERS["scale_shift"][0] != CROSSED
    kf = _folder("scale_shift", tmp_path, source=CROSSED)
    result = offline_template(kf)
    assert result.lifted is not None
    assert "BLOCK_Y" in [p.name for p in result.lifted.params]
    assert result.lifted.grid == ("ceil_div(npix, BLOCK_Y)",)
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    configs = [{**template.default_config(), "BLOCK_Y": block_y} for block_y in (1, 2, 8)]
    for config in configs:
        assert template.space(env).rejection(config) is None
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path)
    for config, outputs in zip(configs, got, strict=True):
        block_y = config["BLOCK_Y"]
        assert not np.isnan(outputs["y"]).any(), f"BLOCK_Y={block_y}: outputs never written"
        assert np.array_equal(outputs["y"], want["y"]), f"BLOCK_Y={block_y}"


def test_a_grid_that_cannot_follow_keeps_the_block_size_with_the_line(tmp_path: Path) -> None:
    kf = _folder("scale_shift", tmp_path, source=CROSSED)
    toml = kf.path / "kernel.toml"
    text = toml.read_text()
    assert "ceil_div(npix, 4)" in text
    toml.write_text(text.replace("ceil_div(npix, 4)", "(npix + 3) / 4"))
    from workbench.core.kernel_folder import load_kernel_folder

    result = offline_template(load_kernel_folder(kf.path))
    lifted = [p.name for p in result.lifted.params] if result.lifted is not None else []
    assert "BLOCK_Y" not in lifted
    notes = " ".join(str(n) for n in result.notes) if hasattr(result, "notes") else str(result)
    assert "offsets blocks by the block's y size" in notes, notes

