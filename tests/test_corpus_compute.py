"""The compute-bound corpus (issue 28, item 4), pure tier: every kernel folder of
benchmarks/corpus_compute and benchmarks/corpus_compute_unseen loads, its baseline and its
expert template compile with nvcc at the defaults, the expert's defaults launch the kernel
as written, and no config of an expert space breaks its constraints or the launch limits.

Folders that use the issue's new kernel-folder keys (``[[constants]]``, an argument's
``compare = "sum"``) load as written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers_nvcc import NVCC, needs_nvcc

from workbench.core.errors import KernelFolderError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"
FOLDERS = sorted(p for root in ("corpus_compute", "corpus_compute_unseen")
                 for p in (ROOT / root).iterdir() if (p / "kernel.toml").is_file())
IDS = [p.name for p in FOLDERS]
NEW_KEYS = ("constants", "compare")  # the issue-28 contract's keys


def _strip_new_keys(text: str) -> str:
    """kernel.toml without the [[constants]] tables and compare = lines."""
    text = re.sub(r"^\[\[constants\]\]\n(?:(?!\[).*\n)*", "", text, flags=re.M)
    return re.sub(r"^compare\s*=.*\n", "", text, flags=re.M)


def _load(path: Path, tmp: Path) -> KernelFolder:
    """The folder, or, where the loader refuses only the new keys, a copy without them."""
    try:
        return load_kernel_folder(path)
    except KernelFolderError as exc:
        if not any(key in str(exc) for key in NEW_KEYS):
            raise
    copy = tmp / path.name
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("expert", "__pycache__"))
    toml = copy / "kernel.toml"
    toml.write_text(_strip_new_keys(toml.read_text()))
    return load_kernel_folder(copy)


def _compile(source: str, tmp: Path, name: str) -> None:
    assert NVCC is not None
    src = tmp / f"{name}.cu"
    src.write_text(source)
    done = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(tmp / f"{name}.cubin"),
                           str(src)], capture_output=True, text=True, timeout=100, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_corpus_has_its_eight_kernels() -> None:
    assert sorted(IDS) == ["batched_matmul", "box_blur", "conv2d_const", "gemm_smem",
                           "partial_sum", "percell_compute", "stencil3d", "warp_row"]


@pytest.mark.parametrize("path", FOLDERS, ids=IDS)
def test_folder_as_written_and_expert_copy_load(path: Path) -> None:
    for folder in (path, path / "expert"):
        load_kernel_folder(folder)  # [[constants]] / compare = "sum" load (issue 28 contract)


@pytest.mark.parametrize("path", FOLDERS, ids=IDS)
def test_plain_folder_is_init_made_and_expert_is_its_copy(path: Path, tmp_path: Path) -> None:
    """The plain folder has no [template] (stage 1 makes it); baseline.cu is the kernel as
    written; expert/ holds the same kernel, baseline and launch plus its [template]."""
    plain, expert = _load(path, tmp_path / "plain"), _load(path / "expert", tmp_path / "exp")
    assert not plain.has_template and expert.has_template
    written = (path / f"{path.name}.cu").read_text()
    assert (path / "baseline.cu").read_text() == written
    assert (path / "expert" / "baseline.cu").read_text() == written
    assert expert.baseline.launch.to_dict() == plain.baseline.launch.to_dict()
    assert expert.args == plain.args and expert.shapes == plain.shapes


@needs_nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize("path", FOLDERS, ids=IDS)
def test_baseline_and_expert_defaults_compile(path: Path, tmp_path: Path) -> None:
    expert = _load(path / "expert", tmp_path)
    _compile(expert.baseline.source, tmp_path, "baseline")
    _compile(expert.template.render(expert.template.default_config(), "fp32").source,
             tmp_path, "template")


@pytest.mark.parametrize("path", FOLDERS, ids=IDS)
def test_expert_defaults_launch_the_kernel_as_written(path: Path, tmp_path: Path) -> None:
    expert = _load(path / "expert", tmp_path)
    default = expert.template.default_config()
    for shape in expert.shapes:
        env = expert.env(shape, "fp32")
        assert expert.template.launch_for(default, env) == expert.baseline.launch_for({}, env)


@pytest.mark.parametrize("path", FOLDERS, ids=IDS)
def test_expert_space_keeps_its_constraints_and_launch_limits(path: Path, tmp_path: Path) -> None:
    expert = _load(path / "expert", tmp_path)
    for shape in expert.shapes:
        env = expert.env(shape, "fp32")
        space = expert.template.space(env)
        assert len(space) > 1
        for config in space:
            assert space.rejection(config) is None, (shape, dict(config))
            launch = expert.template.launch_for(config, env)
            threads = launch.block[0] * launch.block[1] * launch.block[2]
            assert 32 <= threads <= env["max_threads_per_block"], (shape, dict(config))
            assert launch.block[2] <= 64 and launch.grid[1] < 65536 and launch.grid[2] < 65536
