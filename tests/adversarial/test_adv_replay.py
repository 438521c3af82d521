"""A replay answers only for the template its recording holds, on every path.

The recordings under ``sample_kernels/*/recordings`` hold real H100 measurements keyed by the
sha256 of the exact template text they were measured with, configs whose keys are the
parameter names, and each trial's launch. A replay used to answer by config key alone, so a
template the recording does not hold (an LLM's proposal under ``agent --auto-approve
--allow-unverified``, an edited ``template.cu`` or ``kernel.toml``) was stored with another
template's "ok" times. Each hostile edit below must be refused with a RecordingError naming
the recording file and what differs, before any trial is stored: through the runner, the
Workbench API (the panel's Launch runs the same call), ``workbench tune --replay``,
``workbench agent --replay`` and ``run_agent``.

Decision: a comment, whitespace or line-ending change is another template. The store's
trials and the approvals are keyed by the same exact-text sha256, and a normaliser that
understood comments would have to understand C++ strings, line splices and ``__LINE__``;
a recording re-keyed to an edited text is ``benchmarks/search/carry_recording.py``'s job, which
compares the compiled code.

A changed range is the same template with a different space: configs the recording measured
are answered, the others come back pruned "not in the recording", and none of those is "ok".
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

import workbench.cli as cli
from workbench.agent import run_agent
from workbench.api import Workbench
from workbench.core.errors import RecordingError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Candidate, Status
from workbench.core.template import KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.engine.recording import share_parse
from workbench.engine.replay import ReplayRunner
from workbench.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_kernels"
KERNEL = "silu_and_mul"
RECORDING = "h100_sxm-2026-11-22.json"
SHAPE, DTYPE = "decode", "bf16"

SECOND_KERNEL = ('\nextern "C" __global__ void other_kernel(float* out) { out[0] = 1.0f; }\n')

#: hostile edits of template.cu: (file text) -> edited text. Every one is another template.
SOURCE_EDITS: dict[str, Callable[[str], str]] = {
    "one character of code": lambda s: s.replace("1.0f + e", "2.0f + e", 1),
    "a comment appended": lambda s: s + "// edited\n",
    "one character of a comment": lambda s: s.replace("// silu_and_mul template",
                                                      "// silu_and_mul Template", 1),
    "a trailing space": lambda s: s.replace("\n", " \n", 1),
    "a blank line": lambda s: "\n" + s,
    "CRLF line endings": lambda s: s.replace("\n", "\r\n"),
    "a second kernel": lambda s: s + SECOND_KERNEL,
}

#: hostile edits of kernel.toml that keep template.cu: (toml text) -> (edited, what differs)
TOML_EDITS: dict[str, tuple[Callable[[str], str], str]] = {
    # the loader refuses a parameter template.cu does not use: the text is renamed too
    "renamed parameter": (lambda t: re.sub(r"\bUNROLL\b", "UNROLLING", t), "template_sha256"),
    "entry at a second kernel": (lambda t: t.replace('template.cu"\nentry = "silu_and_mul_kernel"',
                                                     'template.cu"\nentry = "other_kernel"'),
                                 "template_sha256"),  # the text gained the second kernel
    "grid doubled": (lambda t: t.replace('"ceil_div(tokens, TOKENS_PER_BLOCK)"',
                                         '"2 * ceil_div(tokens, TOKENS_PER_BLOCK)"'),
                     "launch.grid"),
    "block rule changed": (lambda t: t.replace("min(BLOCK_THREADS,", "min(BLOCK_THREADS // 2,"),
                           "launch.block"),
    "dynamic smem added": (lambda t: t.replace('ROW_SPLIT))"]\nsmem_bytes = "0"',
                                               'ROW_SPLIT))"]\nsmem_bytes = "4 * BLOCK_THREADS"'),
                           "launch.smem_bytes"),
}


def _copy(tmp_path: Path) -> Path:
    """A copy of the sample folder whose recording (8.7 MB, the same bytes) is not parsed
    again: its validation is the sample's own, which every load of the sample runs."""
    target = tmp_path / KERNEL
    shutil.copytree(SAMPLES / KERNEL, target, ignore=shutil.ignore_patterns("__pycache__"))
    share_parse(SAMPLES / KERNEL / "recordings" / RECORDING, target / "recordings" / RECORDING)
    return target


def _edit(path: Path, edit: Callable[[str], str]) -> None:
    text = path.read_bytes().decode()
    edited = edit(text)
    assert edited != text, "the edit must change the file"
    path.write_bytes(edited.encode())


