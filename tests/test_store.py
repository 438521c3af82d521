"""SQLiteStore on real files: the shipped contract, corruption, locking, two processes,
and the exports (pandas, CSV, Kernel Tuner cache read back by Kernel Tuner, T4)."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from helpers_fake_runner import synthetic_result, synthetic_space

from workbench.core.errors import StoreCorruptError, StoreError, StoreLockedError
from workbench.core.records import Candidate, Status, TrialResult
from workbench.core.space import SearchSpace
from workbench.store.base import scrub_secrets
from workbench.store.exports import (
    kernel_tuner_cache,
    t4_results,
    trials_dataframe,
    write_csv,
    write_json,
)
from workbench.store.sqlite import SCHEMA_VERSION, SQLiteStore
from workbench.testing.store_contract import PROVENANCE, StoreContract, sample_result

REPO = Path(__file__).resolve().parents[1]


class TestSQLiteStore(StoreContract):
    def make_store(self, tmp_path: Path) -> SQLiteStore:
        return SQLiteStore(tmp_path / "wb.sqlite")


def test_wal_mode_schema_version_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    with SQLiteStore(path) as store:
        store.record_trial(sample_result(), PROVENANCE)
        assert store.schema_version() == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with SQLiteStore(path) as again:
        assert again.count_trials() == 1


def test_garbage_file_is_corrupt_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    path.write_bytes(b"not a database at all " * 200)
    with pytest.raises(StoreCorruptError) as info:
        SQLiteStore(path)
    assert str(path) in str(info.value) and "move the file aside" in str(info.value)
    assert info.value.details["file"] == str(path)


def test_damaged_pages_are_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    with SQLiteStore(path) as store:
        for block in range(40):
            store.record_trial(sample_result(block), PROVENANCE)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[page + 8: 3 * page] = b"\xff" * (2 * page - 8)  # keep the header, smash pages
    path.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError):
        store = SQLiteStore(path)
        store.trials()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 99"):
        SQLiteStore(path)


@pytest.mark.timeout(20)
def test_locked_beyond_timeout(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    store = SQLiteStore(path, timeout_s=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreLockedError) as info:
            store.record_trial(sample_result(), PROVENANCE)
        assert info.value.details["timeout_s"] == 0.2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.record_trial(sample_result(), PROVENANCE) is True  # works once released
    store.close()


_WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from workbench.store.sqlite import SQLiteStore
    from workbench.testing.store_contract import PROVENANCE, sample_result
    store = SQLiteStore(sys.argv[1])
    first, last = int(sys.argv[2]), int(sys.argv[3])
    fresh = sum(store.record_trial(sample_result(block), PROVENANCE)
                for block in range(first, last))
    print(fresh)
""")


