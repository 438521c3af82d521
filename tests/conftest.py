"""Shared fixtures and tier handling."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_kernels"


@pytest.fixture(autouse=True, scope="session")
def _private_cubin_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never write into the user's cubin cache unless CI chose one."""
    if "WORKBENCH_CACHE_DIR" not in os.environ:
        os.environ["WORKBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("cubins"))


def _has_gpu() -> bool:
    """pycuda installed and an NVIDIA device node present (no CUDA context is created here:
    only the GPU worker process may own one)."""
    import importlib.util

    if importlib.util.find_spec("pycuda") is None:
        return False
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The README's test command runs the browser tier in a process of its own after the rest
    # (`-n 2 -m "not browser"`, then `-m browser`); should the whole suite run under
    # pytest-xdist with `--dist loadgroup`, the browser tests still stay on one worker, one
    # JupyterLab and one Chromium at a time.
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(pytest.mark.xdist_group("browser"))
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and pycuda (run gpu_checks/run_gpu.sh on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def compiler() -> Iterator[Any]:
    """nvcc for sm_90a with a cache private to the test module (skips without nvcc)."""
    from workbench.core.errors import CompilerNotFoundError
    from workbench.engine.compiler import Compiler

    try:
        with tempfile.TemporaryDirectory() as cache:
            yield Compiler("sm_90a", cache_dir=cache)
    except CompilerNotFoundError:
        pytest.skip("nvcc is not installed")


@pytest.fixture
def llm() -> Iterator[Any]:
    """``llm(transcript_name, max_attempts=4) -> (server, client)``: the real openai client
    talking over a real loopback socket to a server replaying tests/transcripts/NAME.json."""
    pytest.importorskip("openai")
    from workbench.llm.client import LLMClient, LLMSettings
    from workbench.testing.openai_server import OpenAITranscriptServer, Transcript

    transcripts = Path(__file__).parent / "transcripts"
    opened: list[Any] = []

    def make(name: str, max_attempts: int = 4) -> tuple[Any, Any]:
        server = OpenAITranscriptServer(Transcript.load(transcripts / f"{name}.json")).start()
        client = LLMClient(LLMSettings(model="gpt-test", api_key="sk-test-key-123456789",
                                       base_url=server.base_url, timeout_s=10,
                                       max_attempts=max_attempts), sleep=lambda s: None)
        opened.append((server, client))
        return server, client

    yield make
    for server, client in opened:
        client.close()
        server.stop()
