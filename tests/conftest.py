"""Shared fixtures and tier handling."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from full_tier import listed as full_tier_listed
from helpers_session_cache import COMPILES_ENV

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_kernels"


_CACHE_ENV = "WORKBENCH_CACHE_DIR"
_RUN_CACHE: list[tuple[str, str]] = []  # (variable, folder) this run made, removed at its end


def pytest_configure(config: pytest.Config) -> None:
    """Tests never write into the user's cubin cache unless CI chose one: without
    ``WORKBENCH_CACHE_DIR`` the run gets a fresh one. It is set before pytest-xdist starts
    its workers, which inherit it, so a cubin two workers or modules need is compiled once
    (entries are renamed into place whole: parallel writers are safe). The same goes for
    ``WORKBENCH_TEST_COMPILES``, the run's host and ptxas compiles
    (tests/helpers_session_cache.py)."""
    if hasattr(config, "workerinput"):
        return
    for env, prefix in ((_CACHE_ENV, "workbench-test-cubins-"),
                        (COMPILES_ENV, "workbench-test-compiles-")):
        if env not in os.environ:
            os.environ[env] = tempfile.mkdtemp(prefix=prefix)
            _RUN_CACHE.append((env, os.environ[env]))


def pytest_unconfigure(config: pytest.Config) -> None:
    for env, folder in _RUN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get(env) == folder:
            del os.environ[env]
    _RUN_CACHE.clear()


def _has_gpu() -> bool:
    """pycuda installed and an NVIDIA device node present (no CUDA context is created here:
    only the GPU worker process may own one)."""
    import importlib.util

    if importlib.util.find_spec("pycuda") is None:
        return False
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


BROWSER_TIER = Path(__file__).parent / "browser"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: every browser test is seen here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The README's test command runs the browser tier in a process of its own after the rest
    # (`-n 2 -m "not browser and not full"`, then `-m browser tests/browser`, which collects
    # that folder alone); a browser test elsewhere would run in neither, so collecting one is
    # an error.
    # Should the whole suite run under pytest-xdist with `--dist loadgroup`, the browser
    # tests still stay on one worker, one JupyterLab and one Chromium at a time.
    for item in items:
        if item.get_closest_marker("browser") is not None:
            if BROWSER_TIER not in item.path.parents:
                raise pytest.UsageError(f"{item.nodeid} is marked browser but is not in "
                                        f"{BROWSER_TIER}: the browser tier would not run it")
            item.add_marker(pytest.mark.xdist_group("browser"))
    # The full tier (tests/full_tier.py): slow repeats the README's command leaves out.
    full = full_tier_listed()
    for item in items:
        if item.nodeid in full:
            item.add_marker(pytest.mark.full)
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and pycuda (run gpu_checks/run_gpu.sh on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def compiler() -> Any:
    """nvcc for sm_90a over the run's cubin cache (``WORKBENCH_CACHE_DIR``, shared by the
    modules and the xdist workers: a template config several tests compile is compiled
    once); skips without nvcc. Tests that count compiles or cache hits make their own."""
    from workbench.core.errors import CompilerNotFoundError
    from workbench.engine.compiler import Compiler

    try:
        return Compiler("sm_90a", cache_dir=os.environ[_CACHE_ENV])
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
