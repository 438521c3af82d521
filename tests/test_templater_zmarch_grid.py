"""Z_ITEMS for a 3-D grid with one plane per block z (workbench/templater/stencil_zgrid.py,
reached through stencil_zmarch.lift_zmarch; issue 28).

Spellings: held-back set 6's box27_smooth (a 1-D block along x, ``k = blockIdx.z``, a box
of three nested loops over -1..1, early returns for the boundary layer) and a box of
explicit terms over a 2-D block of 16 x 4, ``blockIdx.z`` read in place in the index,
clamped neighbours (``min`` / ``max``) and an if / else boundary. Each lifted template runs
on the host (g++, the cooperative block) at its default, its all-ends corners and a config
that marches more planes than a chunk holds, and prints what the kernel as written prints,
bit for bit. What cannot be shown legal is refused with the line.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import corner_configs, host_sample, lifted_template
from test_corpus_unseen3 import _inputs, _run, host_flags  # noqa: F401  (the fixture)
from test_templater_stencil_zmarch import ENV, NX, NY, NZ, SHAPE, host

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

_BOX27 = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen6" / \
    "box27_smooth" / "baseline.cu"

CLAMPED = """
extern "C" __global__ void k(float* dst, const float* src, int w, int h, int depth) {
  int x = threadIdx.x + 16 * blockIdx.x;
  int y = threadIdx.y + 4 * blockIdx.y;
  if (x < w && y < h) {
    int xm = max(x - 1, 0), xp = min(x + 1, w - 1);
    int ym = max(y - 1, 0), yp = min(y + 1, h - 1);
    int zm = max((int)blockIdx.z - 1, 0), zp = min((int)blockIdx.z + 1, depth - 1);
    size_t s = (size_t)w * h;
    size_t z0 = blockIdx.z * s, z1 = zm * s, z2 = zp * s;
    float v = src[z0 + y * w + x];
    if (depth > 2) {
      v = 0.5f * v + 0.1f * (src[z0 + y * w + xm] + src[z0 + y * w + xp]) +
          0.05f * (src[z0 + ym * w + x] + src[z0 + yp * w + x]) +
          0.05f * (src[z1 + y * w + x] + src[z2 + y * w + x]) +
          0.025f * (src[z1 + ym * w + xm] + src[z2 + yp * w + xp]);
    } else {
      v = -v;
    }
    dst[z0 + y * w + x] = v;
  }
}
"""


def _box27() -> str:
    return _BOX27.read_text().replace("void box27_smooth(", "void k(")


#: source, grid, block as written
CASES: dict[str, tuple[str, list[str], list[str]]] = {
    "box27": (_box27(), ["ceil_div(nx, 128)", "ny", "nz"], ["128"]),
    "clamped": (CLAMPED, ["ceil_div(nx, 16)", "ceil_div(ny, 4)", "nz"], ["16", "4"]),
}
SCALARS = {"clamped": {"w": "nx", "h": "ny", "depth": "nz"}, "box27": SHAPE}


def lift(name: str, source: str | None = None) -> LiftedSource:
    text, grid, block = CASES[name]
    return lift_kernel(source if source is not None else text, entry="k", grid=grid,
                       block=block, scalars=SCALARS[name])


def params(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


def _written_launch(name: str) -> tuple[list[int], list[int]]:
    block = [int(b) for b in CASES[name][1 + 1]]
    grid = [-(-NX // block[0]), -(-NY // block[1]) if len(block) > 1 else NY, NZ]
    return grid, block


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_plane_per_block_z_lifts_z_items(name: str) -> None:
    lifted = lift(name)
    knobs = params(lifted)
    assert knobs["Z_ITEMS"]["default"] == 1, lifted.notes
    assert lifted.grid[2] == "ceil_div(nz, Z_ITEMS)"
    body = lifted.source[lifted.source.index('extern "C"'):]
    # (box27's Z_SUMS march, stencil_zsums, is tested in test_templater_zsums.py)
    body = re.sub(r"#if Z_SUMS\n.*?#else\n", "", body, flags=re.S)
    # blockIdx.z survives only in the plane's own declaration (and its comment); every
    # return ends a plane
    assert body.count("blockIdx.z") == 2 and body.count("blockIdx.z * Z_ITEMS + wb_zi") == 1
    # (box27's one return left: a row past the grid's last, before the planes)
    assert body.count("return") == (1 if name == "box27" else 0)
    assert "return;  // past the grid's last row" in body or name != "box27"
    assert any("Z_ITEMS: applied" in n for n in lifted.notes)
    # a 1-D block's row per block y becomes BLOCK_Y rows; a 2-D block keeps its rows
    if name == "box27":
        assert knobs["BLOCK_Y"]["default"] == 1 and lifted.grid[1] == "ceil_div(ny, BLOCK_Y)"
        assert "BLOCK_THREADS * BLOCK_Y <= 1024" in lifted.constraints
        # the block's bounds follow both knobs (launch_minimum's macro, before the body)
        assert "__global__ WB_BLOCK_BOUNDS void" in body
        assert "__launch_bounds__(BLOCK_THREADS * BLOCK_Y," in lifted.source
    else:
        assert "wb_yp" not in body and "blockIdx.y" in body  # (BLOCK_Y: its own block y)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    grid, block = _written_launch(name)
    want = host(tmp_path, "as_written", CASES[name][0], grid, block, host_flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(name))
    base = template.default_config()
    # 19 planes: 8 a thread leaves a last chunk of 3; 32 a thread one chunk past the end
    # (box27: 4 rows a block leave a last block of 2 rows; 8 a block with 32 threads)
    rows: list[dict[str, Any]] = [{"BLOCK_Y": 4}, {"BLOCK_Y": 8, "BLOCK_THREADS": 32}] \
        if name == "box27" else [{}, {}]
    marching = [{**base, "Z_ITEMS": 8, **rows[0]}, {**base, "Z_ITEMS": 32, **rows[1]}]
    configs = [*corner_configs(template, ENV), *marching]
    space = template.space(dict(ENV))
    assert all(space.rejection(c) is None for c in configs)
    for i, config in enumerate(host_sample(configs[:3]) + marching):
        launch = template.launch_for(config, ENV)
        assert launch.grid[2] == -(-NZ // config["Z_ITEMS"])
        got = host(tmp_path, f"config{i}", template.render(config, "fp32").source,
                   launch.grid, launch.block, host_flags)
        np.testing.assert_array_equal(got, want, err_msg=str(config))


@pytest.mark.timeout(240)
def test_the_box27_folder_lifts_and_computes_as_written_bit_for_bit(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(_BOX27.parent)
    result = offline_template(kf)
    template = result.template
    assert {"Z_ITEMS", "BLOCK_Y"} <= set(template.param_names), result.notes
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _run(kf, kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env),
                inputs, tmp_path / "plain", host_flags)
    # 7 planes, 10 rows: 4 planes and 4 rows a block leave short last blocks of both
    config = {**template.default_config(), "Z_ITEMS": 4, "BLOCK_Y": 4, "BLOCK_THREADS": 32}
    assert template.space(env).rejection(config) is None
    got = _run(kf, template.render(config, "fp32").source, template.launch_for(config, env),
               inputs, tmp_path / "marching", host_flags)
    for name, values in want.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)


# -- refused, with the line ------------------------------------------------------------------

@pytest.mark.parametrize(("name", "old", "new", "why"), [
    # a return inside a loop: `continue` there would go on with the next offset
    ("box27", "        const int nonzero", "        if (acc > 1e30f) return;\n"
     "        const int nonzero", "inside a loop cannot end one plane alone"),
    # the grid's z read: it shrinks with Z_ITEMS
    ("clamped", "if (depth > 2)", "if (gridDim.z > 2)", "`gridDim.z` is read"),
    # blocks with a barrier are not independent planes
    ("clamped", "    float v = src[z0 + y * w + x];",
     "    __syncthreads();\n    float v = src[z0 + y * w + x];", "a barrier or shared memory"),
])
def test_what_cannot_be_shown_legal_is_refused_with_the_line(name: str, old: str, new: str,
                                                             why: str) -> None:
    source = CASES[name][0]
    assert old in source
    lifted = lift(name, source.replace(old, new))
    assert "Z_ITEMS" not in params(lifted)
    reasons = [str(f) for f in lifted.findings if f.transform == "Z_ITEMS" and not f.applied]
    assert any(why in r and "(line " in r for r in reasons), lifted.notes


def test_a_row_read_through_threadidx_y_keeps_one_row_per_block() -> None:
    source = CASES["box27"][0].replace("const int j = blockIdx.y;",
                                       "const int j = blockIdx.y + threadIdx.y;")
    lifted = lift("box27", source)
    assert "BLOCK_Y" not in params(lifted) and "Z_ITEMS" in params(lifted)
    assert any("BLOCK_Y: not applied: `threadIdx.y` is read" in n for n in lifted.notes)


def test_a_grid_z_of_several_planes_per_block_is_left_alone() -> None:
    """``grid z = ceil_div(nz, 4)`` with a block z of 4 is not one plane per block z."""
    text, _grid, _block = CASES["clamped"]
    lifted = lift_kernel(text, entry="k", grid=["ceil_div(nx, 16)", "ceil_div(ny, 4)",
                                                "ceil_div(nz, 4)"],
                         block=["16", "4"], scalars=SCALARS["clamped"])
    assert "Z_ITEMS" not in params(lifted)


def test_every_corner_is_listed_once() -> None:
    template = lifted_template(lift("box27"))
    configs = corner_configs(template, ENV)
    assert len({tuple(sorted(c.items())) for c in configs}) == len(configs)
    assert all(a != b for a, b in itertools.combinations(configs, 2))
