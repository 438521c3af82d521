"""A defect inside the offline templater (an IndexError deep in a transform) is said as an
error naming the folder, the exception and where it happened; propose exits 2 with no
traceback and writes nothing."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from workbench.cli import main as cli_main
from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline

SAMPLES = Path(__file__).resolve().parents[2] / "sample_kernels"


def _index_error(*args: object, **kwargs: object) -> object:
    empty: list[object] = []
    return empty[0]  # the defect: an index past an empty list


@pytest.fixture
def rmsnorm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in ("WORKBENCH_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    target = tmp_path / "fused_add_rmsnorm"
    shutil.copytree(SAMPLES / "fused_add_rmsnorm", target,
                    ignore=shutil.ignore_patterns("recordings", "__pycache__"))
    monkeypatch.setattr(offline, "lift_kernel", _index_error)
    return target


def test_a_templater_defect_is_a_template_error_saying_where(rmsnorm: Path) -> None:
    with pytest.raises(TemplateError) as info:
        offline.offline_template(load_kernel_folder(rmsnorm))
    message = str(info.value)
    assert "fused_add_rmsnorm" in message and "baseline.cu" in message
    assert "IndexError: list index out of range" in message
    assert "test_adv_templater_defect.py:" in message  # the innermost frame, file and line
    assert info.value.details["error"] == "IndexError"


def test_propose_says_the_defect_and_writes_nothing(rmsnorm: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted((p.name, p.read_bytes()) for p in rmsnorm.iterdir() if p.is_file())
    out = io.StringIO()
    code = cli_main(["propose", str(rmsnorm), "--write", "--store", str(tmp_path / "s.sqlite")],
                    stdout=out)
    err = capsys.readouterr().err
    assert code == 2, out.getvalue() + err
    assert err.startswith("error: the offline templater failed on fused_add_rmsnorm")
    assert "Traceback" not in err + out.getvalue()
    assert sorted((p.name, p.read_bytes()) for p in rmsnorm.iterdir() if p.is_file()) == before
