"""The study owns the answer (issue 29): the confirmed pick is stored the moment a tune
decides it, and every export and view reads it back: the API's accessor and exports, the
``workbench export`` and ``workbench dispatch`` commands, the report notebook and the lab
sidebar. A session whose confirmed pick differs from the search's fastest stored trial shows
the pick everywhere; a session with no confirmation shows the search's best, marked as a
fallback with the reason (replay tier: scripted condition times, a real SQLite file)."""

from __future__ import annotations

import dataclasses
import io
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.picks import fastest_ok
from workbench.core.records import Candidate, Config, TrialResult
from workbench.testing.scripted_conditions import ScriptedConditionRunner, truth_table

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
SILU = ROOT / "sample_kernels" / "silu_and_mul"
#: The baseline: 10 us under every condition (every scripted config is 5-8 us).
BASELINE: dict[Config | None, dict[str, float]] = {
    None: {"read": 10.0, "write": 10.0, "warm": 10.0, "graph": 10.0}}


class DemotingRunner(ScriptedConditionRunner):
    """Scripted times per condition; the search's fastest finalist measures 3x the baseline
    under a dirty L2 ("write"), so the condition rule must pick another finalist."""

    def __init__(self) -> None:
        super().__init__(truth_table(BASELINE))
        self.demoted: Config | None = None

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        if condition is None:
            return super().measure(candidates)
        if self.demoted is None and len(candidates) > 1:  # round 1: the finalists
            self.demoted = min((c.config for c in candidates),
                               key=lambda c: self.time_us(c, "read"))
        out = list(super().measure(candidates, condition=condition))
        if condition != "write":
            return iter(out)
        return iter([dataclasses.replace(r, timing=dataclasses.replace(r.timing, median_us=30.0))
                     if r.config == self.demoted and r.timing is not None else r for r in out])


def _tuned(tmp_path: Path) -> tuple[Any, Any, Path]:
    from workbench.api import Workbench

    store = tmp_path / "s.sqlite"
    wb = Workbench(load_kernel_folder(SILU), store=store, runner=DemotingRunner())
    report = wb.tune("decode", "bf16", strategy="random", budget=16, confirm=3)
    return wb, report, store


def test_the_confirmed_pick_is_stored_with_typed_rounds_and_differs_from_the_fastest(
        tmp_path: Path) -> None:
    wb, report, _ = _tuned(tmp_path)
    fastest = fastest_ok(report.results)
    pick, fallback = report.answer()
    assert pick is not None and not fallback and pick.decided == "confirmed"
    assert fastest is not None and pick.config != fastest.config  # the rule demoted it
    assert pick.config == report.pick.config
    stored = wb.store.pick(wb.provenance(), "decode", "bf16")
    assert stored == pick and stored.condition == "read" and stored.holds is True
    assert stored.speedup == pytest.approx(10.0 / stored.median_us)
    rows = [r.measurement for r in wb.store.confirmations(stored.id)]
    assert {r.condition for r in rows} == {"read", "write", "warm", "graph"}
    assert {r.round_index for r in rows} == {1, 2}
    assert sum(r.is_baseline for r in rows) == 8  # the baseline beside each round/condition
    assert all(not r.config for r in rows if r.is_baseline)
    demoted = [r for r in rows if r.config == fastest.config and r.condition == "write"]
    assert demoted and demoted[0].median_us == 30.0


def test_a_reopened_session_reads_the_same_answer(tmp_path: Path) -> None:
    from workbench.api import Workbench

    _, report, store = _tuned(tmp_path)
    again = Workbench(load_kernel_folder(SILU), store=store, runner=DemotingRunner())
    pick = again.pick("decode", "bf16")
    assert pick == report.stored_pick
    assert pick is not None and not pick.is_fallback
    stored = again.stored_report("decode", "bf16")  # store reads alone: nothing measured
    assert stored.stored_pick == pick and stored.measured_now == 0
    assert stored.confirmation is not None and report.confirmation is not None
    assert stored.confirmation.chosen.config == report.confirmation.chosen.config == pick.config
    assert [r.config for r in stored.confirmation.selection] == \
        [r.config for r in report.confirmation.selection]
    assert stored.speedup == report.speedup
    assert stored.pick is not None and stored.pick.config == pick.config
    assert [r.config for r in stored.top] == [r.config for r in report.top]


