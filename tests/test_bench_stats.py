"""Bench statistics and settings (pure, no GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.errors import WorkbenchError
from workbench.core.records import Timing
from workbench.engine.bench import (
    BenchSettings,
    grouped_median,
    median,
    median_standard_error,
    quartiles,
    rse_median_pct,
    should_stop,
    speedup_from_timings,
    speedup_interval,
    summarize,
)
from workbench.engine.timing_loop import flush_bytes


def test_median_and_quartiles_match_numpy() -> None:
    rng = np.random.default_rng(1)
    x = rng.lognormal(2.0, 0.3, size=101)
    assert median(x) == pytest.approx(float(np.median(x)))
    q1, q2, q3 = quartiles(x)
    assert (q1, q2, q3) == pytest.approx(tuple(np.percentile(x, [25, 50, 75])))
    assert q1 < q2 < q3


def test_order_statistic_standard_error_tracks_the_true_spread_of_the_median() -> None:
    # For normal data the median's standard error is sqrt(pi/2) * sigma / sqrt(n).
    rng = np.random.default_rng(7)
    n, sigma = 400, 2.0
    estimates = [median_standard_error(rng.normal(100.0, sigma, size=n)) for _ in range(200)]
    expected = math.sqrt(math.pi / 2) * sigma / math.sqrt(n)
    assert float(np.mean(estimates)) == pytest.approx(expected, rel=0.15)


def test_rse_shrinks_with_more_samples_and_is_inf_for_tiny_samples() -> None:
    rng = np.random.default_rng(3)
    small = rng.normal(10.0, 0.5, size=20)
    large = rng.normal(10.0, 0.5, size=2000)
    assert rse_median_pct(large) < rse_median_pct(small)
    assert math.isinf(rse_median_pct([1.0, 2.0]))


def test_stopping_rule_respects_min_reps_target_and_budgets() -> None:
    s = BenchSettings(min_reps=10, max_reps=50, max_time_s=1.0, target_rse_pct=0.5)
    steady = [10.0] * 9
    assert not should_stop(steady, 0.0, s)               # below min_reps
    assert should_stop([*steady, 10.0], 0.0, s)          # zero spread: precise
    noisy = list(np.random.default_rng(0).normal(10.0, 3.0, size=20))
    assert not should_stop(noisy, 0.1, s)                 # imprecise, budget left
    assert should_stop(noisy, 1.5, s)                     # time budget spent
    assert should_stop(list(np.random.default_rng(0).normal(10, 3, 50)), 0.1, s)  # max_reps


def test_summarize_builds_a_timing() -> None:
    t = summarize([3.0, 1.0, 2.0, 4.0, 5.0], l2_flushed=True, sm_clock_mhz=1980, throttled=False)
    assert isinstance(t, Timing)
    assert (t.median_us, t.min_us, t.mean_us, t.reps) == (3.0, 1.0, 3.0, 5)
    assert t.q1_us == 2.0 and t.q3_us == 4.0 and t.l2_flushed and t.sm_clock_mhz == 1980


def test_speedup_interval_covers_the_true_ratio_and_excludes_one_when_clear() -> None:
    rng = np.random.default_rng(11)
    ref = rng.normal(120.0, 2.0, size=200)
    cand = rng.normal(100.0, 2.0, size=200)
    ci = speedup_interval(ref, cand, seed=0)
    assert ci.low < 1.2 < ci.high
    assert ci.low > 1.0
    assert ci == speedup_interval(ref, cand, seed=0)  # deterministic
    same = speedup_interval(rng.normal(100, 2, 200), rng.normal(100, 2, 200))
    assert same.low < 1.0 < same.high


def test_speedup_from_timings_widens_with_noise() -> None:
    def timing(med: float, rse: float) -> Timing:
        return Timing(med, med, med, med, med, 50, rse, True)
    tight = speedup_from_timings(timing(120, 0.2), timing(100, 0.2))
    loose = speedup_from_timings(timing(120, 2.0), timing(100, 2.0))
    assert tight.speedup == pytest.approx(1.2)
    assert loose.high - loose.low > tight.high - tight.low
    assert tight.low < 1.2 < tight.high


def test_settings_validate_and_round_trip() -> None:
    s = BenchSettings(max_time_s=0.2)
    assert BenchSettings.from_dict(s.to_dict()) == s
    assert flush_bytes(50 << 20) == 2 * (50 << 20)  # twice the L2, always
    with pytest.raises(WorkbenchError) as info:
        BenchSettings(max_reps=2, min_reps=10)
    assert info.value.details["key"] == "max_reps"
    with pytest.raises(WorkbenchError):
        BenchSettings(timeout_s=0.1, max_time_s=0.5)


def test_timer_ticks_do_not_make_a_noisy_few_microsecond_median_look_precise() -> None:
    # 30 repetitions of a ~5 us kernel with a 7 % spread, read on a 32 ns event clock:
    # the middle order statistics tie, but the median is not known to 0.5 %.
    rng = np.random.default_rng(5)
    samples = np.round(rng.normal(5.0, 0.37, size=30) / 0.032) * 0.032
    s = BenchSettings(min_reps=10, max_reps=400, max_time_s=1.0, target_rse_pct=0.5)
    assert rse_median_pct(samples) > 1.0
    assert not should_stop(list(samples), 0.01, s)
    # with enough repetitions the same spread does reach the target
    many = np.round(rng.normal(5.0, 0.37, size=4000) / 0.032) * 0.032
    assert rse_median_pct(many) < 0.5


TICK_US = 0.032  # the H100's GPU timer step (CUDA events and CUPTI timestamps)


def _on_ticks(values: np.ndarray) -> np.ndarray:
    return np.round(values / TICK_US) * TICK_US


def test_grouped_median_interpolates_inside_the_middle_tick_by_the_share_below_it() -> None:
    half = np.array([1.888] * 50 + [1.920] * 50)
    assert grouped_median(half, TICK_US) == pytest.approx(1.904)  # the edge between them
    seventy = np.array([1.888] * 70 + [1.920] * 30)
    # 50 of the 70 samples in the lower tick sit below the middle: 1.872 + 50/70 * 0.032
    assert grouped_median(seventy, TICK_US) == pytest.approx(1.872 + 50 / 70 * 0.032)
    assert np.median(seventy) == pytest.approx(1.888)
    # CUPTI's durations jitter by a nanosecond around the tick values: still one tick each
    jittered = np.array([1.887, 1.888, 1.889] * 20 + [1.919, 1.920, 1.921] * 10)
    assert grouped_median(jittered, TICK_US) == pytest.approx(1.872 + 45 / 60 * 0.032, abs=1e-3)
    assert grouped_median([2.5] * 9, TICK_US) == pytest.approx(2.5)


def test_grouped_median_of_a_quantized_kernel_is_five_times_closer_than_the_sample_median() -> None:
    # a 1.90 us kernel with a 20 ns spread read off a 32 ns clock: the sample median can
    # only be 1.888 or 1.920, the grouped one lands near 1.90
    grouped, plain = [], []
    for seed in range(200):
        x = _on_ticks(np.random.default_rng(seed).normal(1.90, 0.02, size=160))
        grouped.append(grouped_median(x, TICK_US) - 1.90)
        plain.append(float(np.median(x)) - 1.90)
    rms_grouped = math.sqrt(float(np.mean(np.square(grouped))))
    rms_plain = math.sqrt(float(np.mean(np.square(plain))))
    assert rms_grouped < rms_plain / 4
    assert rms_plain > 0.010  # at least a third of a tick off, as the tick forces


def test_median_groups_only_with_a_fine_tick_and_rejects_a_bad_one() -> None:
    x = np.array([1.888] * 7 + [1.920] * 3)
    assert median(x) == pytest.approx(1.888)
    assert median(x, TICK_US) == pytest.approx(grouped_median(x, TICK_US))
    assert median(x, 1.0) == pytest.approx(1.888)  # a coarse clock: the plain median
    with pytest.raises(WorkbenchError, match="tick_us") as info:
        grouped_median(x, 0.0)
    assert info.value.details == {"key": "tick_us", "value": 0.0, "expected": "> 0"}


def test_tick_aware_error_never_claims_more_precision_than_the_tick_allows() -> None:
    same = np.array([1.92] * 40)  # every repetition on one tick value
    assert median_standard_error(same) == 0.0  # the tick-blind estimate: "exact"
    assert median_standard_error(same, TICK_US) == pytest.approx(TICK_US / math.sqrt(12))
    s = BenchSettings(min_reps=10, max_reps=400, max_time_s=1.0, target_rse_pct=0.25)
    assert should_stop(list(same), 0.01, s)
    assert not should_stop(list(same), 0.01, s, tick_us=TICK_US)
    # two ticks 70/30 over 10 samples: the density estimate tick * sqrt(n) / (2 * 7)
    x = np.array([1.888] * 7 + [1.920] * 3)
    assert median_standard_error(x, TICK_US) >= TICK_US * math.sqrt(10) / 14
    # and with many samples the tick-aware error does shrink below the target
    many = _on_ticks(np.random.default_rng(3).normal(1.90, 0.02, size=400))
    assert rse_median_pct(many, TICK_US) < 0.25


def test_summary_and_speedup_use_the_tick_aware_median() -> None:
    x = np.array([1.888] * 70 + [1.920] * 30)
    t = summarize(x, l2_flushed=True, tick_us=TICK_US)
    assert t.median_us == pytest.approx(grouped_median(x, TICK_US))
    assert (t.q1_us, t.q3_us) == pytest.approx((1.888, 1.920))
    ref = np.array([2.496] * 50 + [2.528] * 50)
    sp = speedup_interval(ref, x, tick_us=TICK_US, resamples=300)
    assert sp.speedup == pytest.approx(grouped_median(ref, TICK_US) / grouped_median(x, TICK_US))
    assert sp.low <= sp.speedup <= sp.high


def test_grouped_median_is_not_thrown_by_a_far_outlier() -> None:
    # one repetition that took 5 s (a stalled GPU) among 2 us ones: the median and its
    # error come from the occupied ticks only, in no time and memory
    x = np.array([1.888] * 60 + [1.920] * 39 + [5e6])
    assert grouped_median(x, TICK_US) == pytest.approx(1.872 + 50 / 60 * 0.032)
    assert median_standard_error(x, TICK_US) == pytest.approx(
        max(TICK_US * math.sqrt(100) / 120, median_standard_error(x)))
