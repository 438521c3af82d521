"""ReplayRunner over the committed H100 recordings, recording validation, tuning through the
Runner protocol, and LocalRunner refusing to start without a GPU."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.api import Workbench
from workbench.core.errors import NoGPUError, RecordingError, WorkbenchError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Status
from workbench.engine.conditions import RECORDED_CONFIRMATION, ConditionUnavailable
from workbench.engine.recording import load_recording, recording_paths, save_recording
from workbench.engine.replay import ReplayRunner
from workbench.engine.runner import LocalRunner, Runner

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")


def _folder(name: str) -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / name)


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="pycuda is here")
def test_local_runner_without_a_gpu_points_to_replay() -> None:
    with pytest.raises(NoGPUError) as info:
        LocalRunner(_folder("silu_and_mul"))
    assert "--replay" in info.value.message and "ReplayRunner" in info.value.message


@pytest.mark.replay
@pytest.mark.parametrize("name", SAMPLES)
def test_recording_is_complete_and_real(name: str) -> None:
    folder = _folder(name)
    [path] = recording_paths(folder.path)
    rec = load_recording(path)
    assert rec.device_name == "NVIDIA H100 80GB HBM3" and rec.device["spec"] == "h100_sxm"
    assert rec.template_sha256 == folder.template.source_sha256
    assert rec.sweep["complete"] is True
    measured = {(t.config.key(), t.shape, t.dtype) for t in rec.trials}
    added = rec.added_knobs  # knobs added since the sweep: recorded at one value
    assert not rec.added_values or rec.carried_over["checked"]  # values added since: unmeasured
    if added:  # carried over only where the same code was shown (carry_recording.py)
        assert rec.carried_over["checked"] and rec.carried_over["from_template_sha256"]
    for dtype in ("bf16", "fp16"):
        for shape in folder.shapes:
            for config in folder.space(shape, dtype):
                if all(config[k] == v for k, v in added.items()) and not any(
                        config[k] in vs for k, vs in rec.added_values.items()):
                    assert (config.key(), shape, dtype) in measured
    ok = [t for t in rec.trials if t.status is Status.OK]
    assert ok and all(t.timing and t.timing.median_us > 0 and t.timing.l2_flushed for t in ok)
    # distinct configs give distinct timings: nothing was copied or made up
    assert len({t.timing.median_us for t in ok if t.timing}) > len(ok) // 20
    for copy in rec.copy:
        # after the L2 eviction the copy's reads come from DRAM, so it cannot read faster
        # than the H100's ~3.35 TB/s; its writes may not: up to the L2's 50 MB they land in
        # the cache and are written back after the kernel's CUPTI duration has ended (the
        # 38 MB merge prefill copy measures 3.49 TB/s read + written)
        read_bytes = copy.bytes_moved / 2
        assert copy.median_us > 0
        assert read_bytes / (copy.median_us * 1e-6) / 1e9 < 3350, copy
        if copy.bytes_moved / 2 > 50e6:  # writes beyond the L2: both directions in DRAM
            assert copy.bandwidth_gb_per_s < 3350, copy


@pytest.mark.replay
def test_replay_answers_with_source_device_and_date() -> None:
    folder = _folder("silu_and_mul")
    with ReplayRunner(folder) as runner:
        assert isinstance(runner, Runner)
        assert runner.description == "replay of NVIDIA H100 80GB HBM3 recording from 2026-11-22"
        assert runner.device.key == "h100_sxm"
        base = runner.baseline("decode", "bf16")
        assert base.status is Status.OK and base.timing is not None
        default = folder.template.default_config()
        unknown = default.replace(BLOCK_THREADS=4096)
        results = list(runner.measure([Candidate(default, "decode", "bf16"),
                                       Candidate(unknown, "decode", "bf16")]))
        assert results[0].status is Status.OK and results[0].config == default
        assert results[0].source == ("replay:h100_sxm-2026-11-22.json "
                                     "(NVIDIA H100 80GB HBM3, 2026-11-22)")
        assert results[1].status is Status.PRUNED
        assert results[1].reason.startswith("not in the recording")
        assert runner.copy_timing("large", "bf16").bandwidth_gb_per_s > 2000
        with pytest.raises(RecordingError):
            runner.baseline("decode", "fp32")


@pytest.mark.replay
def test_replay_refuses_a_template_the_recording_does_not_hold() -> None:
    folder = _folder("fused_add_rmsnorm")
    edited = replace(folder.template, source=folder.template.source + "\n// edited\n")
    runner = ReplayRunner(folder, template=edited)
    assert "does not hold this template" in runner.problem
    with pytest.raises(RecordingError, match="template_sha256"):
        list(runner.measure([Candidate(edited.default_config(), "decode", "bf16")]))


@pytest.mark.replay
def test_an_exhaustive_tune_over_a_replay(tmp_path: Path) -> None:
    folder = _folder("silu_and_mul")
    runner = ReplayRunner(folder)
    report = Workbench(folder, store=tmp_path / "s.sqlite", runner=runner).tune(
        "large", "bf16", "exhaustive", budget=None, top=3)
    assert len(report.results) == folder.space("large", "bf16").size
    assert len(report.top) == 3
    medians = [r.timing.median_us for r in report.top if r.timing]
    assert medians == sorted(medians)
    ok = [r for r in runner.recording.trials
          if r.shape == "large" and r.dtype == "bf16" and r.timing]
    assert medians[0] == min(r.timing.median_us for r in ok if r.timing)
    assert report.speedup is not None
    assert report.speedup.low <= report.speedup.speedup <= report.speedup.high
    assert report.copy is not None and report.pct_of_copy is not None
    assert 50 < report.pct_of_copy < 110  # silu at 700 MB is bandwidth-bound
    assert "speedup over baseline" in report.summary()


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.replay
def test_recording_errors_name_the_file_and_key(tmp_path: Path) -> None:
    source = recording_paths(_folder("fused_add_rmsnorm").path)[0]
    rec = load_recording(source)
    small = replace(rec, trials=rec.trials[:5], baseline=rec.baseline[:2])
    good = save_recording(small, tmp_path / "ok.json")
    again = load_recording(good)
    assert again.trials == small.trials and again.copy == small.copy

    data = json.loads(good.read_text())
    bad = dict(data)
    del bad["device"]
    with pytest.raises(RecordingError) as info:
        load_recording(_write(tmp_path, bad))
    assert info.value.details["key"] == "device" and info.value.details["file"].endswith("rec.json")

    bad = json.loads(good.read_text())
    bad["trials"][3]["status"] = "fast"
    with pytest.raises(RecordingError) as info:
        load_recording(_write(tmp_path, bad))
    assert info.value.details["key"] == "trials[3].status"

    bad = json.loads(good.read_text())
    bad["trials"][1].pop("timing")
    bad["trials"][1]["status"] = "ok"
    with pytest.raises(RecordingError, match=r"trials\[1\]\.timing"):
        load_recording(_write(tmp_path, bad))

    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(RecordingError, match="valid JSON"):
        load_recording(tmp_path / "broken.json")
    with pytest.raises(RecordingError, match="not found"):
        load_recording(tmp_path / "missing.json")


@pytest.mark.replay
def test_replay_refuses_another_kernels_recording() -> None:
    other = recording_paths(_folder("silu_and_mul").path)[0]
    with pytest.raises(RecordingError) as info:
        ReplayRunner(_folder("fused_add_rmsnorm"), other)
    assert info.value.details["key"] == "kernel"


@pytest.mark.replay
@pytest.mark.parametrize("name", SAMPLES)
def test_recordings_carry_an_independent_confirmation_of_their_fastest_configs(name: str) -> None:
    """`record_sweeps.py --confirm` measured each (shape, dtype)'s 5 fastest configs again in
    a fresh worker with the sweep's settings; every one is there, ok, and a new number (the
    sweep's best reads low: a minimum over thousands of noisy medians)."""
    folder = _folder(name)
    [path] = recording_paths(folder.path)
    rec = load_recording(path)
    assert rec.confirmation["top"] == 5 and rec.confirmation["device"]["name"] == rec.device_name
    assert dict(rec.confirmation["bench"]) == dict(rec.bench)
    lower = 0
    for dtype in ("bf16", "fp16"):
        for shape in folder.shapes:
            ok = sorted((t for t in rec.trials if t.shape == shape and t.dtype == dtype
                         and t.status is Status.OK and t.timing),
                        key=lambda t: t.timing.median_us if t.timing else 0.0)[:5]
            for t in ok:
                again = rec.confirmed_result(t.config, shape, dtype)
                assert again is not None and again.status is Status.OK and again.median_us
                assert again.method is not None and again.method.timer == rec.bench["timer"]
                assert abs(again.median_us / t.median_us - 1) < 0.1  # same kernel, same GPU
            best = rec.confirmed_result(ok[0].config, shape, dtype)
            assert best is not None and best.median_us is not None and ok[0].median_us
            lower += ok[0].median_us < best.median_us
    assert lower > 0  # the confirmations are not copies of the sweep
    assert len(rec.confirmed) == 5 * 2 * len(folder.shapes)


