"""Run the committed notebooks headlessly (nbclient) against a copy, with a fresh store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNELS = ROOT / "sample_kernels"


def _has_recording(kernel: str) -> bool:
    return any((KERNELS / kernel / "recordings").glob("*.json"))


def _execute(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    work = tmp_path / "nb"
    work.mkdir()
    shutil.copy(NOTEBOOKS / name, work / name)
    monkeypatch.setenv("WORKBENCH_KERNELS", str(KERNELS))
    monkeypatch.setenv("WORKBENCH_STORE", str(work / "workbench.sqlite"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))  # report signing
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    nb = nbformat.read(work / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=100, kernel_name="python3",
                                     resources={"metadata": {"path": str(work)}})
    client.execute()
    return nb


def _text(nb: object) -> str:
    out = []
    for cell in nb.cells:  # type: ignore[attr-defined]
        for o in cell.get("outputs", []):
            out.append(o.get("text", ""))
            out.append(json.dumps(o.get("data", {})))
    return "\n".join(out)


@pytest.mark.parametrize("name", ["01-quickstart.ipynb", "02-teaching.ipynb", "03-review.ipynb"])
def test_notebooks_are_committed_without_outputs(name: str) -> None:
    nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.timeout(110)
def test_review_notebook_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = _execute("03-review.ipynb", tmp_path, monkeypatch)
    text = _text(nb)
    assert "proposed by the offline templater" in text
    assert "approved silu_and_mul-" in text
    assert "wb-space-size" in text


@pytest.mark.replay
@pytest.mark.timeout(110)
def test_quickstart_notebook_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _has_recording("silu_and_mul"):
        pytest.skip("no recording under sample_kernels/silu_and_mul/recordings yet: the "
                    "quickstart replays real H100 measurements and none are committed")
    nb = _execute("01-quickstart.ipynb", tmp_path, monkeypatch)
    text = _text(nb)
    assert "replay of" in text or "(live)" in text
    assert "best " in text and "#define" in text
    assert (tmp_path / "nb" / "quickstart-report.ipynb").exists()


@pytest.mark.replay
@pytest.mark.timeout(110)
def test_teaching_notebook_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _has_recording("silu_and_mul"):
        pytest.skip("no recording under sample_kernels/silu_and_mul/recordings yet: the "
                    "teaching notebook explains real H100 measurements and none are committed")
    nb = _execute("02-teaching.ipynb", tmp_path, monkeypatch)
    assert "% of peak" in _text(nb)