def _edited_folder(tmp_path: Path, case: str) -> tuple[Path, str]:
    """A copy of the sample folder (its real recording included) with one hostile edit, and
    the recording key that must be named in the refusal."""
    folder = _copy(tmp_path)
    if case in SOURCE_EDITS:
        _edit(folder / "template.cu", SOURCE_EDITS[case])
        return folder, "template_sha256"
    toml_edit, key = TOML_EDITS[case]
    if case == "entry at a second kernel":
        _edit(folder / "template.cu", lambda s: s + SECOND_KERNEL)
    if case == "renamed parameter":
        _edit(folder / "template.cu", lambda s: re.sub(r"\bUNROLL\b", "UNROLLING", s))
    _edit(folder / "kernel.toml", toml_edit)
    return folder, key


ALL_EDITS = [*SOURCE_EDITS, *TOML_EDITS]


def _assert_refusal(exc: RecordingError, folder: Path, key: str) -> None:
    assert exc.details["file"] == str(folder / "recordings" / RECORDING)
    assert str(folder / "recordings" / RECORDING) in exc.message
    assert "does not hold this template" in exc.message
    assert any(d.startswith(key) for d in exc.details["differences"]), exc.details
    assert "Traceback" not in exc.message


def _stored(store_path: Path) -> list[Status]:
    if not store_path.exists():
        return []
    with SQLiteStore(store_path) as store:
        return [t.result.status for t in store.trials()]


# -- the runner ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", ALL_EDITS)
def test_the_runner_refuses_before_any_result(tmp_path: Path, case: str) -> None:
    folder_path, key = _edited_folder(tmp_path, case)
    folder = load_kernel_folder(folder_path)
    runner = ReplayRunner(folder)
    assert runner.problem  # the panel's header can say why before Launch
    asked = [Candidate(runner.template.default_config(), SHAPE, DTYPE)]
    with pytest.raises(RecordingError) as info:
        next(iter(runner.measure(asked)))
    _assert_refusal(info.value, folder_path, key)


@pytest.mark.parametrize("entry", ["other_kernel", "silu_and_mul", ""])
def test_an_entry_the_recorded_text_does_not_define_is_refused(entry: str) -> None:
    """The recorded text (same sha256) with another entry: the recording's entry is the
    text's one extern "C" kernel (the loader accepts no other)."""
    folder = load_kernel_folder(SAMPLES / KERNEL)
    runner = ReplayRunner(folder, template=replace(folder.template, entry=entry))
    with pytest.raises(RecordingError) as info:
        runner.measure([Candidate(folder.template.default_config(), SHAPE, DTYPE)],
                       condition="read")  # the recording's confirmation: refused alike
    assert [d.split(":")[0] for d in info.value.details["differences"]] == ["entry"]


def _renamed(template: KernelTemplate, old: str, new: str) -> KernelTemplate:
    from workbench.core.params import parameter_from_dict

    params = tuple(parameter_from_dict(new, p.to_dict()) if p.name == old else p
                   for p in template.params)
    return replace(template, params=params)


@pytest.mark.parametrize("change", ["renamed", "dropped", "added"])
def test_parameter_names_the_recording_lacks_are_refused(change: str) -> None:
    """Same recorded text, other parameter names (a template built in Python or proposed
    with the recorded source): the recorded configs' keys say which names were measured."""
    from workbench.core.params import Choice

    folder = load_kernel_folder(SAMPLES / KERNEL)
    base = folder.template
    if change == "renamed":
        template = _renamed(base, "UNROLL", "UNROLLING")
    elif change == "dropped":
        template = replace(base, params=tuple(p for p in base.params if p.name != "LOAD_PATH"))
    else:
        template = replace(base, params=(*base.params, Choice("EXTRA", (0, 1), default=0)))
    runner = ReplayRunner(folder, template=template)
    with pytest.raises(RecordingError) as info:
        list(runner.measure([Candidate(template.default_config(), SHAPE, DTYPE)]))
    [difference] = info.value.details["differences"]
    assert difference.startswith("parameters")
    assert info.value.details["file"].endswith(RECORDING)


def test_the_recorded_template_is_answered_as_before() -> None:
    folder = load_kernel_folder(SAMPLES / KERNEL)
    runner = ReplayRunner(folder)
    assert runner.problem == ""
    [result] = runner.measure([Candidate(folder.template.default_config(), SHAPE, DTYPE)])
    assert result.status is Status.OK and "warning" not in result.extra


def _widened(template: KernelTemplate, name: str, values: list[int]) -> KernelTemplate:
    from workbench.core.params import Choice

    params = [Choice(p.name, tuple(values),
                     default=p.default if p.default in values else values[0],
                     description=p.description)
              if p.name == name else p for p in template.params]
    return template.with_params(params)