def test_api_exports_write_the_confirmed_pick(tmp_path: Path) -> None:
    wb, report, _ = _tuned(tmp_path)
    pick = report.stored_pick
    fastest = fastest_ok(report.results)
    assert fastest is not None
    wb.export("header", str(tmp_path / "pick"), "decode", "bf16")
    header = (tmp_path / "pick.h").read_text()
    for key, value in pick.config.items():
        assert f"#define {key} {int(value) if isinstance(value, bool) else value}" in header
    assert "confirmed" in header and "fallback" not in header
    assert [line for line in header.splitlines() if line.startswith("#define")] != [
        f"#define {k} {int(v) if isinstance(v, bool) else v}" for k, v in fastest.config.items()]
    wb.export("json", str(tmp_path / "pick"), "decode", "bf16")
    data = json.loads((tmp_path / "pick.json").read_text())
    assert Config(data["config"]) == pick.config and data["decided"] == "confirmed"
    assert data["median_us"] == pytest.approx(pick.median_us) and data["fallback"] is False


def test_cli_export_and_dispatch_take_the_stored_pick(tmp_path: Path) -> None:
    from workbench.cli import main

    _, report, store = _tuned(tmp_path)
    pick = report.stored_pick
    out = io.StringIO()
    assert main(["export", str(SILU), "--shape", "decode", "--dtype", "bf16", "--store",
                 str(store), "--format", "json", "--out", str(tmp_path / "cli.json")],
                stdout=out) == 0
    data = json.loads((tmp_path / "cli.json").read_text())
    assert Config(data["config"]) == pick.config and data["decided"] == "confirmed"
    out = io.StringIO()
    assert main(["dispatch", str(SILU), "--shape", "decode", "--dtype", "bf16", "--store",
                 str(store), "--tolerance", "0", "--out", str(tmp_path / "d")], stdout=out) == 0
    table = json.loads((tmp_path / "d" / "silu_and_mul_bf16_dispatch.json").read_text())
    assert [Config(c) for c in table["configs"]] == [pick.config]
    assert "its stored pick: confirmed" in out.getvalue()


def test_the_report_notebook_shows_the_confirmed_pick(tmp_path: Path) -> None:
    import nbformat

    wb, report, _ = _tuned(tmp_path)
    pick = report.stored_pick
    path = wb.report(tmp_path / "r.ipynb")
    md = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells
                   if c.cell_type == "markdown")
    assert f"**{pick.median_us:.3f} µs**" in md and "confirmed (" in md
    block = md.split("## Pick: `decode` / `bf16`")[1].split("```c\n")[1].split("```")[0]
    assert block.strip().splitlines() == [
        f"#define {k} {int(v) if isinstance(v, bool) else v}" for k, v in pick.config.items()]


def test_the_sidebar_shows_the_stored_pick_of_each_session(tmp_path: Path) -> None:
    from workbench.store.sqlite import SQLiteStore
    from workbench.ui.lab_index import summarize_sessions

    _, report, store = _tuned(tmp_path)
    pick = report.stored_pick
    with SQLiteStore(store) as s:
        [summary] = summarize_sessions(s, "silu_and_mul", None)
    assert summary.decided == "confirmed" and summary.pick_config == dict(pick.config)
    assert summary.best_us == pytest.approx(pick.median_us)
    assert summary.speedup == pytest.approx(pick.speedup)
    assert summary.best_problem == "decode/bf16"


def test_the_panel_accessor_returns_the_pick_and_whether_it_is_a_fallback(
        tmp_path: Path) -> None:
    wb, report, _ = _tuned(tmp_path)
    pick = wb.pick("decode", "bf16")
    assert pick == report.stored_pick and pick.is_fallback is False
    assert wb.pick("prefill", "bf16") is None  # nothing tuned there


def test_without_a_confirmation_every_view_shows_the_fallback_and_why(tmp_path: Path) -> None:
    from workbench.api import Workbench
    from workbench.cli import main
    from workbench.engine.replay import ReplayRunner
    from workbench.store.sqlite import SQLiteStore
    from workbench.ui.lab_index import summarize_sessions

    folder = load_kernel_folder(SILU)
    store = tmp_path / "s.sqlite"
    wb = Workbench(folder, store=store, runner=ReplayRunner(folder))
    report = wb.tune("decode", "bf16", strategy="random", budget=8)
    pick, fallback = report.answer()
    assert pick is not None and fallback and pick.decided == "search-best"
    assert "cannot measure again" in pick.fallback_reason
    assert report.best is not None and pick.config == report.best.config
    assert "search-best fallback (no confirmation could run: " in pick.how()
    assert wb.pick("decode", "bf16") == pick
    wb.export("header", str(tmp_path / "pick"), "decode", "bf16")
    assert "search-best fallback (no confirmation could run" in (tmp_path / "pick.h").read_text()
    wb.export("json", str(tmp_path / "pick"), "decode", "bf16")
    data = json.loads((tmp_path / "pick.json").read_text())
    assert data["fallback"] is True and "cannot measure again" in data["fallback_reason"]
    with SQLiteStore(store) as s:
        [summary] = summarize_sessions(s, "silu_and_mul", None)
    assert summary.decided == "search-best" and "no confirmation could run" in summary.pick_note
    out = io.StringIO()
    assert main(["export", str(SILU), "--shape", "decode", "--dtype", "bf16", "--store",
                 str(store)], stdout=out) == 0
    assert "search-best fallback" in out.getvalue()


