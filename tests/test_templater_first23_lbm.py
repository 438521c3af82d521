"""Set 23's first contact, lbm_d2q9_pull (issue 28): a statement macro whose parameter is
named ``f`` (``#define RELAX(q, f, w, cu) f_out[..] = (f) - .. (1.0f + 3.0f * (cu) ..)``) was
expanded into ``1.0f0``, so propose wrote nothing ("baseline.cu:48: cannot parse kernel").
The expansion reads the body's tokens as the preprocessor does: numbers (``1.0f``,
``0x1Fu``, ``1e-3f``) and character and string literals whole, never a parameter inside
them."""

from __future__ import annotations

from pathlib import Path

import held_back_unseen23
import pytest
from held_back_harness import same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_macros import FunctionMacro

FOLDER = held_back_unseen23.SET.root / "lbm_d2q9_pull"


@pytest.mark.parametrize(("body", "want"), [
    ("(f) * 1.0f + 3.0f * (w)", "(f0) * 1.0f + 3.0f * (W1)"),
    ("f + 0x1Fu + 1e-3f + 2.f + .5f", "f0 + 0x1Fu + 1e-3f + 2.f + .5f"),
    ("f + 'f' + \"f w\"", "f0 + 'f' + \"f w\""),
    ("ff + f_out[f] + w2", "ff + f_out[f0] + w2"),
])
def test_a_parameter_is_never_part_of_a_number_or_a_literal(body: str, want: str) -> None:
    assert FunctionMacro("M", ("f", "w"), body).expand(["f0", "W1"]) == want


def test_the_folder_lifts_its_block_and_items() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    knobs = {p.name for p in result.lifted.params}
    assert {"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y"} <= knobs, result.notes
    assert "1.0f0" not in result.template.source


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_computes_as_written(tmp_path: Path,
                                      host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [{"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_X": 2,
                                            "ITEMS_Y": 4}])
    if not FULL_MATRIX:
        configs = configs[:4]
    assert same_as_written(kf, template, configs, held_back_unseen23.SET.host_source,
                           tmp_path, host_flags) >= 4