@pytest.mark.parametrize(("name", "values"), [("UNROLL", [1, 2, 4, 8]),
                                              ("VEC_BYTES", [2, 4, 8, 16])])
def test_values_the_recording_lacks_are_never_ok(name: str, values: list[int]) -> None:
    folder = load_kernel_folder(SAMPLES / KERNEL)
    template = _widened(folder.template, name, values)
    runner = ReplayRunner(folder, template=template)
    assert runner.problem == ""  # same text, names and launch: the same template
    new = [v for v in values if v not in {p.name: p for p in folder.template.params}[name]
           .values()]
    asked = [Candidate(template.default_config().replace(**{name: v}), SHAPE, DTYPE)
             for v in new]
    results = list(runner.measure(asked))
    assert [r.status for r in results] == [Status.PRUNED] * len(new)
    assert all(r.reason.startswith("not in the recording") for r in results)


# -- the Workbench API (the panel's Launch calls the same tune) ----------------------------

@pytest.mark.parametrize("case", ["one character of code", "a comment appended",
                                  "renamed parameter", "grid doubled"])
def test_workbench_tune_refuses_and_stores_nothing(tmp_path: Path, case: str) -> None:
    folder_path, key = _edited_folder(tmp_path, case)
    store = tmp_path / "s.sqlite"
    folder = load_kernel_folder(folder_path)
    wb = Workbench(folder, store=store, runner=ReplayRunner(folder))
    with pytest.raises(RecordingError) as info:
        wb.tune(SHAPE, DTYPE, strategy="random", budget=8, auto_approve=True, l2_profile=False)
    _assert_refusal(info.value, folder_path, key)
    assert _stored(store) == []


def test_workbench_tune_of_a_proposal_over_the_real_recording_is_refused(
        tmp_path: Path) -> None:
    folder = load_kernel_folder(SAMPLES / KERNEL)
    store = tmp_path / "s.sqlite"
    wb = Workbench(folder, store=store, runner=ReplayRunner(folder))
    wb.adopt_template(replace(folder.template, source=folder.template.source + "// llm\n"),
                      origin="llm")
    with pytest.raises(RecordingError, match="template_sha256"):
        wb.tune(SHAPE, DTYPE, strategy="random", budget=8, auto_approve=True, l2_profile=False)
    assert _stored(store) == []


def test_workbench_tune_with_widened_values_stores_no_ok_for_them(tmp_path: Path) -> None:
    folder = load_kernel_folder(SAMPLES / KERNEL)
    store = tmp_path / "s.sqlite"
    wb = Workbench(folder, store=store, runner=ReplayRunner(folder))
    wb.adopt_template(_widened(folder.template, "UNROLL", [8, 16]), origin="offline")
    wb.tune(SHAPE, DTYPE, strategy="random", budget=12, auto_approve=True, confirm=0,
            l2_profile=False)
    statuses = _stored(store)
    assert statuses and Status.OK not in statuses


# -- the command line ---------------------------------------------------------------------

def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), stdout=out), out.getvalue()


@pytest.mark.parametrize("case", ["a comment appended", "CRLF line endings",
                                  "renamed parameter", "block rule changed",
                                  "entry at a second kernel"])
