"""The 3-D stencil as other people write it, at first contact (issue 28): the kernels of
tests/spellings_g/stencil/ lifted by the offline templater and compared with the corpus's
stencil3d lift (BLOCK_X, BLOCK_Y, BLOCK_Z, Z_ITEMS); every checked config prints, bit for
bit, what the kernel as written prints on the host (g++, the cooperative block).

Spellings: a 2-D grid of columns each marching z with ``continue`` on the faces (the z-march
family: BLOCK_X, BLOCK_Y and Z_SPLIT, as heat_step13's); a 3-D grid whose point goes through
``blockIdx * blockDim`` and whose flat index is a function-like macro ``IDX(i, j, l)``
(expanded as the preprocessor does: the corpus's knobs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs, host_sample
from test_templater_const_via import _knobs, assert_prints_as_written, write_folder

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template

HERE = Path(__file__).resolve().parent / "spellings_g" / "stencil"
ARGS: list[tuple[str, str, str, Any]] = [
    ("out", "f32", "out", ["nz", "ny", "nx"]), ("in", "f32", "in", ["nz", "ny", "nx"]),
    ("nx", "i32", "scalar", "nx"), ("ny", "i32", "scalar", "ny"), ("nz", "i32", "scalar", "nz")]
#: name -> (grid, block, the knobs its lift must have)
SPECS: dict[str, tuple[list[str], list[str], set[str]]] = {
    "zmarch_2d_grid": (["ceil_div(nx, 32)", "ceil_div(ny, 8)"], ["32", "8"],
                       {"BLOCK_X", "BLOCK_Y", "Z_SPLIT"}),
    "grid3d_blockdim_macro_index": (
        ["ceil_div(nx, 32)", "ceil_div(ny, 4)", "ceil_div(nz, 4)"], ["32", "4", "4"],
        {"BLOCK_X", "BLOCK_Y", "BLOCK_Z", "Z_ITEMS"}),
}


def _folder(name: str, root: Path) -> KernelFolder:
    grid, block, _knobs_wanted = SPECS[name]
    return write_folder(root / name, (HERE / f"{name}.cu").read_text(), grid, block, ARGS,
                        {"nx": 45, "ny": 19, "nz": 23}, [])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_spelling_gets_its_familys_knobs(name: str, tmp_path: Path) -> None:
    result = offline_template(_folder(name, tmp_path))
    assert set(_knobs(result)) >= SPECS[name][2], result.notes


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path) -> None:
    kf = _folder(name, tmp_path / "folders")
    result = offline_template(kf)
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    assert_prints_as_written(kf, result, [dict(template.default_config()), *host_sample(ends)],
                             tmp_path)
