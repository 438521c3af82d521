"""nvcc for the template tests that read the PTX a config compiles to (pure tier where nvcc
is installed; CI has it, so do these tests)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from helpers_session_cache import shared_output

from workbench.core.records import Value
from workbench.core.template import KernelTemplate

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
_PTX_FLAGS = ("-ptx", "-arch=sm_90a", "-O3")


def ptx_of(template: KernelTemplate, config: Mapping[str, Value], dtype: str = "bf16") -> str:
    """The PTX ``template`` at ``config`` compiles to for sm_90a at -O3 (asserts it does);
    a source this test run compiled before is read back (tests/helpers_session_cache.py)."""
    assert NVCC is not None
    source = template.render(config, dtype).source

    def compile_to(ptx: Path) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "kernel.cu"
            src.write_text(source)
            done = subprocess.run([NVCC, *_PTX_FLAGS, "-o", str(ptx), str(src)],
                                  capture_output=True, text=True, timeout=100, check=False)
            assert done.returncode == 0, done.stderr

    return shared_output("ptx", [NVCC, *_PTX_FLAGS, source], compile_to).read_text()
