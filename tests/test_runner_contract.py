"""One runner contract: every runner answers measure(candidates, condition=...) and
baseline(shape, dtype, condition=...), refuses a condition it cannot measure under with
ConditionUnavailable before any result, and open_runner is the one place that opens the
runner the API, CLI, agent and proposal gate measure with."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.conditions import CONDITIONS
from workbench.core.errors import NoGPUError, UsageError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Status
from workbench.engine import discovery
from workbench.engine.capabilities import Facts, ManyDevices, TemplateBound
from workbench.engine.conditions import (
    RECORDED_CONFIRMATION,
    ConditionUnavailable,
    unavailable,
)
from workbench.engine.dask_tasks import measurable
from workbench.engine.open import open_runner
from workbench.engine.replay import ReplayRunner
from workbench.engine.runner import Runner
from workbench.testing.scripted_conditions import ScriptedConditionRunner, truth_table
from workbench.testing.synthetic_runner import SyntheticRunner

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
SILU = ROOT / "sample_kernels" / "silu_and_mul"
SHAPE, DTYPE = "decode", "bf16"


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(SILU)


def _no_driver() -> discovery.NoLiveReason:
    return discovery.NoLiveReason(discovery.NoLive.NO_DRIVER, "libcuda.so.1: not found")


def test_every_runner_is_one_contract_and_says_what_it_measures_again_under(
        folder: KernelFolder) -> None:
    replay = ReplayRunner(folder)
    synthetic = SyntheticRunner(folder)
    scripted = ScriptedConditionRunner(truth_table({}))
    for runner in (replay, synthetic, scripted):
        assert isinstance(runner, Runner)
        assert not isinstance(runner, ManyDevices)
    assert isinstance(replay, Facts) and isinstance(synthetic, Facts)
    assert isinstance(replay, TemplateBound) and isinstance(synthetic, TemplateBound)
    assert not isinstance(scripted, Facts)  # nothing keys its trials but the table
    assert measurable(replay) == ("read",)      # its recording's confirmation
    assert measurable(synthetic) == ("read",)   # the model evaluated again
    assert measurable(scripted) == tuple(CONDITIONS)
    refused = unavailable(replay, CONDITIONS)
    assert refused is not None and refused.details["condition"] == "write"
    assert refused.details["measurable"] == ["read"]
    assert unavailable(scripted, CONDITIONS) is None


def test_a_refused_condition_is_refused_at_the_call_before_any_result(
        folder: KernelFolder) -> None:
    synthetic = SyntheticRunner(folder)
    candidate = Candidate(folder.template.default_config(), SHAPE, DTYPE)
    with pytest.raises(ConditionUnavailable) as info:
        synthetic.measure([candidate], condition="graph")  # not iterated: refused already
    assert info.value.details["runner"] == synthetic.description
    assert synthetic.measure_calls == 0
    with pytest.raises(ConditionUnavailable):
        synthetic.baseline(SHAPE, DTYPE, condition="warm")
    [again] = synthetic.measure([candidate], condition="read")
    assert again.status is Status.OK and synthetic.measure_calls == 1


def test_a_replay_answers_a_confirmation_with_its_recordings_own(folder: KernelFolder) -> None:
    replay = ReplayRunner(folder)
    assert replay.recording.confirmed  # the sweep's fastest few, measured again
    trial = next(t for t in replay.recording.trials
                 if replay.recording.confirmed_result(t.config, t.shape, t.dtype) is not None)
    [searched] = replay.measure([Candidate(trial.config, trial.shape, trial.dtype)])
    [again] = replay.measure([Candidate(trial.config, trial.shape, trial.dtype)],
                             condition="read")
    assert RECORDED_CONFIRMATION not in searched.extra
    assert again.extra[RECORDED_CONFIRMATION] is True and again.median_us
    assert again.median_us != searched.median_us  # another measurement, not the sweep's


def test_open_runner_replays_the_recording_asked_for(folder: KernelFolder) -> None:
    newest = open_runner(folder, replay="")
    assert isinstance(newest, ReplayRunner) and newest.template == folder.template
    named = open_runner(folder, replay=newest.recording.path)
    assert isinstance(named, ReplayRunner) and named.source == newest.source
    with pytest.raises(UsageError) as info:
        open_runner(folder, replay="", cluster="local")
    assert info.value.details["key"] == "replay"


def test_open_runner_states_why_it_cannot_measure_live_before_any_worker(
        folder: KernelFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "no_live_reason", _no_driver)
    with pytest.raises(NoGPUError) as info:
        open_runner(folder)
    assert info.value.details["no_live"] == _no_driver()
    assert "no live measurement here: no CUDA driver" in info.value.message


def test_the_api_falls_back_to_the_replay_open_runner_gives(
        folder: KernelFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.api import choose_runner

    monkeypatch.setattr(discovery, "no_live_reason", _no_driver)
    runner, mode = choose_runner(folder)
    assert isinstance(runner, ReplayRunner)
    assert mode == f"replay because {_no_driver().text}"
