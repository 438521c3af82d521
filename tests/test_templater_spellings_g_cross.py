"""A crossed grid whose x threads are not lanes (workbench/templater/regtile_blockdim.py;
issue 28, first contact): ``r = blockIdx.x * blockDim.y + threadIdx.y`` and ``c = blockIdx.y
* blockDim.x + threadIdx.x`` (the grid's x walks the rows, its y the columns) under block
(32, 4), grid (ceil_div(rows, 4), ceil_div(cols, 32)). No lane family takes it (threadIdx.x
is no lane: it is offset by a block index), so the block lift sizes both dimensions and each
grid rule follows the size that divides it (before: both sizes were left to a lane family
that never came, "found nothing to lift"). Every config checked on the host (g++) prints
what the kernel as written prints. With a square block (8, 8) the grid rules' divisor 8
cannot tell which size each follows: refused with the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_templater import end_configs, host_sample
from test_templater_const_via import _knobs, assert_prints_as_written, write_folder

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template

CROSSED_ROWS = """
extern "C" __global__ void k(float* y, const float* x, int rows, int cols) {
  const int r = blockIdx.x * blockDim.y + threadIdx.y;
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (r < rows && c < cols) y[(size_t)r * cols + c] = 2.0f * x[(size_t)r * cols + c] + 1.0f;
}
"""
ARGS = [("y", "f32", "out", ["rows", "cols"]), ("x", "f32", "in", ["rows", "cols"]),
        ("rows", "i32", "scalar", "rows"), ("cols", "i32", "scalar", "cols")]


def _crossed(root: Path, block: list[str]) -> KernelFolder:
    by = block[1]
    return write_folder(root / f"crossed_{block[0]}x{by}", CROSSED_ROWS,
                        [f"ceil_div(rows, {by})", f"ceil_div(cols, {block[0]})"], block, ARGS,
                        {"rows": 37, "cols": 45}, [])


def test_both_block_sizes_lift_and_each_grid_follows_its_own(tmp_path: Path) -> None:
    result = offline_template(_crossed(tmp_path, ["32", "4"]))
    knobs = _knobs(result)
    assert knobs["BLOCK_X"]["default"] == 32 and knobs["BLOCK_Y"]["default"] == 4
    assert result.lifted.block == ("BLOCK_X", "BLOCK_Y")
    assert result.lifted.grid == ("ceil_div(rows, BLOCK_Y)", "ceil_div(cols, BLOCK_X)")


@pytest.mark.timeout(240)
def test_every_config_prints_what_the_kernel_as_written_prints(tmp_path: Path) -> None:
    kf = _crossed(tmp_path / "folders", ["32", "4"])
    result = offline_template(kf)
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    default = template.default_config()
    mixed = [{**default, "BLOCK_X": 8, "BLOCK_Y": 16}, {**default, "BLOCK_X": 64, "BLOCK_Y": 2}]
    assert_prints_as_written(kf, result, [*mixed, *host_sample(ends)], tmp_path)


def test_a_square_block_is_refused_with_the_line(tmp_path: Path) -> None:
    with pytest.raises(TemplateError) as caught:
        offline_template(_crossed(tmp_path, ["8", "8"]))
    why = str(caught.value)
    assert "BLOCK_Y: not applied: `blockIdx.x * blockDim.y` offsets the blocks along x" in why
    assert "8 threads along both y and x as written" in why and "(line 3)" in why