def test_a_version_2_store_is_migrated_and_its_confirmations_become_picks(
        tmp_path: Path) -> None:
    """A schema-2 file (re-measurements without the typed columns, no picks table) opens
    as schema 3: each confirmation that reached round 2 becomes a confirmed pick."""
    from workbench.store.sqlite import SQLiteStore

    _, report, store = _tuned(tmp_path)
    pick = report.stored_pick
    with sqlite3.connect(store) as db:  # rewind the file to schema 2
        db.execute("DROP TABLE picks")
        db.execute("DROP INDEX IF EXISTS remeasurements_by_pick")
        for column in ("pick_id", "cache_condition", "is_baseline"):
            db.execute(f"ALTER TABLE remeasurements DROP COLUMN {column}")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    with SQLiteStore(store) as s:
        assert s.schema_version() == 3
        [back] = s.picks(shape="decode", dtype="bf16")
        assert back.config == pick.config and back.decided == "confirmed"
        assert back.condition == "read" and back.median_us == pytest.approx(pick.median_us)
        rows = s.confirmations(back.id)
        assert len(rows) == len(s.remeasurements())
        assert {r.condition for r in rows} == {"read", "write", "warm", "graph"}


@pytest.mark.postgres
@pytest.mark.timeout(180)
def test_postgres_stores_the_pick_reads_it_back_and_migrates_a_version_2_schema() -> None:
    """The same through a real PostgreSQL server: tune, the accessor on a re-opened
    Workbench, the sidebar; then the schema rewound to version 2 and opened again."""
    psycopg = pytest.importorskip("psycopg")
    import os

    from workbench.api import Workbench
    from workbench.store.postgres import PostgresStore
    from workbench.testing.postgres_server import PostgresServer, PostgresUnavailable
    from workbench.ui.lab_index import summarize_sessions

    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        if os.environ.get("WORKBENCH_REQUIRE_POSTGRES"):
            raise
        pytest.skip(f"no PostgreSQL server can be started here: {exc}")
    try:
        schema = f"pick{os.getpid()}"
        url = f"{server.dsn}?schema={schema}"
        wb = Workbench(load_kernel_folder(SILU), store=url, runner=DemotingRunner())
        report = wb.tune("decode", "bf16", strategy="random", budget=16, confirm=3)
        pick = report.stored_pick
        assert pick is not None and pick.decided == "confirmed"
        fastest = fastest_ok(report.results)
        assert fastest is not None and pick.config != fastest.config
        wb.store.close()
        again = Workbench(load_kernel_folder(SILU), store=url, runner=DemotingRunner())
        assert again.pick("decode", "bf16") == pick
        [summary] = summarize_sessions(again.store, "silu_and_mul", None)
        assert summary.decided == "confirmed" and summary.pick_config == dict(pick.config)
        rows = again.store.confirmations(pick.id)
        assert sum(r.is_baseline for r in rows) == 8  # each round, each condition
        assert {r.condition for r in rows} == {"read", "write", "warm", "graph"}
        again.store.close()
        conn = psycopg.connect(server.dsn, autocommit=True,
                               options=f"-c search_path={schema}")
        conn.execute("DROP TABLE picks")
        for column in ("pick_id", "cache_condition", "is_baseline"):
            conn.execute(f"ALTER TABLE remeasurements DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        conn.close()
        with PostgresStore(server.dsn, schema=schema) as reopened:
            assert reopened.schema_version() == 3
            [back] = reopened.picks(shape="decode", dtype="bf16")
            assert back.config == pick.config and back.decided == "confirmed"
            assert back.median_us == pytest.approx(pick.median_us)
            assert len(reopened.confirmations(back.id)) == len(reopened.remeasurements())
    finally:
        server.stop()
