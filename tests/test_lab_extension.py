"""The JupyterLab extension's Python side: packaging, the sidebar's index, the notebooks it
opens and ``workbench init`` behind "Tune this kernel". The browser tier drives the UI."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from workbench.core.errors import WorkbenchError
from workbench.ui import lab_index, lab_notebooks

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "extensions" / "workbench-lab"
KERNELS = ROOT / "sample_kernels"


def _source_hash() -> str:
    """What extensions/workbench-lab/scripts/stamp.js writes after a build."""
    names = ["package.json", "package-lock.json", "tsconfig.json", "webpack.config.js"]
    for folder in ("src", "style"):
        names += [p.relative_to(EXT).as_posix() for p in (EXT / folder).rglob("*") if p.is_file()]
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(name.encode() + b"\0" + (EXT / name).read_bytes() + b"\0")
    return digest.hexdigest()


def test_committed_build_matches_its_sources() -> None:
    stamp = (EXT / "labextension" / "build-source.sha256").read_text().strip()
    assert stamp == _source_hash(), (
        "extensions/workbench-lab/labextension is stale: run `npm ci && npm run build` there "
        "and commit labextension/")


def test_pip_installs_the_prebuilt_extension_and_the_server_extension() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shared = project["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    built = json.loads((EXT / "labextension" / "package.json").read_text())
    assert shared["extensions/workbench-lab/labextension"] == \
        f"share/jupyter/labextensions/{built['name']}"
    remote = ROOT / "extensions/workbench-lab/labextension" / built["jupyterlab"]["_build"]["load"]
    assert remote.is_file(), f"{remote} missing: the build is incomplete"
    config_src = next(k for k, v in shared.items() if v.startswith("etc/jupyter/"))
    config = json.loads((ROOT / config_src).read_text())
    assert config["ServerApp"]["jpserver_extensions"] == {"workbench.ui.lab_server": True}
    import workbench.ui.lab_server as server

    assert server._jupyter_server_extension_points() == [{"module": "workbench.ui.lab_server"}]


def test_finds_kernel_folders_below_the_roots(tmp_path: Path) -> None:
    found = lab_index.find_kernel_folders([KERNELS, tmp_path])
    assert sorted(p.name for p in found) == ["fused_add_rmsnorm", "merge_attn_states_lse",
                                             "silu_and_mul"]
    assert lab_index.relative_to_root(found[0], KERNELS) == found[0].name


@pytest.fixture(scope="module")
def tuned_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    from workbench import Workbench

    store = tmp_path_factory.mktemp("store") / "workbench.sqlite"
    outcome = Workbench(KERNELS / "silu_and_mul", store=store).tune(
        "decode", "bf16", budget=10, confirm=0)
    return store, outcome


def test_index_gives_best_and_speedup_against_the_recorded_baseline(
        tuned_store: tuple[Path, object], tmp_path: Path) -> None:
    store, outcome = tuned_store
    index = lab_index.kernel_index([KERNELS], KERNELS, store)
    assert index["problems"] == []
    silu = next(k for k in index["kernels"] if k["name"] == "silu_and_mul")
    session = silu["sessions"][0]
    results = outcome.results  # type: ignore[attr-defined]
    best = min(r.median_us for r in results if r.median_us is not None)
    baselines = lab_index.recorded_baselines(KERNELS / "silu_and_mul")
    assert baselines is not None
    assert session["best_us"] == best and session["best_problem"] == "decode/bf16"
    assert session["speedup"] == pytest.approx(baselines[1]["decode/bf16"] / best)
    assert session["status"] == (f"{sum(r.median_us is not None for r in results)} ok of "
                                 f"{len(results)} trials")
    other = next(k for k in index["kernels"] if k["name"] == "fused_add_rmsnorm")
    assert other["sessions"] == []


def test_no_speedup_when_trials_ran_on_another_gpu(tuned_store: tuple[Path, object]) -> None:
    from workbench.store.sqlite import SQLiteStore

    store_path, _ = tuned_store
    store = SQLiteStore(store_path)
    try:
        rows = lab_index.summarize_sessions(store, "silu_and_mul",
                                            ("NVIDIA B200", {"decode/bf16": 10.0}))
    finally:
        store.close()
    assert rows[0].speedup is None and "NVIDIA B200" in rows[0].speedup_note


def test_a_missing_store_is_not_created(tmp_path: Path) -> None:
    index = lab_index.kernel_index([KERNELS], tmp_path, tmp_path / "none.sqlite")
    assert not (tmp_path / "none.sqlite").exists()
    assert len(index["kernels"]) == 3


def test_panel_notebook_points_at_the_kernel_and_store_and_is_reused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat

    monkeypatch.delenv("WORKBENCH_STORE", raising=False)
    where = tmp_path / "nb"
    where.mkdir()
    path, created = lab_notebooks.write_panel_notebook(where, KERNELS / "silu_and_mul",
                                                       tmp_path / "workbench.sqlite")
    assert created and path.name == "tune-silu_and_mul.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    setup = nb.cells[1].source
    names: dict[str, object] = {}
    exec(compile(setup.replace("from workbench import Workbench", ""), "setup", "exec"), names)
    assert (where / str(names["KERNEL"])).resolve() == (KERNELS / "silu_and_mul").resolve()
    assert (where / str(names["STORE"])).resolve() == (tmp_path / "workbench.sqlite").resolve()
    assert "wb.panel()" in nb.cells[2].source
    path.write_text(path.read_text().replace("wb.panel()", "wb.panel()  # edited"))
    again, created = lab_notebooks.write_panel_notebook(where, KERNELS / "silu_and_mul",
                                                        tmp_path / "workbench.sqlite")
    assert again == path and not created and "# edited" in again.read_text()


def test_panel_notebook_refuses_a_folder_without_kernel_toml(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError, match="not a kernel folder"):
        lab_notebooks.write_panel_notebook(tmp_path, tmp_path, tmp_path / "s.sqlite")


def test_new_tuning_notebooks_get_fresh_names(tmp_path: Path) -> None:
    first = lab_notebooks.write_new_tuning_notebook(tmp_path, [KERNELS], tmp_path / "s.sqlite")
    second = lab_notebooks.write_new_tuning_notebook(tmp_path, [KERNELS], tmp_path / "s.sqlite")
    assert (first.name, second.name) == ("tuning-notebook.ipynb", "tuning-notebook-1.ipynb")
    assert "silu_and_mul" in first.read_text()


SCALE_CU = """__global__ void scale_kernel(float* out, const float* x, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i];
}
"""


def _has_init() -> bool:
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "init", "--help"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return done.returncode == 0


def test_run_init_scaffolds_a_folder_or_says_init_is_missing(tmp_path: Path) -> None:
    source = tmp_path / "scale.cu"
    source.write_text(SCALE_CU)
    if not _has_init():
        with pytest.raises(lab_notebooks.InitUnavailableError, match="no `init` command"):
            lab_notebooks.run_init(source)
        return
    folder = lab_notebooks.run_init(source)
    assert (folder / "kernel.toml").is_file()


def test_run_init_refuses_a_file_that_is_not_cuda(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(WorkbenchError, match="not a CUDA source file"):
        lab_notebooks.run_init(tmp_path / "notes.txt")
