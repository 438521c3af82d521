"""The merge_attn_states_lse template's latency knobs: which configs launch with programmatic
dependent launch (PDL), which combinations the constraints admit (PDL, LEAN), and (where nvcc
is installed) that PDL 1 compiles the griddepcontrol instructions in while PDL 0 leaves them
out, and that LEAN 1 is refused at compile time outside the path it trims.

The GPU check of the same configs against the reference is tests/gpu/test_gpu_merge.py.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from helpers_nvcc import NVCC, needs_nvcc, ptx_of

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config

FOLDER = load_kernel_folder(Path(__file__).resolve().parents[1] / "sample_kernels" /
                            "merge_attn_states_lse")
DEFAULT = FOLDER.template.default_config()
TWO_D = DEFAULT.replace(ROWS_PER_BLOCK=8, VEC_BYTES=8, FAST_EXP=1)


def _in_space(config: Config, shape: str = "decode", dtype: str = "bf16") -> bool:
    return config in FOLDER.space(shape, dtype)


def test_pdl_defaults_to_a_plain_launch_and_pdl_1_sets_the_attribute() -> None:
    env = FOLDER.env("decode", "bf16")
    assert DEFAULT["PDL"] == 0
    assert FOLDER.template.launch_for(DEFAULT, env).pdl is False
    for config in (DEFAULT.replace(PDL=1), TWO_D.replace(PDL=1),
                   TWO_D.replace(PDL=2, LEAN=1)):
        assert _in_space(config)
        launch = FOLDER.template.launch_for(config, env)
        plain = FOLDER.template.launch_for(config.replace(PDL=0), env)
        assert launch.pdl is True
        # the attribute is the only difference: same grid, block and shared memory
        assert (launch.grid, launch.block, launch.smem_bytes) == \
            (plain.grid, plain.block, plain.smem_bytes)


def test_pdl_is_offered_with_flattened_and_2d_layouts_only() -> None:
    row_groups = DEFAULT.replace(THREADS_PER_ROW=8)
    assert _in_space(row_groups)
    assert not _in_space(row_groups.replace(PDL=1))
    assert not _in_space(TWO_D.replace(PDL=2))  # the early release: LEAN configs only
    for dtype in FOLDER.dtypes:
        for shape in FOLDER.shapes:
            space = FOLDER.space(shape, dtype)
            pdl = [c for c in space if c["PDL"] >= 1]
            assert pdl and all(c["THREADS_PER_ROW"] == 0 for c in pdl)
            # every PDL config has its PDL 0 twin, so the search can compare the two
            assert all(c.replace(PDL=0) in space for c in pdl)


def test_lean_is_offered_with_the_2d_one_exponential_path_only() -> None:
    assert DEFAULT["LEAN"] == 0
    assert _in_space(TWO_D.replace(LEAN=1)) and _in_space(TWO_D.replace(LEAN=1, PDL=1))
    assert not _in_space(TWO_D.replace(LEAN=1, FAST_EXP=0))
    assert not _in_space(DEFAULT.replace(LEAN=1, FAST_EXP=1))  # flattened
    env = FOLDER.env("odd", "fp16")
    lean = FOLDER.template.launch_for(TWO_D.replace(LEAN=1), env)
    plain = FOLDER.template.launch_for(TWO_D, env)
    assert lean == plain  # the same launch; only the code differs
    for dtype in FOLDER.dtypes:
        for shape in FOLDER.shapes:
            space = FOLDER.space(shape, dtype)
            lean_configs = [c for c in space if c["LEAN"] == 1]
            # each has its LEAN 0 twin (PDL 2, the early release, exists with LEAN only)
            assert lean_configs and all(c.replace(LEAN=0, PDL=min(int(c["PDL"]), 1)) in space
                                        for c in lean_configs)
            # the exhaustive sweep stays within budget (tests/test_sample_kernels.py)
            assert space.size <= 2000


def _ptx(config: Config, dtype: str = "bf16") -> str:
    return ptx_of(FOLDER.template, config, dtype)


@needs_nvcc
def test_pdl_waits_before_reading_and_releases_at_the_end_or_right_after_the_wait() -> None:
    with_pdl = _ptx(TWO_D.replace(PDL=1))
    wait = with_pdl.index("griddepcontrol.wait")
    release = with_pdl.index("griddepcontrol.launch_dependents")
    first_load = with_pdl.index("ld.global")
    assert wait < first_load < release
    plain = _ptx(TWO_D)
    assert "griddepcontrol" not in plain
    early = _ptx(TWO_D.replace(PDL=2, LEAN=1))  # released right after the wait, once
    assert early.index("griddepcontrol.wait") < early.index("griddepcontrol.launch_dependents") \
        < early.index("ld.global")
    assert early.count("griddepcontrol.launch_dependents") == 1


@needs_nvcc
def test_lean_outside_the_2d_one_exponential_path_is_a_compile_error() -> None:
    assert NVCC is not None
    source = FOLDER.template.render(TWO_D.replace(LEAN=1), "bf16").source
    assert "ex2.approx.ftz.f32" in _ptx(TWO_D.replace(LEAN=1))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source.replace("#define FAST_EXP 1", "#define FAST_EXP 0"))
        done = subprocess.run([NVCC, "-ptx", "-arch=sm_90a", "-o", str(Path(tmp) / "k.ptx"),
                               str(src)], capture_output=True, text=True, timeout=100,
                              check=False)
    assert done.returncode != 0 and "LEAN" in done.stderr + done.stdout
