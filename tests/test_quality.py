"""Project-wide quality gates: the import layers, ruff and mypy."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(300)
def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    result = _run(exe, "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_core_imports_without_gpu_llm_or_ui_libraries() -> None:
    code = (
        "import sys\n"
        "for name in ('pycuda', 'openai', 'ipywidgets', 'plotly', 'anywidget', 'optuna'):\n"
        "    sys.modules[name] = None  # makes any import of them fail\n"
        "import workbench.core, workbench.core.kernel_folder, workbench.core.template\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


@pytest.mark.timeout(300)
def test_ruff_clean() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", "workbench", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(600)
def test_mypy_clean() -> None:
    result = _run(sys.executable, "-m", "mypy", timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