@pytest.mark.replay
def test_a_recordings_confirmation_round_trips_and_its_errors_name_the_key(
        tmp_path: Path) -> None:
    rec = load_recording(recording_paths(_folder("silu_and_mul").path)[0])
    small = replace(rec, trials=rec.trials[:4], baseline=rec.baseline[:1],
                    confirmed=rec.confirmed[:2])
    again = load_recording(save_recording(small, tmp_path / "ok.json"))
    assert again.confirmed == small.confirmed and again.confirmation == small.confirmation
    t = again.confirmed[1]
    assert again.confirmed_result(t.config, t.shape, t.dtype) == t
    assert again.confirmed_result(t.config, t.shape, "fp8") is None
    unconfirmed = replace(small, confirmed=(), confirmation={})
    assert "confirmed" not in json.loads(save_recording(unconfirmed, tmp_path / "u.json")
                                         .read_text())

    data = json.loads((tmp_path / "ok.json").read_text())
    data["confirmed"][1]["status"] = "quick"
    with pytest.raises(RecordingError) as info:
        load_recording(_write(tmp_path, data))
    assert info.value.details["key"] == "confirmed[1].status"
    data = json.loads((tmp_path / "ok.json").read_text())
    data["confirmation"] = ["not", "a", "mapping"]
    with pytest.raises(RecordingError) as info:
        load_recording(_write(tmp_path, data))
    assert info.value.details["key"] == "confirmation"


