"""The measuring worker's view of the cluster's compile (issue 29 item 5): a cubin built on
this host by this very compiler is used as it is (no second source check and hash in the
process that feeds the GPU: ~20 ms of Python per config on a loaded 2-core host, and every
such slice delays the GPU's next request); a compile from another host, cache or compiler
is adopted and looked up as before, and a failed compile is final. Pure: a stand-in
compiler that counts its calls, no nvcc."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from workbench.core.records import Candidate, Config
from workbench.core.template import Launch
from workbench.engine.compiler import CompileResult
from workbench.engine.dask_tasks import CompiledArtifact, _local_compile
from workbench.engine.runner import PlannedCandidate

pytestmark = pytest.mark.timeout(30)

FLAGS = ("-cubin", "-arch=sm_90a", "-O3")


@dataclass
class _Compiler:
    """What _local_compile asks of a Compiler, counting the source checks (compile)."""

    cache_dir: Path
    version: str = "nvcc 13.0"
    flags: tuple[str, ...] = FLAGS
    arch: str = "sm_90a"
    compiles: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)

    def adopt(self, result: CompileResult, cubin: bytes) -> bool:
        self.adopted.append(result.cache_key)
        return True

    def compile(self, instance: Any) -> CompileResult:
        self.compiles.append(instance.hash)
        return CompileResult(instance_hash=instance.hash, arch=self.arch, ok=True,
                             cubin_path=str(self.cache_dir / "looked-up.cubin"), usage=None,
                             compile_s=0.02, cached=True, cache_key="k1")


@dataclass(frozen=True)
class _Instance:
    name: str = "k"
    entry: str = "k"
    source: str = "__global__ void k() {}"
    hash: str = "h1"


def _plan() -> PlannedCandidate:
    return PlannedCandidate(Candidate(Config({"B": 1}), "s", "bf16"), _Instance(),  # type: ignore[arg-type]
                            Launch(grid=(1, 1, 1), block=(32, 1, 1), smem_bytes=0))


def _artifact(tmp_path: Path, compiler: _Compiler, *, ok: bool = True, **changes: Any,
              ) -> CompiledArtifact:
    cubin = tmp_path / "k1.cubin"
    cubin.write_bytes(b"cubin")
    result = CompileResult(instance_hash="h1", arch="sm_90a", ok=ok,
                           cubin_path=str(cubin) if ok else None, usage=None, compile_s=0.9,
                           cache_key="k1", error_kind=None if ok else "syntax")
    fields: dict[str, Any] = {"host": socket.gethostname(), "cache_dir": str(compiler.cache_dir),
                              "compiler_version": compiler.version,
                              "compiler_flags": compiler.flags, **changes}
    return CompiledArtifact(result, b"cubin" if ok else b"", **fields)


def test_a_cubin_this_compiler_built_here_is_used_without_a_second_check(
        tmp_path: Path) -> None:
    compiler = _Compiler(tmp_path)
    artifact = _artifact(tmp_path, compiler)
    got = _local_compile(compiler, _plan(), artifact)  # type: ignore[arg-type]
    assert compiler.compiles == [] and compiler.adopted == []
    assert got.cubin_path == artifact.result.cubin_path and got.cached
    assert got.compile_s == 0.9  # the cluster's compile time


@pytest.mark.parametrize("changes", [
    {"host": "another-host"},
    {"cache_dir": "/elsewhere/cache"},
    {"compiler_version": "nvcc 12.8"},
    {"compiler_flags": (*FLAGS, "-G")},
    {},  # older artifacts name no compiler: checked as before
])
def test_any_other_compile_is_adopted_and_looked_up(tmp_path: Path,
                                                    changes: dict[str, Any]) -> None:
    compiler = _Compiler(tmp_path)
    artifact = (_artifact(tmp_path, compiler, **changes) if changes
                else CompiledArtifact(_artifact(tmp_path, compiler).result, b"cubin"))
    got = _local_compile(compiler, _plan(), artifact)  # type: ignore[arg-type]
    assert compiler.adopted == ["k1"] and compiler.compiles == ["h1"]
    assert got.cubin_path == str(tmp_path / "looked-up.cubin") and got.compile_s == 0.9


def test_a_missing_cubin_is_looked_up_again(tmp_path: Path) -> None:
    compiler = _Compiler(tmp_path)
    artifact = _artifact(tmp_path, compiler)
    Path(artifact.result.cubin_path or "").unlink()  # the cache was cleaned meanwhile
    _local_compile(compiler, _plan(), artifact)  # type: ignore[arg-type]
    assert compiler.compiles == ["h1"]


def test_a_failed_compile_is_final(tmp_path: Path) -> None:
    compiler = _Compiler(tmp_path)
    artifact = _artifact(tmp_path, compiler, ok=False)
    got = _local_compile(compiler, _plan(), artifact)  # type: ignore[arg-type]
    assert not got.ok and compiler.compiles == [] and compiler.adopted == []
