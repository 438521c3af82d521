"""A block size that steps another grid dimension (workbench/templater/block.py,
regtile_blockdim.py, the lane layout; issue 28): ``px = blockIdx.x * blockDim.y +
threadIdx.y`` under ``grid = ceil_div(npix, 4)``, block (32, 4), the x threads lanes of the
channels. Each block's x extent is its y size, so a lifted y size must move the x grid with
it (before session 18 the grid stayed at ``ceil_div(npix, 4)`` and at 2 pixels a block half
the pixels were never written). The block lift leaves such a layout to the lane family,
whose OUTER_THREADS sizes the y threads and whose grid rule follows it
(``ceil_div(npix, OUTER_THREADS * ITEMS_X)``); checked on the host (g++, the cooperative
block as on the GPU): the lifted template at OUTER_THREADS = 1, 2, 8 prints what the kernel
as written prints. A grid rule that does not divide by the size (``(npix + 3) / 4``): the
lane family refuses it, and the block lift's note names the crossed offset, with the
line."""

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
    names = [p.name for p in result.lifted.params]
    assert "OUTER_THREADS" in names and "BLOCK_Y" not in names, names
    assert result.lifted.grid == ("ceil_div(npix, OUTER_THREADS * ITEMS_X)",)
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    configs = [{**template.default_config(), "OUTER_THREADS": outer} for outer in (1, 2, 8)]
    for config in configs:
        assert template.space(env).rejection(config) is None
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path)
    for config, outputs in zip(configs, got, strict=True):
        outer = config["OUTER_THREADS"]
        assert not np.isnan(outputs["y"]).any(), f"OUTER_THREADS={outer}: outputs never written"
        assert np.array_equal(outputs["y"], want["y"]), f"OUTER_THREADS={outer}"


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
    assert "`blockIdx.x * blockDim.y` offsets the blocks along x by the block's y size" in \
        notes and "(line 9)" in notes, notes

