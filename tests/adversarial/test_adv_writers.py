"""Every writer goes through the one write policy (issue 27, build item 1).

The writers: the approved template into its kernel folder (``write_template``, the panel's
Approve and ``propose --write``), report notebooks, CSV/JSON exports, recordings, and the
Export tab (``Workbench.export``). For each: a symlinked target pointing at a file outside
(that file stays unchanged), a dangling symlink (nothing appears where it points), a
symlinked parent folder (nothing lands in the folder it points to), an existing file (kept
unless ``overwrite``), and concurrent writers (one wins, the others get a clean refusal; the
Export tab gives each its own name).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.api import Workbench
from workbench.cli import main as cli_main
from workbench.core.errors import WorkbenchError, WriteRefusedError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.kernel_folder.write import write_template
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.engine.recording import Recording, load_recording, save_recording
from workbench.store.exports import write_csv, write_json
from workbench.testing.synthetic_runner import SyntheticRunner
from workbench.ui.report import ReportContent, write_report

OUTSIDE_TEXT = "export PS1='safe'  # the user's own file\n"
CONCURRENT = 6

# --- the plain file writers: write(path, overwrite) and a check of what was written


def _trial() -> TrialResult:
    timing = Timing(median_us=1.5, min_us=1.4, q1_us=1.45, q3_us=1.55, mean_us=1.5, reps=2,
                    rse_median_pct=1.0, l2_flushed=True)
    return TrialResult(config=Config({"BLOCK": 128}), shape="small", dtype="bf16",
                       status=Status.OK, timing=timing, samples_us=(1.5, 1.6))


def _report(path: Path, overwrite: bool) -> Path:
    content = ReportContent(kernel="k", device="d", baseline_source="", template_source="",
                            params=[], constraints=[], reviews=[], results=[_trial()],
                            baseline_us={})
    return write_report(path, content, sign=False, overwrite=overwrite)


def _csv(path: Path, overwrite: bool) -> Path:
    return write_csv([_trial()], path, overwrite=overwrite)


def _json(path: Path, overwrite: bool) -> Path:
    return write_json({"cache": {"128": {"time": 1.5}}}, path, overwrite=overwrite)


def _recording(path: Path, overwrite: bool) -> Path:
    rec = Recording(kernel="k", template_sha256="0" * 64, device={"name": "test", "spec": "h100_sxm"},
                    date="2026-11-26", bench={}, copy=(), baseline=(), trials=(_trial(),))
    return save_recording(rec, path, overwrite=overwrite)


def _check_report(path: Path) -> None:
    assert json.loads(path.read_text())["nbformat"] == 4


def _check_csv(path: Path) -> None:
    assert path.read_text().splitlines()[0].startswith("config") or "BLOCK" in path.read_text()


def _check_json(path: Path) -> None:
    assert json.loads(path.read_text())["cache"]["128"]["time"] == 1.5


def _check_recording(path: Path) -> None:
    assert load_recording(path).trials[0].median_us == 1.5


WRITERS: dict[str, tuple[Callable[[Path, bool], Path], Callable[[Path], None], str]] = {
    "report": (_report, _check_report, ".ipynb"),
    "csv": (_csv, _check_csv, ".csv"),
    "json": (_json, _check_json, ".json"),
    "recording": (_recording, _check_recording, ".json"),
}
writer_names = pytest.mark.parametrize("name", sorted(WRITERS))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file of the user's outside every folder a writer was given."""
    path = tmp_path / "home" / ".bashrc"
    path.parent.mkdir()
    path.write_text(OUTSIDE_TEXT)
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@writer_names
@pytest.mark.parametrize("overwrite", [False, True])
def test_symlinked_target_is_refused_and_the_outside_file_kept(
        name: str, overwrite: bool, work: Path, outside: Path) -> None:
    write, _check, suffix = WRITERS[name]
    target = work / f"out{suffix}"
    target.symlink_to(outside)
    with pytest.raises(WriteRefusedError):
        write(target, overwrite)
    assert outside.read_text() == OUTSIDE_TEXT and target.is_symlink()


