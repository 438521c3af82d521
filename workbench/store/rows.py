"""What the SQL stores share: how records become row values and rows become records, and
the keyed ``SELECT`` of trials-like tables. Each store keeps only its dialect (placeholder
mark, upsert form, error mapping); ``mark`` is ``"?"`` for SQLite and ``"%s"`` for psycopg.

Rows are anything indexable by column name (``sqlite3.Row``, psycopg's ``dict_row``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from workbench.core.errors import StoreCorruptError, StoreError
from workbench.core.records import Status, TrialResult
from workbench.store.base import (
    DECISIONS,
    ORIGINS,
    AgentIteration,
    LLMCall,
    ProblemTally,
    Provenance,
    Review,
    TemplateVersion,
    TokenUsage,
    scrub_secrets,
)

PROVENANCE_COLUMNS = ("template_sha256", "compiler", "flags", "arch", "device", "driver")

VERSION_COLUMNS = ("id", "kernel", "parent_id", "session_id", "source_sha256", "source_text",
                   "params_json", "constraints_json", "launch_json", "origin",
                   "diff_vs_parent", "created")
REVIEW_COLUMNS = ("template_version_id", "decision", "reviewer", "time", "note",
                  "approved_text_sha256")
LLM_CALL_COLUMNS = ("session_id", "created", "request_json", "reply_text", "prompt_tokens",
                    "completion_tokens", "total_tokens")
TALLY_COLUMNS = ("session_id", "shape", "dtype", "trials", "ok", "best_us", "best_device",
                 "first_created")
ITERATION_COLUMNS = ("session_id", "iteration", "state", "best_us", "speedup", "detail_json",
                     "created")


def now() -> str:
    """The time stamp every store writes (UTC, ISO 8601, microseconds)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def insert_sql(table: str, columns: tuple[str, ...], mark: str) -> str:
    """``INSERT INTO table (columns) VALUES (marks)``."""
    return (f"INSERT INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join([mark] * len(columns))})")


def provenance_values(provenance: Provenance) -> tuple[str, ...]:
    """A provenance's values in :data:`PROVENANCE_COLUMNS` order."""
    return tuple(getattr(provenance, k) for k in PROVENANCE_COLUMNS)


