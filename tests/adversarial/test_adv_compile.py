"""Every compile runs sandboxed: refused before nvcc, or stopped by a limit (real nvcc)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from workbench.core.records import Config
from workbench.core.template import KernelInstance
from workbench.engine.compiler import Compiler
from workbench.engine.sandbox import SandboxLimits
from workbench.engine.source_policy import SourceCheck

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'


def instance(source: str, name: str = "k") -> KernelInstance:
    return KernelInstance(name=name, entry="k", source=source, config=Config(), dtype="f32",
                          hash=str(abs(hash(source)))[:16])


class UncheckedCompiler(Compiler):
    """The limits alone (the include check switched off): only to test the limits."""

    def check(self, instance: Any) -> SourceCheck:
        return SourceCheck(())


@needs_nvcc
@pytest.mark.parametrize("directive", ['#include "/dev/zero"', "#include </etc/passwd>",
                                       '%:include "/proc/self/environ"'])
def test_refused_source_never_starts_nvcc(tmp_path: Path, directive: str) -> None:
    result = Compiler(cache_dir=tmp_path).compile(instance(f"{directive}\n{KERNEL}"))
    assert (result.ok, result.error_kind, result.error_line) == (False, "refused", 1)
    assert result.log_path is None and result.peak_rss_bytes == 0
    assert not (tmp_path / "tmp").exists()  # no work directory was even made


@needs_nvcc
def test_memory_limit_stops_the_dev_zero_preprocessor(tmp_path: Path) -> None:
    limits = SandboxLimits(address_space_bytes=512 << 20)
    result = UncheckedCompiler(cache_dir=tmp_path, limits=limits).compile(
        instance(f'#include "/dev/zero"\n{KERNEL}'))
    assert (result.ok, result.error_kind) == (False, "limit")
    assert "memory limit of 512 MiB" in result.error_summary
    assert 0 < result.peak_rss_bytes <= 512 << 20


@needs_nvcc
def test_file_size_limit(tmp_path: Path) -> None:
    result = UncheckedCompiler(cache_dir=tmp_path, limits=SandboxLimits(file_bytes=64 << 10)).compile(
        instance(KERNEL))
    assert (result.ok, result.error_kind) == (False, "limit")
    assert "file larger than the limit" in result.error_summary


@needs_nvcc
def test_log_read_back_is_capped(tmp_path: Path) -> None:
    noisy = "".join(f"#warning warning number {i} padding padding padding\n" for i in range(400))
    result = Compiler(cache_dir=tmp_path, limits=SandboxLimits(log_bytes=300)).compile(
        instance(noisy + KERNEL))
    assert result.log.endswith("[log cut at 300 bytes]\n")
    assert len(result.log) < 400


@needs_nvcc
def test_wall_limit(tmp_path: Path) -> None:
    result = Compiler(cache_dir=tmp_path, timeout_s=0.05).compile(instance(KERNEL + "// t\n"))
    assert (result.ok, result.error_kind) == (False, "timeout")


@needs_nvcc
def test_local_header_compiles_and_keys_the_cache(tmp_path: Path) -> None:
    folder = tmp_path / "kernel"
    folder.mkdir()
    (folder / "scale.cuh").write_text("#define SCALE 2.0f\n")
    source = ('#include "scale.cuh"\n'
              'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= SCALE; }\n')
    compiler = Compiler(cache_dir=tmp_path / "cache", include_dir=folder)
    first = compiler.compile(instance(source))
    assert first.ok, first.log
    (folder / "scale.cuh").write_text("#define SCALE 3.0f\n")
    second = compiler.compile(instance(source))
    assert second.ok and not second.cached and second.cache_key != first.cache_key
