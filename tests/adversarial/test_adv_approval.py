"""Correctness before approval, report files, and how an agent run says it ended."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from adv_endpoint import ok_step

import workbench.cli as cli
import workbench.cli.agent as cli_agent
from workbench.agent import run_agent
from workbench.agent.propose import Version, auto_approval_refusal
from workbench.core.errors import WorkbenchError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.engine.compiler import Compiler
from workbench.llm.validation import ValidationProblem, ValidationReport
from workbench.store.sqlite import SQLiteStore
from workbench.testing.openai_server import OpenAITranscriptServer
from workbench.testing.synthetic_runner import SyntheticRunner
from workbench.ui.report import ReportContent, write_report

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_kernels"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def without_syncthreads(kernel: str) -> dict[str, Any]:
    """The kernel's own template with every ``__syncthreads();`` removed (a race)."""
    template = load_kernel_folder(SAMPLES / kernel).template
    assert "__syncthreads();" in template.source
    proposal = TemplateProposal.from_template(template)
    return json.loads(proposal.model_copy(update={
        "source": template.source.replace("__syncthreads();", "")}).model_dump_json())


def agent(kernel: str, tmp_path: Path, **options: Any) -> tuple[Any, SQLiteStore]:
    folder = load_kernel_folder(SAMPLES / kernel)
    store = SQLiteStore(tmp_path / "wb.sqlite")
    outcome = run_agent(folder, runner=SyntheticRunner(folder), store=store,
                        compiler=Compiler(cache_dir=tmp_path / "cubins",
                                          include_dir=folder.path),
                        iterations=1, budget=4, strategy="random", **options)
    return outcome, store


@needs_nvcc
def test_auto_approve_refuses_a_racy_llm_template_without_a_gpu(tmp_path: Path) -> None:
    from adv_endpoint import endpoint

    with endpoint([ok_step(without_syncthreads("fused_add_rmsnorm"))]) as (_, client, _r):
        outcome, store = agent("fused_add_rmsnorm", tmp_path, client=client, auto_approve=True)
    assert outcome.state.value == "review"
    assert "auto-approve refused" in outcome.reason and "--allow-unverified" in outcome.reason
    assert store.trials() == []  # nothing was tuned
    [version] = store.template_versions("fused_add_rmsnorm")
    assert [r.decision for r in store.reviews(version.id)] == ["proposed"]


@needs_nvcc
def test_allow_unverified_is_an_explicit_choice(tmp_path: Path) -> None:
    from adv_endpoint import endpoint

    with endpoint([ok_step(without_syncthreads("fused_add_rmsnorm"))]) as (_, client, _r):
        outcome, store = agent("fused_add_rmsnorm", tmp_path, client=client, auto_approve=True,
                               allow_unverified=True)
    assert outcome.state.value == "done" and store.trials() != []


@needs_nvcc
def test_auto_approve_refuses_the_offline_templater_without_a_gpu(tmp_path: Path) -> None:
    outcome, _ = agent("silu_and_mul", tmp_path, client=None, auto_approve=True)
    assert outcome.state.value == "review" and "(offline)" in outcome.reason


def _version(origin: str, status: str) -> Version:
    template = load_kernel_folder(SAMPLES / "silu_and_mul").template
    problems = (ValidationProblem("compile", "bf16", "x"),) if status == "failed" else ()
    report = None if status == "not run" else ValidationReport(
        problems=problems, checks_passed=(), checks_skipped=(),
        verified_on_gpu=status == "ok")
    return Version("0" * 32, template, origin, None, "", report)


@pytest.mark.parametrize(("origin", "status", "allow", "refused"), [
    ("llm", "ok", False, False), ("llm", "unverified", False, True),
    ("llm", "failed", False, True), ("llm", "not run", False, True),
    ("offline", "unverified", False, True), ("curated", "unverified", False, False),
    ("llm", "unverified", True, False), ("offline", "unverified", True, False)])
def test_auto_approval_rule(origin: str, status: str, allow: bool, refused: bool) -> None:
    why = auto_approval_refusal(True, allow, _version(origin, status))
    assert (why is not None) == refused
    assert auto_approval_refusal(False, allow, _version(origin, status)) is None


def test_report_never_overwrites_unless_asked(tmp_path: Path) -> None:
    content = ReportContent(kernel="k", device="d", baseline_source="", template_source="",
                            params=[], constraints=[], reviews=[], results=[],
                            baseline_us={})
    path = tmp_path / "report.ipynb"
    path.write_text("the user's own notebook")
    with pytest.raises(WorkbenchError, match="already exists"):
        write_report(path, content, sign=False)
    assert path.read_text() == "the user's own notebook"
    write_report(path, content, sign=False, overwrite=True)
    assert json.loads(path.read_text())["nbformat"] == 4
    with pytest.raises(WorkbenchError, match="is a directory"):
        write_report(tmp_path, content, sign=False, overwrite=True)


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), stdout=out), out.getvalue()


@pytest.mark.parametrize(("state", "reason", "ending", "status"), [
    ("done", "iteration budget spent (3 iterations)", "done", 0),
    ("done", "the plan says stop: nothing left", "done", 0),
    ("done", "LLM-call budget spent (2 of 2 calls) before plan", "budget", 3),
    ("failed", "LLM failed during plan: HTTP 500", "failed", 1),
    ("review", "waiting for review of template version x", "review", 4)])
def test_agent_endings(state: str, reason: str, ending: str, status: int) -> None:
    assert cli_agent.agent_ending(state, reason) == (ending, status)


@needs_nvcc
@pytest.mark.replay
def test_agent_cli_last_line_says_it_failed(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-0000")
    with OpenAITranscriptServer([]) as server:  # answers 500 to everything
        code, out = run_cli("agent", str(SAMPLES / "silu_and_mul"), "--replay", "--iterations",
                            "2", "--budget", "4", "--shape", "decode", "--auto-approve",
                            "--model", "m", "--base-url", server.base_url, "--llm-timeout",
                            "0.5", "--store", str(tmp_path / "a.sqlite"))
    last = out.strip().splitlines()[-1]
    assert code == 1 and last.startswith("agent failed: the LLM endpoint "), out
    assert "HTTP 500" in last and "plan step of iteration 2" in last, out
    assert "failed in plan: nothing measured" in out  # iteration 2's row is not its own


@needs_nvcc
@pytest.mark.replay
def test_agent_cli_last_line_says_the_budget_ended_it(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-0000")
    code, out = run_cli("agent", str(SAMPLES / "silu_and_mul"), "--replay", "--iterations", "2",
                        "--budget", "4", "--shape", "decode", "--auto-approve", "--model", "m",
                        "--base-url", "http://127.0.0.1:9/v1", "--llm-calls", "0",
                        "--store", str(tmp_path / "a.sqlite"))
    last = out.strip().splitlines()[-1]
    assert code == 3 and last.startswith("agent budget: LLM-call budget spent"), out