@writer_names
def test_dangling_symlink_is_refused(name: str, work: Path, tmp_path: Path) -> None:
    write, _check, suffix = WRITERS[name]
    planted = tmp_path / "home" / ".profile"
    (work / f"out{suffix}").symlink_to(planted)
    with pytest.raises(WriteRefusedError):
        write(work / f"out{suffix}", True)
    assert not planted.exists() and not planted.parent.exists()


@writer_names
@pytest.mark.parametrize("below", ["", "sub/deeper"])
def test_symlinked_parent_folder_is_refused(name: str, below: str, work: Path,
                                            tmp_path: Path) -> None:
    write, _check, suffix = WRITERS[name]
    away = tmp_path / "away"
    away.mkdir()
    (work / "reports").symlink_to(away, target_is_directory=True)
    target = work / "reports" / below / f"out{suffix}"
    with pytest.raises(WriteRefusedError, match="symlink"):
        write(target, False)
    assert list(away.iterdir()) == []


@writer_names
def test_existing_file_is_kept_without_overwrite(name: str, work: Path) -> None:
    write, check, suffix = WRITERS[name]
    target = work / f"out{suffix}"
    target.write_text("the user's own file")
    with pytest.raises(WriteRefusedError, match="exist") as info:
        write(target, False)
    assert info.value.path.endswith(f"out{suffix}")
    assert target.read_text() == "the user's own file"
    assert write(target, True) == target.resolve()
    check(target)
    assert sorted(p.name for p in work.iterdir()) == [f"out{suffix}"]  # no temporary left


@pytest.mark.parametrize("name", ["csv", "json", "recording"])  # report: created them before
def test_missing_folders_are_created_below_a_real_folder(name: str, work: Path) -> None:
    write, check, suffix = WRITERS[name]
    target = work / "a" / "b" / f"out{suffix}"
    write(target, False)
    check(target)


@writer_names
def test_concurrent_writers_one_wins_the_rest_are_refused(name: str, work: Path) -> None:
    write, check, suffix = WRITERS[name]
    target = work / f"out{suffix}"
    outcomes = _race(lambda: write(target, False))
    assert [o for o in outcomes if isinstance(o, Path)] == [target.resolve()], outcomes
    refused = [o for o in outcomes if not isinstance(o, Path)]
    assert len(refused) == CONCURRENT - 1
    assert all(isinstance(o, WriteRefusedError) for o in refused), refused
    check(target)
    assert sorted(p.name for p in work.iterdir()) == [f"out{suffix}"]