def keyed_select(table: str, provenance: Provenance | None, shape: str | None,
                 dtype: str | None, mark: str) -> tuple[str, list[Any]]:
    """``SELECT *`` of a table keyed like trials, filtered by what is given, in write
    order."""
    where: list[str] = []
    values: list[Any] = []
    if provenance is not None:
        where += [f"{k} = {mark}" for k in PROVENANCE_COLUMNS]
        values += provenance_values(provenance)
    for column, value in (("shape", shape), ("dtype", dtype)):
        if value is not None:
            where.append(f"{column} = {mark}")
            values.append(value)
    return (f"SELECT * FROM {table}" + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY id", values)


def version_values(version: TemplateVersion, created: str) -> tuple[Any, ...]:
    """A template version's values for :data:`VERSION_COLUMNS`; StoreError on an unknown
    origin."""
    if version.origin not in ORIGINS:
        raise StoreError(f"template origin {version.origin!r} is not one of {ORIGINS}",
                         key="origin", value=version.origin, expected=ORIGINS)
    return (version.id, version.kernel, version.parent_id, version.session_id,
            version.source_sha256, version.source_text,
            json.dumps(dict(version.params), sort_keys=True),
            json.dumps(list(version.constraints)),
            json.dumps(dict(version.launch), sort_keys=True), version.origin,
            version.diff_vs_parent, version.created or created)


def version_from_row(row: Mapping[str, Any]) -> TemplateVersion:
    return TemplateVersion(
        id=row["id"], kernel=row["kernel"], source_text=row["source_text"],
        source_sha256=row["source_sha256"], params=json.loads(row["params_json"]),
        constraints=tuple(json.loads(row["constraints_json"])),
        launch=json.loads(row["launch_json"]), origin=row["origin"],
        parent_id=row["parent_id"], diff_vs_parent=row["diff_vs_parent"],
        session_id=row["session_id"], created=row["created"])


def review_values(review: Review) -> tuple[Any, ...]:
    """A review's values for :data:`REVIEW_COLUMNS`; StoreError on an unknown decision."""
    if review.decision not in DECISIONS:
        raise StoreError(f"review decision {review.decision!r} is not one of {DECISIONS}",
                         key="decision", value=review.decision, expected=DECISIONS)
    return (review.template_version_id, review.decision, review.reviewer, review.time,
            review.note, review.approved_text_sha256)


def llm_call_values(session_id: str, request: Mapping[str, Any], reply_text: str,
                    usage: TokenUsage, created: str) -> tuple[Any, ...]:
    """One LLM call's values for :data:`LLM_CALL_COLUMNS`, credentials scrubbed."""
    clean = scrub_secrets(dict(request))
    return (session_id, created, json.dumps(clean, sort_keys=True, default=str),
            str(scrub_secrets(reply_text)), usage.prompt_tokens, usage.completion_tokens,
            usage.total_tokens)


def llm_call_from_row(r: Mapping[str, Any]) -> LLMCall:
    return LLMCall(session_id=r["session_id"], request=json.loads(r["request_json"]),
                   reply_text=r["reply_text"],
                   usage=TokenUsage(r["prompt_tokens"], r["completion_tokens"],
                                    r["total_tokens"]),
                   created=r["created"], id=r["id"])


def iteration_values(iteration: AgentIteration, created: str) -> tuple[Any, ...]:
    """One agent iteration's values for :data:`ITERATION_COLUMNS`, its detail scrubbed."""
    return (iteration.session_id, iteration.iteration, iteration.state, iteration.best_us,
            iteration.speedup,
            json.dumps(scrub_secrets(dict(iteration.detail)), sort_keys=True, default=str),
            iteration.created or created)


def iteration_from_row(r: Mapping[str, Any]) -> AgentIteration:
    return AgentIteration(session_id=r["session_id"], iteration=r["iteration"],
                          state=r["state"], best_us=r["best_us"], speedup=r["speedup"],
                          detail=json.loads(r["detail_json"]), created=r["created"])


def parse_schema_version(value: Any, location: str, newest: int) -> int:
    """The ``schema_version`` kept in a store's ``meta`` table as an integer; a value that is
    not a whole number (edited by hand, written by something else) or one newer than
    ``newest`` is a clean error naming the store, the key and the value."""
    text = str(value)
    shown = text if len(text) <= 80 else text[:77] + "..."
    if not text.strip().isdigit() or not text.isascii():
        raise StoreCorruptError(
            f"store {location}: meta key schema_version holds {shown!r}, not a whole number; "
            "this file was changed by something other than the workbench: move it aside and "
            "open a new store path", file=location, key="schema_version", value=shown,
            expected="a whole number")
    version = int(text)
    if version > newest:
        raise StoreError(
            f"store {location} has schema version {version}, newer than this workbench "
            f"understands ({newest}); upgrade kernel-workbench", file=location,
            key="schema_version", value=version, expected=newest)
    return version


def tally_upsert_sql(mark: str) -> str:
    """Add one trial to its session's tally of its problem (insert or update), in the
    caller's transaction; SQLite and PostgreSQL share this ``ON CONFLICT`` form."""
    best = "session_tallies.best_us"
    return (f"{insert_sql('session_tallies', TALLY_COLUMNS, mark)} "
            "ON CONFLICT (session_id, shape, dtype) DO UPDATE SET "
            "trials = session_tallies.trials + 1, ok = session_tallies.ok + excluded.ok, "
            f"best_device = CASE WHEN excluded.best_us IS NOT NULL AND ({best} IS NULL OR "
            f"excluded.best_us < {best}) THEN excluded.best_device "
            "ELSE session_tallies.best_device END, "
            f"best_us = CASE WHEN excluded.best_us IS NOT NULL AND ({best} IS NULL OR "
            f"excluded.best_us < {best}) THEN excluded.best_us ELSE {best} END")


def _timed_ok(status: str, median_us: float | None) -> bool:
    return status == Status.OK.value and median_us is not None


def tally_values(session_id: str, result: TrialResult, provenance: Provenance,
                 created: str) -> tuple[Any, ...]:
    """One trial as a tally row of :data:`TALLY_COLUMNS` (a count of one)."""
    ok = _timed_ok(result.status.value, result.median_us)
    return (session_id, result.shape, result.dtype, 1, int(ok),
            float(result.median_us) if ok and result.median_us is not None else None,
            provenance.device if ok else "", created)


#: The trial columns a backfill reads, in write order.
BACKFILL_SELECT = ("SELECT session_id, shape, dtype, status, median_us, device, created "
                   "FROM trials WHERE session_id IS NOT NULL ORDER BY id")


def backfill_tallies(rows: Any) -> list[tuple[Any, ...]]:
    """Tally rows (:data:`TALLY_COLUMNS`) of a store written before tallies existed, from its
    trials' rows of :data:`BACKFILL_SELECT` in write order."""
    tallies: dict[tuple[str, str, str], list[Any]] = {}
    for r in rows:
        key = (r["session_id"], r["shape"], r["dtype"])
        ok = _timed_ok(r["status"], r["median_us"])
        entry = tallies.setdefault(key, [*key, 0, 0, None, "", r["created"]])
        entry[3] += 1
        if ok:
            entry[4] += 1
            if entry[5] is None or r["median_us"] < entry[5]:
                entry[5], entry[6] = float(r["median_us"]), r["device"]
    return [tuple(t) for t in tallies.values()]


def tally_from_row(r: Mapping[str, Any]) -> ProblemTally:
    return ProblemTally(session_id=r["session_id"], shape=r["shape"], dtype=r["dtype"],
                        trials=int(r["trials"]), ok=int(r["ok"]), best_us=r["best_us"],
                        best_device=r["best_device"], first_created=r["first_created"])
