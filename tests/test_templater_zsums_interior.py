"""INTERIOR of the Z_SUMS march (workbench/templater/stencil_zsums_interior.py): a thread
whose every output of its planes passes the guards marches without testing them each step.

Spellings (tests/test_templater_zsums.py's): held-back set 6's box27_smooth (``i == 0 || i ==
nx - 1 || ... || k == nz - 1`` and ``i >= nx``), a separable box by another hand (a ``bool
edge = x < 1 || ... || z > nz - 2`` local, an ``IDX`` macro, a double sum) and a 7-point
star (``x + 1 == nx``). Each gains INTERIOR (default 0; only with Z_SUMS 1); a host run
(g++, the cooperative block, per lane: the device's warp vote is left out) on a 13 x 11 x 19
grid, where threads of the boundary layer and interior threads both march (counted), gives
what the kernel as written gives (box27 and the star bit for bit, the separable box within
1e-6 as Z_SUMS does) at Z_ITEMS 2 and 32, the expert's pick and a mix. A red-black
colouring, an unsigned compare and a guard through a call are refused with the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import (
    FULL_MATRIX,
    end_configs,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import host_flags  # noqa: F401  (the fixture)
from test_templater_stencil_zmarch import ENV, NX, NY, NZ, _program
from test_templater_zsums import CASES, lift, params

from workbench.core.template import KernelTemplate
from workbench.templater.offline import offline_template


def host_counted(work: Path, label: str, source: str, grid: list[int], block: list[int],
                 flags: tuple[str, ...]) -> tuple[np.ndarray, int, int]:
    """The outputs of one host run, and how many threads ran the interior march and the
    general one (0, 0 where the source has no INTERIOR copy)."""
    counted = source.replace("if (wb_zin) {", "if (wb_count(wb_zin)) {")
    prelude = ("static long wb_in = 0, wb_out = 0;\n"
               "static bool wb_count(bool inside) { (inside ? wb_in : wb_out)++; "
               "return inside; }\n")
    program = _program(prelude + counted, grid, block).replace(
        "  return 0;", '  std::printf("%ld %ld\\n", wb_in, wb_out);\n  return 0;')
    work.mkdir(parents=True, exist_ok=True)
    printed = run_on_host(work, label, program, flags=flags).split("\n")
    printed = [p for p in printed if p]
    inside, outside = (int(v) for v in printed[-1].split())
    values = np.array([float.fromhex(v) if "nan" not in v else np.nan for v in printed[:-1]])
    return values, inside, outside


def _configs(template: KernelTemplate, name: str) -> list[dict[str, Any]]:
    """INTERIOR 1 at Z_ITEMS 2 and 32 (the expert's block of 64 x 8 for the 1-D spellings),
    a mix of 8 planes (a last chunk of 3), then INTERIOR 0 with Z_SUMS 1 (the march as
    before) and, under WORKBENCH_FULL_MATRIX, the all-ends corners with INTERIOR 1."""
    base = {**template.default_config(), "Z_SUMS": 1, "INTERIOR": 1}
    wide = {"BLOCK_THREADS": 64, "BLOCK_Y": 8} if name != "separable" else {}
    listed = [{**base, "Z_ITEMS": 2}, {**base, "Z_ITEMS": 32, **wide},
              {**base, "Z_ITEMS": 8, **({"BLOCK_Y": 4} if name != "separable" else {})},
              {**base, "Z_ITEMS": 4, "INTERIOR": 0}]
    if FULL_MATRIX:
        listed += [c for c in end_configs(template, ENV) if c["INTERIOR"] == 1]
    space = template.space(dict(ENV))
    assert all(space.rejection(c) is None for c in listed), listed
    return listed


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_guards_of_each_spelling_give_interior(name: str) -> None:
    lifted = lift(name)
    knobs = params(lifted)
    assert knobs["INTERIOR"]["values"] == [0, 1] and knobs["INTERIOR"]["default"] == 0
    assert "INTERIOR == 0 or Z_SUMS == 1" in lifted.constraints
    applied = [f for f in lifted.findings if f.transform == "INTERIOR"]
    assert applied and applied[0].applied, lifted.notes
    march = lifted.source[lifted.source.index("if (wb_zin) {"):lifted.source.index("} else {")]
    # the interior march: no guard evaluated per step, every load unpredicated
    assert "wb_zreach" not in march and "? (float)(in[" not in march.replace("(true) ? ", "")
    assert "(false && (" in march


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_with_interior_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    source, _grid, block_text = CASES[name]
    block = [int(b) for b in block_text]
    grid = [-(-NX // block[0]), -(-NY // block[1]) if len(block) > 1 else NY, NZ]
    want, _i, _o = host_counted(tmp_path, "as_written", source, grid, block, host_flags)
    assert not np.isnan(want).any()
    template = lifted_template(lift(name))
    configs = _configs(template, name)
    for i, config in enumerate(configs):
        launch = template.launch_for(config, ENV)
        got, inside, outside = host_counted(
            tmp_path, f"config{i}", template.render(config, "fp32").source,
            list(launch.grid), list(launch.block), host_flags)
        if name != "separable":
            np.testing.assert_array_equal(got, want, err_msg=str(config))
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str(config))
        # both marches ran where a chunk of planes lies between the boundary planes (at
        # 32 planes a thread every chunk holds plane 0: the general march alone)
        chunks = [(k0, min(k0 + config["Z_ITEMS"], NZ)) for k0 in range(0, NZ, config["Z_ITEMS"])]
        inner = any(k0 >= 1 and k1 - 1 <= NZ - 2 for k0, k1 in chunks)
        assert outside > 0 and (inside > 0) == (bool(config["INTERIOR"]) and inner), \
            (config, inside, outside)


def test_the_box27_folder_gains_interior_and_keeps_its_default() -> None:
    from test_templater_zsums import _BOX27

    from workbench.core.kernel_folder import load_kernel_folder
    template = offline_template(load_kernel_folder(_BOX27)).template
    assert "INTERIOR" in template.param_names
    assert template.default_config()["INTERIOR"] == 0
    # at the default the flag is `0 && ...`: no vote, the interior march compiles away
    assert "if (INTERIOR) wb_zin = __all_sync(__activemask(), wb_zin);" in template.source


# -- refused, with the line ------------------------------------------------------------------

_GUARD = "  if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1) {"


@pytest.mark.parametrize(("new", "why"), [
    # a red-black colouring: a modulo of the plane is not monotone in it
    ("  if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1 || "
     "(i + j + k) % 2 == 1) {", "not an integer polynomial"),
    # an unsigned compare of the plane wraps
    ("  if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || (unsigned)(k - 1) >= "
     "(unsigned)(nz - 2)) {", "may compare unsigned"),
    # a guard that is not an || of comparisons
    ("  if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || !(k > 0 && k < nz - 1)) {",
     "is not an `||` of comparisons"),
])
def test_guards_that_cannot_be_bounded_by_two_planes_are_refused_with_the_line(
        new: str, why: str) -> None:
    source = CASES["box27"][0]
    assert _GUARD in source
    lifted = lift("box27", source.replace(_GUARD, new))
    assert "Z_SUMS" in params(lifted) and "INTERIOR" not in params(lifted)
    refused = [f for f in lifted.findings if f.transform == "INTERIOR" and not f.applied]
    assert refused and why in refused[0].reason, lifted.notes
    assert refused[0].line == 23, refused[0]
    assert "wb_zin" not in lifted.source