def _race(fn: Callable[[], Any]) -> list[Any]:
    """``fn`` on CONCURRENT threads released together; each one's result or exception."""
    barrier = threading.Barrier(CONCURRENT)
    outcomes: list[Any] = [None] * CONCURRENT

    def one(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = fn()
        except BaseException as exc:  # the outcome under test
            outcomes[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(CONCURRENT)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return outcomes


# --- the approved template into its kernel folder


def _changed(folder: Path) -> Any:
    template = load_kernel_folder(folder).template
    return dataclasses.replace(template, source=template.source + "\n// approved v2\n")


@pytest.mark.parametrize("planted", ["kernel.toml", "template.cu"])
def test_template_write_refuses_a_symlinked_file(planted: str, kernel_copy: Path,
                                                 tmp_path: Path) -> None:
    template = _changed(kernel_copy)
    away = tmp_path / f"away-{planted}"
    shutil.move(kernel_copy / planted, away)
    before = away.read_bytes()
    (kernel_copy / planted).symlink_to(away)
    other = "template.cu" if planted == "kernel.toml" else "kernel.toml"
    other_before = (kernel_copy / other).read_bytes()
    with pytest.raises(WriteRefusedError, match="symlink"):
        write_template(kernel_copy, template)
    assert away.read_bytes() == before
    assert (kernel_copy / other).read_bytes() == other_before  # nothing half-written


def test_template_write_refuses_a_dangling_template_symlink(kernel_copy: Path,
                                                            tmp_path: Path) -> None:
    template = _changed(kernel_copy)
    toml_before = (kernel_copy / "kernel.toml").read_bytes()
    (kernel_copy / "template.cu").unlink()
    planted = tmp_path / "home" / ".bashrc"
    (kernel_copy / "template.cu").symlink_to(planted)
    with pytest.raises(WriteRefusedError, match="symlink"):
        write_template(kernel_copy, template)
    assert not planted.exists()
    assert (kernel_copy / "kernel.toml").read_bytes() == toml_before


def test_template_write_refuses_a_symlinked_kernel_folder(kernel_copy: Path,
                                                          tmp_path: Path) -> None:
    template = _changed(kernel_copy)
    link = tmp_path / "linked_kernel"
    link.symlink_to(kernel_copy, target_is_directory=True)
    before = (kernel_copy / "template.cu").read_bytes()
    with pytest.raises(WriteRefusedError, match="symlink"):
        write_template(link, template)
    assert (kernel_copy / "template.cu").read_bytes() == before


def test_template_write_refuses_a_symlinked_source_folder(kernel_copy: Path,
                                                          tmp_path: Path) -> None:
    away = tmp_path / "away"
    away.mkdir()
    (kernel_copy / "src").symlink_to(away, target_is_directory=True)
    with pytest.raises(WriteRefusedError, match="symlink"):
        write_template(kernel_copy, _changed(kernel_copy), source_name="src/template.cu")
    assert list(away.iterdir()) == []
    # the folder's own files are the intended update: replaced in place, no temporary left
    written = write_template(kernel_copy, _changed(kernel_copy))
    assert written.source_path.read_text().endswith("// approved v2\n")
    assert load_kernel_folder(kernel_copy).template.source.endswith("// approved v2\n")
    assert not [p for p in kernel_copy.iterdir() if p.name.endswith(".tmp")]


# --- propose --write (the command-line Approve), offline templater


@pytest.fixture
def rmsnorm_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in ("WORKBENCH_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    samples = Path(__file__).resolve().parents[2] / "sample_kernels"
    target = tmp_path / "fused_add_rmsnorm"
    shutil.copytree(samples / "fused_add_rmsnorm", target,
                    ignore=shutil.ignore_patterns("recordings", "__pycache__"))
    return target


def _propose(folder: Path, tmp_path: Path, *extra: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli_main(["propose", str(folder), "--write", "--store", str(tmp_path / "s.sqlite"),
                     *extra], stdout=out)
    return code, out.getvalue()


def test_propose_write_never_claims_an_unwritten_template(rmsnorm_copy: Path,
                                                          tmp_path: Path) -> None:
    """The folder holds a curated template; the offline templater proposes another."""
    before = (rmsnorm_copy / "template.cu").read_bytes()
    code, text = _propose(rmsnorm_copy, tmp_path)
    assert code == 1, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("propose refused") and "--force" in last, text
    assert "approved" not in text.replace("nothing approved", "")
    assert (rmsnorm_copy / "template.cu").read_bytes() == before
    code, text = _propose(rmsnorm_copy, tmp_path, "--force")
    assert code == 0, text
    assert "wrote template.cu" in text
    after = (rmsnorm_copy / "template.cu").read_bytes()
    assert after != before
    code, text = _propose(rmsnorm_copy, tmp_path)  # the same proposal again: nothing to do
    assert code == 0 and "already holds this template" in text, text
    assert (rmsnorm_copy / "template.cu").read_bytes() == after


@pytest.mark.parametrize("planted", ["kernel.toml", "template.cu"])
def test_propose_force_refuses_a_symlinked_file(planted: str, rmsnorm_copy: Path,
                                                tmp_path: Path) -> None:
    """A symlink the loader accepts (it stays inside the folder) is still never written
    through: the real file it names is left as it was and nothing is approved."""
    shared = rmsnorm_copy / "shared"
    shared.mkdir()
    shutil.move(rmsnorm_copy / planted, shared / planted)
    before = (shared / planted).read_bytes()
    (rmsnorm_copy / planted).symlink_to(Path("shared") / planted)
    code, text = _propose(rmsnorm_copy, tmp_path, "--force")
    assert code == 1, text
    assert "symlink" in text and "nothing approved or written" in text, text
    assert (shared / planted).read_bytes() == before


# --- the Export tab and wb.report() on a real Workbench (synthetic runner, real SQLite)

EXPORTS = {"header": ".h", "json": ".json", "csv": ".csv", "report": ".ipynb"}
export_kinds = pytest.mark.parametrize("what", sorted(EXPORTS))


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    """A Workbench over a copy of silu_and_mul with four stored trials at small/bf16."""
    samples = Path(__file__).resolve().parents[2] / "sample_kernels"
    base = tmp_path_factory.mktemp("tuned")
    folder = base / "silu_and_mul"
    shutil.copytree(samples / "silu_and_mul", folder,
                    ignore=shutil.ignore_patterns("recordings", "__pycache__"))
    kf = load_kernel_folder(folder)
    wb = Workbench(kf, store=base / "s.sqlite", runner=SyntheticRunner(kf))
    wb.tune("small", budget=4, auto_approve=True, confirm=0, l2_profile=False)
    yield wb


def _export(wb: Workbench, what: str, stem: Path, **kw: Any) -> Path:
    answer = wb.export(what, str(stem), "small", "bf16", **kw)
    return Path(answer.splitlines()[0].split()[1])


@export_kinds
def test_export_never_replaces_an_existing_file(what: str, tuned: Workbench,
                                                work: Path) -> None:
    suffix = EXPORTS[what]
    (work / f"x{suffix}").write_text("the user's own file")
    first = _export(tuned, what, work / "x")
    second = _export(tuned, what, work / "x")
    assert (first.name, second.name) == (f"x-2{suffix}", f"x-3{suffix}")
    assert (work / f"x{suffix}").read_text() == "the user's own file"
    assert _export(tuned, what, work / "x", overwrite=True) == (work / f"x{suffix}").resolve()
    assert (work / f"x{suffix}").read_text() != "the user's own file"


@export_kinds
def test_export_never_writes_through_a_symlink(what: str, tuned: Workbench, work: Path,
                                               outside: Path) -> None:
    suffix = EXPORTS[what]
    (work / f"x{suffix}").symlink_to(outside)
    assert _export(tuned, what, work / "x").name == f"x-2{suffix}"
    with pytest.raises(WriteRefusedError, match="symlink"):
        _export(tuned, what, work / "x", overwrite=True)
    assert outside.read_text() == OUTSIDE_TEXT


@export_kinds
def test_export_refuses_a_symlinked_folder(what: str, tuned: Workbench, work: Path,
                                           tmp_path: Path) -> None:
    away = tmp_path / "away"
    away.mkdir()
    (work / "exports").symlink_to(away, target_is_directory=True)
    with pytest.raises(WriteRefusedError, match="symlink"):
        _export(tuned, what, work / "exports" / "x")
    assert list(away.iterdir()) == []


@export_kinds
def test_concurrent_exports_each_get_their_own_file(what: str, tuned: Workbench,
                                                    work: Path) -> None:
    outcomes = _race(lambda: _export(tuned, what, work / "x"))
    assert all(isinstance(o, Path) for o in outcomes), outcomes
    assert len(set(outcomes)) == CONCURRENT
    assert len(os.listdir(work)) == CONCURRENT


def test_six_concurrent_reports_on_one_path(tuned: Workbench, work: Path) -> None:
    """The issue's case: six wb.report() on one path gave a raw FileExistsError. Now one
    is written and each of the other five is a WriteRefusedError naming the path."""
    target = work / "report.ipynb"
    outcomes = _race(lambda: tuned.report(target))
    written = [o for o in outcomes if isinstance(o, Path)]
    refused = [o for o in outcomes if not isinstance(o, Path)]
    assert len(written) == 1, outcomes
    assert all(isinstance(o, WriteRefusedError) and o.path.endswith("report.ipynb")
               for o in refused), refused
    assert not any(type(o) is FileExistsError for o in outcomes)
    assert json.loads(target.read_text())["nbformat"] == 4
    with pytest.raises(WorkbenchError, match="already exists"):
        tuned.report(target)
