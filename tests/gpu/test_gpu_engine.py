"""GPU tier: the worker isolates crashes and hangs, classifies every failure, and a sample
kernel's default config verifies and times. Run on the GPU machine: ``pytest -m gpu``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.params import Choice
from workbench.core.records import Candidate, Config, Status
from workbench.core.template import KernelTemplate
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
BROKEN = Path(__file__).parent / "broken_kernels" / "silu_broken.cu"
FAST = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=200, max_time_s=0.05, timeout_s=4.0)


@pytest.fixture(scope="module")
def silu() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")


def _broken_template() -> KernelTemplate:
    return KernelTemplate.build(
        name="silu_and_mul", source=BROKEN.read_text(), entry="silu_and_mul_kernel",
        params=[Choice("MODE", values_=(0, 1, 2, 3, 4, 5, 6, 7), default=0)],
        grid=["tokens"], block=["256"], source_name="silu_broken.cu")


def _one(runner: LocalRunner, mode: int, shape: str = "odd") -> tuple:
    started = time.perf_counter()
    [result] = list(runner.measure([Candidate(Config(MODE=mode), shape, "bf16")]))
    return result, time.perf_counter() - started


@pytest.mark.timeout(300)
def test_broken_kernels_are_classified_and_the_run_goes_on(silu: KernelFolder) -> None:
    with LocalRunner(silu, template=_broken_template(), settings=FAST) as runner:
        ok, _ = _one(runner, 0)
        assert ok.status is Status.OK, ok.reason
        assert ok.timing is not None and ok.timing.reps >= FAST.min_reps

        crash, crash_s = _one(runner, 1)
        assert crash.status is Status.CRASHED, (crash.status, crash.reason)
        assert "illegal" in crash.reason.lower() or "launch failure" in crash.reason.lower()

        hang, hang_s = _one(runner, 2)
        assert hang.status is Status.TIMEOUT, (hang.status, hang.reason)
        assert hang_s >= FAST.timeout_s

        wrong, _ = _one(runner, 3)
        assert wrong.status is Status.WRONG_RESULT and "outside" in wrong.reason, wrong.reason

        nan, _ = _one(runner, 4)
        assert nan.status is Status.WRONG_RESULT and "NaN" in nan.reason, nan.reason

        bad, _ = _one(runner, 5)
        assert bad.status is Status.COMPILE_ERROR, (bad.status, bad.reason)
        assert "deliberate compile error" in bad.log_excerpt

        holes, _ = _one(runner, 6)
        assert holes.status is Status.WRONG_RESULT and "not written" in holes.reason

        # a write just past the output: caught by the checksums of what it must not write,
        # and repaired, so the correct kernel and the baseline still verify afterwards
        past, _ = _one(runner, 7)
        assert past.status is Status.WRONG_RESULT, (past.status, past.reason)
        assert "outside its output arguments" in past.reason, past.reason
        fine, _ = _one(runner, 0)
        assert fine.status is Status.OK, fine.reason
        assert runner.baseline("small", "bf16").status is Status.OK

        # after a crash and a hang the worker was replaced and the run goes on
        again, _ = _one(runner, 0, shape="decode")
        assert again.status is Status.OK, again.reason
        assert runner.stats.restarts == 2
        assert len(runner.stats.recovery_s) == 2
        print(f"\ncrash evaluation {crash_s:.2f} s, hang evaluation {hang_s:.2f} s, "
              f"recovery (failure -> worker ready with the problem loaded) "
              f"{', '.join(f'{s:.2f}' for s in runner.stats.recovery_s)} s")


@pytest.mark.timeout(200)
def test_the_parent_process_never_imports_pycuda() -> None:
    # run in a fresh interpreter: the test session itself may have imported pycuda to probe
    code = ("import sys\n"
            "from workbench.core.kernel_folder import load_kernel_folder\n"
            "from workbench.engine.runner import LocalRunner\n"
            "with LocalRunner(load_kernel_folder(sys.argv[1])) as runner:\n"
            "    assert runner.baseline('small', 'bf16').timing is not None\n"
            "print('pycuda imported:', 'pycuda' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "sample_kernels" / "silu_and_mul")],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("pycuda imported: False")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse"])
def test_sample_default_config_verifies_and_times(name: str) -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / name)
    shape = "decode" if "decode" in folder.shapes else next(iter(folder.shapes))
    with LocalRunner(folder, settings=FAST) as runner:
        base = runner.baseline(shape, "bf16")
        assert base.status is Status.OK and base.timing is not None
        default = folder.template.default_config()
        [result] = list(runner.measure([Candidate(default, shape, "bf16")]))
        assert result.status is Status.OK, result.reason
        assert result.timing is not None and result.timing.median_us > 0
        assert result.usage is not None and result.occupancy is not None
        assert len(result.samples_us) == result.timing.reps
        copy = runner.copy_timing(shape, "bf16")
        assert copy.median_us > 0
        print(f"\n{name} {shape}/bf16: baseline {base.timing.median_us:.2f} us, default "
              f"{result.timing.median_us:.2f} us (rse {result.timing.rse_median_pct:.2f} %), "
              f"copy {copy.median_us:.2f} us = {copy.bandwidth_gb_per_s:.0f} GB/s, "
              f"throttled={result.timing.throttled}")


@pytest.mark.timeout(300)
def test_cupti_timer_reports_kernel_durations_inside_their_event_pairs(
        silu: KernelFolder) -> None:
    """timer="cupti": the samples are CUPTI kernel durations of the same launches whose event
    pairs are kept beside them; a kernel runs inside its event pair, so each duration is
    shorter than that repetition's event time, and the copy is timed the same way. The
    worker's fixed protocol is reported with the numbers: read flush, gated batches, the
    gate's SM clock."""
    settings = BenchSettings(warmup_ms=1.0, min_reps=20, max_reps=200, max_time_s=0.1,
                             timeout_s=4.0, timer="cupti")
    with LocalRunner(silu, settings=settings) as runner:
        default = silu.template.default_config()
        [result] = list(runner.measure([Candidate(default, "decode", "bf16")]))
        assert result.status is Status.OK, result.reason
        assert result.timing is not None
        kernel = result.samples_us
        events = result.event_samples_us
        assert result.method is not None and result.method.timer == "cupti"
        assert result.method.flush == "read" and result.method.gated
        assert result.method.sm_clock is not None and result.method.sm_clock.batches >= 1
        assert result.timing.l2_flushed
        assert len(kernel) == len(events) == result.timing.reps >= 20
        assert all(0 < k < e for k, e in zip(kernel, events, strict=True))
        assert result.timing.median_us < sorted(events)[len(events) // 2]
        copy = runner.copy_timing("decode", "bf16")
        assert copy.timing.reps >= 20 and copy.median_us > 0


@pytest.mark.timeout(300)
def test_auto_timer_picks_cupti_here_and_the_median_groups_by_the_measured_timer_tick(
        silu: KernelFolder) -> None:
    """The GPU machine has libcupti, so the default timer resolves to CUPTI (and says so);
    the worker measures the GPU timer's step once, every timestamp difference is a whole
    number of those steps (within CUPTI's 1 ns rounding), and the reported median is the
    grouped median over that step."""
    from workbench.engine.bench import grouped_median

    settings = BenchSettings(warmup_ms=1.0, min_reps=20, max_reps=200, max_time_s=0.1,
                             timeout_s=4.0)
    with LocalRunner(silu, settings=settings) as runner:
        assert runner.settings.timer == "cupti", runner.timer_note
        assert runner.timer_note == "cupti: auto: libcupti loaded"
        assert "cupti timer" in runner.description
        [result] = list(runner.measure([Candidate(silu.template.default_config(), "odd",
                                                  "bf16")]))
        assert result.status is Status.OK and result.timing is not None, result.reason
        assert result.method is not None
        tick = result.method.clock_tick_us
        assert 0.0 < tick <= 1.0
        samples = result.samples_us
        steps = [(s - min(samples)) / tick for s in samples]
        assert all(abs(x - round(x)) * tick < 0.0025 for x in steps), (tick, samples[:20])
        assert result.timing.median_us == pytest.approx(grouped_median(samples, tick), abs=1e-3)
        print(f"\ntimer tick {tick * 1e3:.1f} ns; silu odd default "
              f"{result.timing.median_us:.3f} us over {result.timing.reps} reps")