@pytest.mark.timeout(60)
def test_two_processes_write_one_database(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    SQLiteStore(path).close()
    script = _WRITER.format(tests=str(REPO / "tests"))
    # overlapping ranges: 0..150 and 100..250 -> 250 distinct keys, 50 written by both
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), str(a), str(b)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO)
             for a, b in ((0, 150), (100, 250))]
    outputs = [p.communicate(timeout=50) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    inserted = sum(int(out.strip()) for out, _ in outputs)
    with SQLiteStore(path) as store:
        assert store.count_trials() == 250
        blocks = sorted(t.result.config["BLOCK"] for t in store.trials())
    assert blocks == list(range(250))
    assert inserted == 250  # each of the 50 shared keys was inserted by exactly one writer


def test_scrub_secrets_is_deep() -> None:
    clean = scrub_secrets({"a": {"api_key": "k", "b": ["Bearer abc.def", {"token": "t"}]},
                           "text": "key sk-abcdefghijklmnop here"})
    text = json.dumps(clean)
    assert "abc.def" not in text and "sk-abcdefghijklmnop" not in text
    assert '"t"' not in text


def _results(space: SearchSpace | None = None) -> tuple[SearchSpace, list[TrialResult]]:
    space = space or synthetic_space()
    return space, [synthetic_result(Candidate(c, "s", "bf16")) for c in space]


def test_dataframe_and_csv(tmp_path: Path) -> None:
    space, results = _results()
    frame = trials_dataframe(results)
    assert len(frame) == space.size
    assert {"BLOCK", "ITEMS", "LOAD", "median_us", "status"} <= set(frame.columns)
    ok = frame[frame.status == "ok"]
    assert ok.median_us.notna().all()
    assert frame[frame.status == "compile_error"].median_us.isna().all()
    path = write_csv(results, tmp_path / "t.csv")
    assert path.read_text().splitlines()[0].startswith("shape,dtype,status")


def test_kernel_tuner_cache_format(tmp_path: Path) -> None:
    space, results = _results()
    tune = {p.name: list(p.values()) for p in space.params}
    cache = kernel_tuner_cache(results, tune_params=tune, kernel_name="k",
                               device_name="synthetic", problem_size=[7, 256])
    assert cache["tune_params_keys"] == ["BLOCK", "ITEMS", "LOAD"]
    assert len(cache["cache"]) == space.size
    failed = [r for r in results if r.status is Status.COMPILE_ERROR]
    assert failed, "the synthetic space should contain failures"
    key = ",".join(str(failed[0].config[n]) for n in tune)
    assert cache["cache"][key]["time"] == "CompilationFailedConfig"
    good = next(r for r in results if r.status is Status.OK)
    entry = cache["cache"][",".join(str(good.config[n]) for n in tune)]
    assert entry["time"] == pytest.approx((good.median_us or 0) / 1000)
    assert "times" not in entry  # no invented samples
    with pytest.raises(StoreError):
        kernel_tuner_cache([*results, results[0].__class__(**{**results[0].__dict__,
                                                              "shape": "other"})],
                           tune_params=tune, kernel_name="k", device_name="d")


@pytest.mark.skipif(importlib.util.find_spec("kernel_tuner") is None,
                    reason="kernel_tuner not installed")
@pytest.mark.timeout(60)
def test_kernel_tuner_simulation_reads_our_cache(tmp_path: Path) -> None:
    import kernel_tuner

    space, results = _results()
    tune = {p.name: list(p.values()) for p in space.params}
    cache = kernel_tuner_cache(results, tune_params=tune, kernel_name="synthetic",
                               device_name="synthetic", problem_size=[1])
    path = write_json(cache, tmp_path / "kt.json")
    keys = set(cache["cache"])

    def measured(params: dict[str, object]) -> bool:  # KT parses lambdas' source; use a def
        return ",".join(str(params[k]) for k in tune) in keys

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found, _ = kernel_tuner.tune_kernel(
            "synthetic", "__global__ void synthetic() {}", 1, [], tune, cache=str(path),
            simulation_mode=True, strategy="brute_force", quiet=True,
            restrictions=measured)
    valid = [r for r in found if isinstance(r["time"], float)]
    ok = [r.median_us for r in results if r.median_us is not None]
    assert len(valid) == len(ok)
    assert min(r["time"] for r in valid) == pytest.approx(min(ok) / 1000)


def test_t4_results_shape() -> None:
    space, results = _results()
    data = t4_results(results, param_names=[p.name for p in space.params])
    assert data["schema_version"] == "1.0.0"
    assert len(data["results"]) == space.size
    required = {"configuration", "times", "invalidity", "correctness"}
    assert all(required <= set(r) for r in data["results"])
    kinds = {r["invalidity"] for r in data["results"]}
    assert kinds == {"correct", "compile"}
    ok = next(r for r in data["results"] if r["invalidity"] == "correct")
    assert ok["measurements"][0]["name"] == "time" and ok["measurements"][0]["unit"] == "ms"
    assert ok["objectives"] == ["time"]


def test_raw_samples_and_method_are_stored_and_exported(tmp_path: Path) -> None:
    """A trial's raw samples are typed fields: they survive the store and reach both export
    formats (an earlier version read a key the runner never wrote, so none were exported)."""
    from dataclasses import replace

    from workbench.core.records import ClockStats, TimingMethod

    space, results = _results()
    good = next(r for r in results if r.status is Status.OK)
    method = TimingMethod(timer="cupti", flush="memset", gated=True, clock_tick_us=0.032,
                          window_medians_us=(5.0, 5.1),
                          sm_clock=ClockStats(1980.0, 1965.0, 1980.0, 12))
    timed = replace(good, samples_us=(5.0, 5.25, 5.5), event_samples_us=(7.0, 7.25, 7.5),
                    method=method)
    store = SQLiteStore(tmp_path / "s.sqlite")
    store.record_trial(timed, PROVENANCE)
    [back] = [t.result for t in store.trials(PROVENANCE)]
    assert back.samples_us == (5.0, 5.25, 5.5) and back.event_samples_us == (7.0, 7.25, 7.5)
    assert back.method == method
    tune = {p.name: list(p.values()) for p in space.params}
    others = [r for r in results if r.config != good.config]
    cache = kernel_tuner_cache([back, *others], tune_params=tune, kernel_name="k",
                               device_name="d")
    key = ",".join(str(good.config[n]) for n in tune)
    assert cache["cache"][key]["times"] == [0.005, 0.00525, 0.0055]  # ms
    [entry] = [e for e in t4_results([back], param_names=list(tune))["results"]]
    assert entry["times"]["runtimes"] == [0.005, 0.00525, 0.0055]


def test_results_written_with_samples_in_extra_read_back_typed() -> None:
    """Stores and recordings written before the typed fields kept samples and the timer in
    ``extra``: they read back into the typed fields, leaving ``extra`` for notes."""
    _, results = _results()
    good = next(r for r in results if r.status is Status.OK)
    old = good.to_dict()
    for name in ("samples_us", "event_samples_us", "method"):
        old.pop(name)
    old["extra"] = {"samples_us": [4.0, 4.5], "event_samples_us": [6.0, 6.5],
                    "timer": "cupti", "clock_tick_us": 0.032, "reused_from": {"BLOCK": 64},
                    "sm_clock_effective_mhz": {"median": 1980.0, "min": 1900.0, "max": 1980.0,
                                               "batches": 3}}
    back = TrialResult.from_dict(old)
    assert back.samples_us == (4.0, 4.5) and back.event_samples_us == (6.0, 6.5)
    assert back.method is not None and back.method.timer == "cupti"
    assert back.method.clock_tick_us == 0.032
    assert back.method.sm_clock is not None and back.method.sm_clock.batches == 3
    assert dict(back.extra) == {"reused_from": {"BLOCK": 64}}
