"""Set 6's linear_gelu_lda through the offline templater (issue 28): a register tile.

Its tile sizes are a struct's ``static constexpr`` members (``Tile::ROWS``), its block is
32 x 16 over a 16 x 16 slice of X that only the first 16 columns of threads copy
(``if (threadIdx.x < Tile::DEPTH)``), and it walks X (row stride ``ldx``) and W with
pointers. The register tile reads the members as the constants they are and the guarded copy
as covering the slice (workbench/templater/regtile_guard.py); the folder's template runs on
the host (g++, the check shape's inputs as the engine makes them) at its default, its
all-ends corners and a coarse config with float4 loads, and prints what the kernel as
written prints, bit for bit; nvcc compiles its corners for sm_90 without spilling (a corner
that spilled is left out by the space's staged-register rule, which says why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen6
import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import end_configs, host_sample
from test_corpus_unseen3 import _SPILLS, _inputs, _ptxas_log, folder_runs

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import TemplaterResult, offline_template

FOLDER = held_back_unseen6.ROOT / "linear_gelu_lda"
_LIFT: list[TemplaterResult] = []


def lifted() -> TemplaterResult:
    """The folder's offline template (made once a session)."""
    if not _LIFT:
        _LIFT.append(offline_template(load_kernel_folder(FOLDER)))
    return _LIFT[0]


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The default, a coarse 64 x 64 tile of 4 x 4 a thread with float4 loads, then the
    all-ends corners (the last: 128 x 128, 8 x 8 a thread, BK 32, float4)."""
    kf = load_kernel_folder(FOLDER)
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    coarse = {**default, "BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "VEC": 4}
    assert template.space(env).rejection(coarse) is None
    return [default, coarse, *end_configs(template, env)]


def test_the_struct_sized_tiles_lift_a_register_tile_launching_as_written() -> None:
    result = lifted()
    applied = [n for n in result.notes if n.startswith("REGISTER_TILE: applied")]
    assert any("xs[BM][BK], ws[BK][BN]" in n for n in applied), result.notes
    template = result.template
    assert {p.name for p in template.params} == {"BM", "BN", "BK", "TM", "TN", "VEC"}
    default = template.default_config()
    assert (default["BM"], default["BN"], default["BK"]) == (16, 32, 16)
    kf = load_kernel_folder(FOLDER)
    env = kf.env(kf.check_shape, "fp32")
    assert template.launch_for(default, env) == kf.baseline.launch_for({}, env)
    # the struct is kept as written: the static_assert on it still holds at every config
    assert "static constexpr int ROWS = 16;" in result.lifted.source
    assert "if (threadIdx.x < Tile::DEPTH)" not in result.lifted.source


@pytest.mark.timeout(300)
def _as_written(kf: Any, env: Any) -> tuple[str, Any]:
    """The kernel as written as the host compiles it, with its launch."""
    return (held_back_unseen6.host_source(kf.baseline.render({}, "fp32").source),
            kf.baseline.launch_for({}, env))


def test_the_template_prints_what_the_kernel_as_written_prints(tmp_path: Path) -> None:
    """Default and coarse on every run, the corners between them under
    ``WORKBENCH_FULL_MATRIX=1`` (host_sample keeps the first and the last otherwise); the
    kernel as written and every config in one merged host program."""
    kf = load_kernel_folder(FOLDER)
    env = kf.env(kf.check_shape, "fp32")
    template = lifted().template
    listed = _configs(template)
    picked = host_sample(listed[:2]) + host_sample(listed[2:])
    runs = [_as_written(kf, env),
            *((held_back_unseen6.host_source(template.render(c, "fp32").source),
               template.launch_for(c, env)) for c in picked)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path)
    for config, outputs in zip(picked, got, strict=True):
        # the same products added in the same order of k: bit-identical
        assert np.array_equal(outputs["Y"], want["Y"]), config


def test_the_host_check_can_fail(tmp_path: Path) -> None:
    """A template whose epilogue drops the bias prints something else."""
    kf = load_kernel_folder(FOLDER)
    env = kf.env(kf.check_shape, "fp32")
    template = lifted().template
    config = template.default_config()
    source = template.render(config, "fp32").source
    assert "gelu_tanh(acc[wb_i][wb_j] + bias[" in source
    broken = source.replace("gelu_tanh(acc[wb_i][wb_j] + bias[",
                            "gelu_tanh(acc[wb_i][wb_j] + 0 * bias[")
    want, got = folder_runs(kf, [_as_written(kf, env),
                                 (held_back_unseen6.host_source(broken),
                                  template.launch_for(config, env))], _inputs(kf), tmp_path)
    assert not np.array_equal(got["Y"], want["Y"])


def test_a_one_warp_block_of_deep_tiles_is_left_out_by_the_staged_register_rule() -> None:
    """128 x 16 x 32 at 8 x 8 a thread is one warp holding 64 accumulators and 144 words of
    float4 loads before its shared stores: ptxas (sm_90, nvcc 13.0) spilled 8 bytes at 255
    registers there, so the space leaves it out (workbench/templater/regtile_space.py,
    RULES); the same tile 8 deep (36 staged words, 166 registers) stays."""
    kf = load_kernel_folder(FOLDER)
    space = lifted().template.space(kf.env(kf.check_shape, "fp32"))
    deep = {"BM": 128, "BN": 16, "BK": 32, "TM": 8, "TN": 8, "VEC": 4}
    rejection = space.rejection(deep)
    assert rejection is not None and str(rejection).startswith("VEC == 1 or TM * TN + 4 * ")
    assert space.rejection({**deep, "BK": 8}) is None


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_corners_compile_for_sm90_without_spilling(tmp_path: Path) -> None:
    """The default and the last all-ends corner (128 x 128, 8 x 8 a thread: the most
    registers); every corner under ``WORKBENCH_FULL_MATRIX=1``."""
    template = lifted().template
    listed = _configs(template)
    for i, config in enumerate(host_sample([listed[0], *listed[2:]])):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"corner{i}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"
