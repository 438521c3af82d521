"""GPU tier: every test here needs a CUDA GPU and pycuda; elsewhere they are skipped."""

from __future__ import annotations

import importlib.util
import shutil

import pytest


def _have_gpu() -> bool:
    if importlib.util.find_spec("pycuda") is None or shutil.which("nvidia-smi") is None:
        return False
    return shutil.which("nvcc") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _have_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with pycuda and nvcc (GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