def test_cli_tune_replay_refuses(tmp_path: Path, case: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder_path, key = _edited_folder(tmp_path, case)
    store = tmp_path / "s.sqlite"
    code, out = run_cli("tune", str(folder_path), "--shape", SHAPE, "--replay", "--budget",
                        "8", "--strategy", "random", "--store", str(store))
    err = capsys.readouterr().err
    assert code != 0, out
    assert "does not hold this template" in err and RECORDING in err and key in err, err
    assert "Traceback" not in err + out
    assert Status.OK not in _stored(store)


@pytest.mark.parametrize("case", ["one character of code", "renamed parameter"])
def test_cli_agent_replay_refuses(tmp_path: Path, case: str,
                                  capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBENCH_MODEL", raising=False)
    folder_path, key = _edited_folder(tmp_path, case)
    store = tmp_path / "a.sqlite"
    code, out = run_cli("agent", str(folder_path), "--replay", "--iterations", "2",
                        "--budget", "6", "--shape", SHAPE, "--store", str(store),
                        "--auto-approve", "--allow-unverified")
    text = out + capsys.readouterr().err
    assert code != 0, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("agent failed") and "does not hold this template" in last, last
    assert RECORDING in last and key in last
    assert Status.OK not in _stored(store)


def test_the_cli_as_a_process_refuses_with_one_line(tmp_path: Path) -> None:
    folder_path, _ = _edited_folder(tmp_path, "a comment appended")
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "tune", str(folder_path),
                           "--shape", SHAPE, "--replay", "--budget", "4", "--store",
                           str(tmp_path / "s.sqlite")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "does not hold this template" in done.stderr and RECORDING in done.stderr


# -- the agent ----------------------------------------------------------------------------

def _agent(folder_path: Path, tmp_path: Path, **options: object) -> tuple[object, Path]:
    folder = load_kernel_folder(folder_path)
    store_path = tmp_path / "agent.sqlite"
    with SQLiteStore(store_path) as store:
        outcome = run_agent(folder, runner=ReplayRunner(folder, SAMPLES / KERNEL /
                                                        "recordings" / RECORDING),
                            store=store, compiler=Compiler(cache_dir=tmp_path / "cubins",
                                                           include_dir=folder.path),
                            iterations=2, budget=6, strategy="random", shape=SHAPE,
                            dtype=DTYPE, auto_approve=True, allow_unverified=True,
                            **options)  # type: ignore[arg-type]
    return outcome, store_path


@pytest.mark.parametrize("edit", ["one character of code", "a comment appended"])
def test_run_agent_on_a_template_the_recording_lacks_fails_cleanly(tmp_path: Path,
                                                                   edit: str) -> None:
    base = load_kernel_folder(SAMPLES / KERNEL).template
    template = replace(base, source=SOURCE_EDITS[edit](base.source))
    outcome, store = _agent(SAMPLES / KERNEL, tmp_path, initial_template=template)
    assert outcome.state.value == "failed"  # type: ignore[attr-defined]
    assert "does not hold this template" in outcome.reason  # type: ignore[attr-defined]
    assert Status.OK not in _stored(store)


def test_an_llm_proposal_is_not_stored_as_ok_under_replay(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The issue's case: an endpoint proposes a valid template (another text) and the
    agent runs with --auto-approve --allow-unverified over the real recording."""
    from adv_endpoint import ok_step

    from workbench.testing.openai_server import OpenAITranscriptServer

    base = load_kernel_folder(SAMPLES / KERNEL).template
    proposal = json.loads(TemplateProposal.from_template(base).model_copy(update={
        "source": base.source.replace("1.0f + e", "1.0f + e + 0.0f", 1)}).model_dump_json())
    monkeypatch.setenv("OPENAI_API_KEY", "k-0000")
    store = tmp_path / "a.sqlite"
    plan = {"diagnosis": "memory bound", "hypotheses": ["another exp"],
            "next_action": "new_template", "configs_to_enqueue": []}
    with OpenAITranscriptServer([ok_step(plan), ok_step(proposal)] + [ok_step(plan)] * 6
                                ) as server:
        code, out = run_cli("agent", str(SAMPLES / KERNEL), "--replay", "--iterations", "2",
                            "--budget", "4", "--shape", SHAPE, "--store", str(store),
                            "--auto-approve", "--allow-unverified", "--model", "m",
                            "--base-url", server.base_url, "--llm-timeout", "5")
    with SQLiteStore(store) as opened:
        keys = {t.provenance.template_sha256 for t in opened.trials()
                if t.result.status is Status.OK}
    assert code != 0 and "does not hold this template" in out.strip().splitlines()[-1], out
    assert keys <= {base.source_sha256}, out  # nothing ok for the proposed text


@pytest.mark.parametrize("change", ["entry", "parameters"])
def test_the_panel_is_told_before_launch_when_only_names_differ(tmp_path: Path,
                                                                change: str) -> None:
    """The panel's header and Launch read ``Workbench.replay_problem``: the recorded text
    with another entry or parameter names is a template the replay does not hold too."""
    folder = load_kernel_folder(SAMPLES / KERNEL)
    wb = Workbench(folder, store=tmp_path / "s.sqlite", runner=ReplayRunner(folder))
    assert wb.replay_problem == ""
    template = (replace(folder.template, entry="other_kernel") if change == "entry"
                else _renamed(folder.template, "UNROLL", "UNROLLING"))
    wb.adopt_template(template, origin="offline")
    assert change in wb.replay_problem and RECORDING in wb.replay_problem


@pytest.mark.parametrize("case", ["one character of code", "renamed parameter"])
def test_cli_dispatch_replay_refuses(tmp_path: Path, case: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    # dispatch --replay read the recording's trials directly: a template the recording
    # does not hold got a dispatch table of the recorded template's configs
    folder_path, key = _edited_folder(tmp_path, case)
    out_dir = tmp_path / "out"
    code, out = run_cli("dispatch", str(folder_path), "--shapes", SHAPE, "--replay",
                        "--out", str(out_dir))
    text = out + capsys.readouterr().err
    assert code != 0, text
    assert "does not hold this template" in text and RECORDING in text and key in text, text
    assert "Traceback" not in text
    assert not out_dir.exists() or not any(out_dir.iterdir())
