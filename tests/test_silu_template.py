"""silu_and_mul's load path knob (LOAD_PATH): where the constraints offer it, and (where nvcc
is installed) that each value compiles the input's loads to its cache operator while the
default keeps the read-only path the recorded sweeps measured.

The GPU check of LOAD_PATH configs against the reference is
tests/gpu/test_gpu_template_knobs.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers_nvcc import needs_nvcc, ptx_of

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config

FOLDER = load_kernel_folder(Path(__file__).resolve().parents[1] / "sample_kernels" /
                            "silu_and_mul")
D = int(FOLDER.shape_values("decode")["d"])
FULL_TILE = FOLDER.template.default_config().replace(D_CONST=D, BLOCK_THREADS=512, FAST_EXP=2)


def test_last_use_loads_are_offered_with_a_whole_row_full_tile_only() -> None:
    space = FOLDER.space("decode", "bf16")
    assert FULL_TILE.replace(LOAD_PATH=4) in space
    rejected = {
        "loop": FULL_TILE.replace(D_CONST=0, LOAD_PATH=4),
        "split row": FULL_TILE.replace(ROW_SPLIT=2, LOAD_PATH=4),
        "packed tokens": FULL_TILE.replace(TOKENS_PER_BLOCK=2, LOAD_PATH=4),
    }
    for what, config in rejected.items():
        reason = space.rejection(config)
        assert reason is not None and "LOAD_PATH" in str(reason), (what, reason)
    # each offered LOAD_PATH 4 config has its LOAD_PATH 0 twin: the knob adds, never removes
    offered = [c for c in space if c["LOAD_PATH"] == 4]
    assert offered and all(c.replace(LOAD_PATH=0) in space for c in offered)


def _loads(config: Config, dtype: str = "bf16") -> list[str]:
    return re.findall(r"\bld\.global[\w.]*", ptx_of(FOLDER.template, config, dtype))


@needs_nvcc
@pytest.mark.parametrize("vec_bytes", [4, 8, 16])
def test_each_load_path_compiles_to_its_cache_operator(vec_bytes: int) -> None:
    config = FULL_TILE.replace(VEC_BYTES=vec_bytes)
    default = _loads(config)
    assert default and all(op.startswith("ld.global.nc") for op in default), default
    last_use = _loads(config.replace(LOAD_PATH=4))
    assert len(last_use) == len(default)  # one load per vector, as before
    assert all(op.startswith("ld.global.lu") for op in last_use), last_use