@pytest.mark.replay
def test_a_replay_reports_its_recordings_confirmation_of_the_search_best() -> None:
    """A replay cannot measure again, but its recording measured the sweep's fastest configs
    again in a fresh worker: the tune report gives that time beside the search's."""
    from workbench.engine.tuning import build_report

    folder = _folder("merge_attn_states_lse")
    with ReplayRunner(folder) as runner:
        swept = [t for t in runner.recording.trials if t.shape == "decode" and t.dtype == "bf16"]
        results = list(runner.measure([Candidate(t.config, "decode", "bf16") for t in swept]))
        confirmed = build_report(folder.name, "decode", "bf16", runner, results, confirm=5)
        best = confirmed.best
        assert best is not None and best.median_us is not None
        # the recording's confirmation is what measuring again under its condition answers
        [again] = runner.measure([Candidate(best.config, "decode", "bf16")], condition="read")
        assert again.median_us and again.source == runner.source
        assert again.extra[RECORDED_CONFIRMATION] is True
        [none] = runner.measure([Candidate(best.config, "decode", "fp8")], condition="read")
        assert none.status is Status.PRUNED and none.timing is None
        with pytest.raises(ConditionUnavailable):  # a recording holds one condition
            runner.measure([Candidate(best.config, "decode", "bf16")], condition="write")
    assert confirmed.confirmation is None  # nothing is pretended to be measured again
    assert "cannot measure again" in confirmed.confirm_note
    assert (f"the search's best config at {again.median_us:.2f} us, the search "
            f"{best.median_us:.2f} us") in confirmed.confirm_note


@pytest.mark.replay
def test_a_recording_of_an_unknown_device_is_an_error_not_an_h100(tmp_path: Path) -> None:
    folder = _folder("fused_add_rmsnorm")
    rec = load_recording(recording_paths(folder.path)[0])
    small = replace(rec, trials=rec.trials[:3], baseline=rec.baseline[:1],
                    device={k: v for k, v in {**rec.device, "name": "Mystery GPU 9000"}.items()
                            if k != "spec"})
    with pytest.raises(RecordingError, match=r"device\.spec"):  # a file must name its spec
        load_recording(save_recording(small, tmp_path / "mystery.json"))
    with pytest.raises(RecordingError, match="Mystery GPU 9000") as info:
        ReplayRunner(folder, small)  # a Recording built in code is checked too
    assert info.value.details["key"] == "device.spec"
    from workbench.core.hardware import DEFAULT_DEVICE, default_device, get_device

    assert default_device() is get_device(DEFAULT_DEVICE)
    with pytest.raises(WorkbenchError, match="unknown device 'h1000'"):
        get_device("h1000")


@pytest.mark.replay
def test_replay_pace_is_the_recorded_time_per_config() -> None:
    folder = _folder("silu_and_mul")
    path = recording_paths(folder.path)[-1]
    sweep = load_recording(path).sweep
    paced = ReplayRunner(folder, path, pace="recorded")
    assert paced.pace_s == pytest.approx(sweep["wall_s"] / sweep["configs"])
    assert ReplayRunner(folder, path).pace_s == 0.0
    with pytest.raises(RecordingError, match="seconds per config or 'recorded'"):
        ReplayRunner(folder, path, pace="fast")
