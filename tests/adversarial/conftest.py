"""The adversarial tier: what a hostile endpoint, template or kernel folder can try.

Every test in this folder is marked ``adversarial`` (part of the default run) and asserts one
exact outcome: refused with the reason, a clean error naming what was wrong, or an end
within a deadline. Cheap cases are parametrized; endpoints are real loopback HTTP servers
spoken to by the real openai client; clocks are injected and deadlines tiny, so the tier
needs no real waits beyond a fraction of a second per deadline case.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[1] / "sample_kernels"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.adversarial)


@pytest.fixture
def kernel_copy(tmp_path: Path) -> Path:
    """A private copy of the silu_and_mul kernel folder (recordings left out)."""
    target = tmp_path / "silu_and_mul"
    shutil.copytree(SAMPLES / "silu_and_mul", target,
                    ignore=shutil.ignore_patterns("recordings", "__pycache__"))
    return target


@pytest.fixture
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A local file outside every kernel folder holding a unique token (a stand-in for a
    user's secret file): no byte of it may ever reach an endpoint."""
    token = "PLANTED-" + secrets.token_hex(16)
    path = tmp_path_factory.mktemp("home") / "credentials.txt"
    path.write_text(f"aws_secret_access_key = {token}\n{token}\n")
    yield path, token
