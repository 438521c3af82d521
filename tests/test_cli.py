"""The `workbench` command line, end to end (real nvcc, real SQLite, replayed H100 data)."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.kernel_folder import load_kernel_folder

ROOT = Path(__file__).resolve().parents[1]
SILU = str(ROOT / "sample_kernels" / "silu_and_mul")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out)
    return code, out.getvalue()


@needs_nvcc
def test_check_compiles_and_reports_space_and_occupancy() -> None:
    code, text = run("check", SILU)
    assert code == 0, text
    assert "template@defaults" in text and "baseline" in text
    assert "after constraints" in text and "after launch limits" in text
    assert "occupancy" in text and "limited_by" in text
    assert "20736" in text and "3024" in text  # raw and constrained space of the sample (odd)


@needs_nvcc
def test_check_reports_a_template_that_does_not_compile(tmp_path: Path) -> None:
    folder = tmp_path / "silu"
    shutil.copytree(SILU, folder, ignore=shutil.ignore_patterns("recordings"))
    source = (folder / "template.cu").read_text()
    (folder / "template.cu").write_text(source.replace("typedef SCALAR_T scalar_t;",
                                                       "typedef SCALAR_T scalar_t\nint oops;"))
    code, text = run("check", str(folder))
    assert code == 1
    assert "failed to compile (syntax)" in text and "log:" in text


@needs_nvcc
def test_space_json_lists_pruned_configs_with_reasons(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_kernel_folder import make_folder

    folder = make_folder(tmp_path)
    code, text = run("space", str(folder), "--shape", "big", "--format", "json", "--all",
                     "--device", "titan_rtx")
    assert code == 0
    doc = json.loads(text)
    assert doc["raw"] == 18 and doc["after_constraints"] == 18
    assert len(doc["configs"]) == 18
    feasible = [c for c in doc["configs"] if c["feasible"]]
    assert feasible and all(c["occupancy"] is not None and c["regs"] for c in feasible)
    assert all(c["reason"] for c in doc["configs"] if not c["feasible"])


def test_space_without_compile_as_csv() -> None:
    code, text = run("space", SILU, "--shape", "decode", "--format", "csv", "--no-compile")
    assert code == 0
    lines = text.strip().splitlines()
    # one row per config of the constrained space
    expected = load_kernel_folder(Path(SILU)).space("decode", "bf16").size
    assert lines[0].startswith("BLOCK_THREADS,") and len(lines) == 1 + expected


def test_unknown_shape_and_strategy_are_clear_errors(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    code, _ = run("space", SILU, "--shape", "huge", "--no-compile")
    assert code == 2
    assert "unknown shape 'huge'" in capsys.readouterr().err
    code, _ = run("tune", SILU, "--shape", "decode", "--replay", "--strategy", "magic",
                  "--store", str(tmp_path / "s.sqlite"))
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown strategy 'magic'" in err and "guided" in err
    assert not (tmp_path / "s.sqlite").exists()  # refused before anything was created


@pytest.mark.replay
def test_tune_on_replay_reports_and_resumes(tmp_path: Path) -> None:
    store = tmp_path / "wb.sqlite"
    code, text = run("tune", SILU, "--shape", "decode", "--replay", "--budget", "30",
                     "--store", str(store))
    assert code == 0, text
    assert "replay of NVIDIA H100 80GB HBM3 recording from 2026-11-22" in text
    assert "speedup over baseline" in text and "% of it" in text
    assert "30 evaluated (30 measured now" in text
    # a replay cannot measure its finalists again, and says so instead of pretending
    assert "not confirmed: " in text and "cannot measure again" in text
    code, text = run("tune", SILU, "--shape", "decode", "--replay", "--budget", "50",
                     "--store", str(store))
    assert code == 0
    assert "50 evaluated (20 measured now" in text  # the first 30 came from the store
    with sqlite3.connect(store) as db:
        # configs the recording never measured (PDL 1, added since) are stored as pruned
        assert db.execute("select count(*) from trials where status = 'ok'").fetchone()[0] == 50
        assert db.execute("select count(*) from remeasurements").fetchone()[0] == 0


def test_tune_without_a_gpu_points_to_replay(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    if importlib.util.find_spec("pycuda") is not None:
        pytest.skip("pycuda is installed here: this checks the CPU-only message")
    code, _ = run("tune", SILU, "--shape", "decode")
    assert code == 3
    err = capsys.readouterr().err
    assert "cannot measure live" in err and "--replay" in err


def test_tune_refuses_a_timer_for_a_replay_and_names_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "wb.sqlite"
    code, _ = run("tune", SILU, "--shape", "decode", "--replay", "--timer", "cupti",
                  "--store", str(store))
    assert code == 2
    err = capsys.readouterr().err
    assert "--timer cupti applies to live measurement" in err and "recording" in err
    assert not store.exists()


@needs_nvcc
def test_propose_offline_prints_diff_and_parameters() -> None:
    code, text = run("propose", str(ROOT / "sample_kernels" / "fused_add_rmsnorm"))
    assert code == 0, text
    assert "offline templater" in text and "@@" in text
    assert "parameter" in text and "BLOCK_THREADS" in text
    assert "unverified: needs a GPU" in text


@needs_nvcc
@pytest.mark.replay
def test_agent_on_replay_reports_speedup_per_iteration(tmp_path: Path) -> None:
    code, text = run("agent", SILU, "--replay", "--iterations", "1", "--budget", "12",
                     "--shape", "decode", "--store", str(tmp_path / "a.sqlite"), "--auto-approve",
                     "--allow-unverified")  # replay: no GPU ran the gate
    assert code == 0, text
    assert text.strip().splitlines()[-1].startswith("agent done")  # the last line says how
    assert "iteration" in text and "speedup" in text


@needs_nvcc
@pytest.mark.replay
def test_agent_without_an_llm_says_why_no_llm_call_was_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    code, text = run("agent", SILU, "--replay", "--iterations", "2", "--budget", "6",
                     "--shape", "decode", "--store", str(tmp_path / "a.sqlite"),
                     "--auto-approve", "--allow-unverified")
    assert code == 0, text
    assert "0 LLM calls: no LLM endpoint is configured" in text
    assert "offline templater" in text and "measured by replay of" in text
    assert "this iteration" in text and "measured" in text


@needs_nvcc
@pytest.mark.replay
def test_agent_names_an_endpoint_that_cannot_be_reached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real openai client against a real loopback server that closes every
    connection unanswered: the last line names the endpoint, says it could not be reached
    and why; iteration 2's row says it measured nothing (its numbers are iteration 1's)."""
    from workbench.testing.openai_server import OpenAITranscriptServer, TranscriptStep

    monkeypatch.setenv("OPENAI_API_KEY", "k-0000")
    with OpenAITranscriptServer([TranscriptStep(drop=True)] * 4) as server:
        code, text = run("agent", SILU, "--replay", "--iterations", "2", "--budget", "6",
                         "--shape", "decode", "--store", str(tmp_path / "a.sqlite"),
                         "--auto-approve", "--allow-unverified", "--model", "m",
                         "--base-url", server.base_url, "--llm-timeout", "0.5")
        url = server.base_url
    last = text.strip().splitlines()[-1]
    assert code == 1, text
    assert last.startswith(f"agent failed: the LLM endpoint {url}"), last
    assert "could not be reached" in last and "connection failed" in last, last
    assert "plan step of iteration 2" in last, last
    rows = {line.split()[0]: line for line in text.splitlines() if line[:1].isdigit()}
    assert rows["1"].rstrip().endswith("measured")
    assert "failed in plan: nothing measured" in rows["2"]
