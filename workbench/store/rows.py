"""What the SQL stores share: how records become row values and rows become records, and
the keyed ``SELECT`` of trials-like tables. Each store keeps only its dialect (placeholder
mark, upsert form, error mapping); ``mark`` is ``"?"`` for SQLite and ``"%s"`` for psycopg.

Rows are anything indexable by column name (``sqlite3.Row``, psycopg's ``dict_row``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from workbench.core.errors import StoreCorruptError, StoreError
from workbench.core.picks import DECIDED, ConfirmationMeasurement, PickRecord
from workbench.core.records import Config, Status, TrialResult
from workbench.store.base import (
    DECISIONS,
    ORIGINS,
    AgentIteration,
    LLMCall,
    ProblemTally,
    Provenance,
    Review,
    StoredRemeasurement,
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


# -- picks and the confirmation measurements stored with them (schema 3) -----------------

PICK_COLUMNS = ("id", "session_id", "kernel", "template_version", *PROVENANCE_COLUMNS,
                "shape", "dtype", "config_key", "decided", "rule", "cache_condition",
                "fallback_reason", "median_us", "search_median_us", "baseline_us", "speedup",
                "speedup_low", "speedup_high", "holds", "measured_on", "created")
#: The columns schema 3 added to re-measurements (the typed confirmation fields).
CONFIRMATION_COLUMNS = ("pick_id", "cache_condition", "is_baseline")
#: Re-measurement columns before schema 3 (a store may be migrated from them).
REMEASUREMENT_V2_COLUMNS = ("id", "session_id", "round_index", "template_sha256", "config_key",
                            "shape", "dtype", "compiler", "flags", "arch", "device", "driver",
                            "status", "median_us", "result_json", "created")
#: The rule a pick backfilled from a schema-2 store names (the rule was not stored then).
BACKFILLED_RULE = ("backfilled from the round-2 re-measurements of a schema-2 store "
                   "(its rule was not recorded)")


def pick_values(pick: PickRecord, provenance: Provenance, created: str) -> tuple[Any, ...]:
    """A pick's values for :data:`PICK_COLUMNS`; StoreError on an unknown ``decided``."""
    if pick.decided not in DECIDED:
        raise StoreError(f"pick decided {pick.decided!r} is not one of {DECIDED}",
                         key="decided", value=pick.decided, expected=DECIDED)
    return (pick.id, pick.session_id, pick.kernel, pick.template_version,
            *provenance_values(provenance), pick.shape, pick.dtype, pick.config.key(),
            pick.decided, pick.rule, pick.condition, pick.fallback_reason,
            float(pick.median_us), pick.search_median_us, pick.baseline_us, pick.speedup,
            pick.speedup_low, pick.speedup_high,
            None if pick.holds is None else int(pick.holds), pick.device,
            pick.created or created)


def pick_from_row(r: Mapping[str, Any], location: str) -> PickRecord:
    """A stored pick; a row that does not read back is a StoreCorruptError naming it."""
    try:
        return PickRecord(
            id=r["id"], session_id=r["session_id"], kernel=r["kernel"],
            template_version=r["template_version"], shape=r["shape"], dtype=r["dtype"],
            config=Config.from_key(r["config_key"]), decided=r["decided"], rule=r["rule"],
            condition=r["cache_condition"], fallback_reason=r["fallback_reason"],
            median_us=float(r["median_us"]), search_median_us=r["search_median_us"],
            baseline_us=r["baseline_us"], speedup=r["speedup"], speedup_low=r["speedup_low"],
            speedup_high=r["speedup_high"],
            holds=None if r["holds"] is None else bool(r["holds"]), device=r["measured_on"],
            created=r["created"])
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise StoreCorruptError(
            f"store {location}: pick {str(r.get('id'))[:40]!r} does not read back "
            f"({type(exc).__name__}: {str(exc)[:200]})", file=location, table="picks",
            cause=str(exc)) from None


def confirmation_tags(result: TrialResult) -> tuple[str, bool]:
    """(cache condition, is_baseline) of a confirmation re-measurement, from the tags the
    condition rounds put in its ``extra`` (none: the search's condition, not a baseline)."""
    extra = result.extra or {}
    return str(extra.get("condition") or ""), bool(extra.get("is_baseline"))


def backfill_picks(rows: Any, kernels: Mapping[str, str]
                   ) -> tuple[list[tuple[Any, ...]], list[tuple[str, int]]]:
    """Picks (:data:`PICK_COLUMNS` rows) and (pick id, re-measurement id) links recovered
    from a schema-2 store's re-measurement rows (``SELECT *`` in write order): each run of
    rounds of one session, provenance, shape and dtype that reached round 2 is a confirmed
    pick of its round-2 config, timed under 'read' where it was measured (else the first
    condition). ``kernels``: session id -> kernel. The rule, the baseline and the template
    version were not stored then and stay empty."""
    runs: dict[tuple[Any, ...], list[list[Any]]] = {}
    for r in rows:
        key = (r["session_id"], *(r[k] for k in PROVENANCE_COLUMNS), r["shape"], r["dtype"])
        group = runs.setdefault(key, [[]])
        if group[-1] and int(r["round_index"]) < int(group[-1][-1]["round_index"]):
            group.append([])  # back to round 1: the next confirmation of this problem
        group[-1].append(r)
    picks: list[tuple[Any, ...]] = []
    links: list[tuple[str, int]] = []
    for key, group in runs.items():
        for run in group:
            second = []
            for r in run:
                result = TrialResult.from_dict(json.loads(r["result_json"]))
                condition, is_baseline = confirmation_tags(result)
                if int(r["round_index"]) == 2 and not is_baseline and result.config \
                        and result.status is Status.OK and result.median_us is not None:
                    second.append((condition, result))
            if not second:
                continue
            condition, chosen = next(((c, x) for c, x in second if c == "read"), second[0])
            pick_id = uuid.uuid4().hex
            session_id = key[0]
            pick = PickRecord(id=pick_id, session_id=session_id,
                              kernel=kernels.get(session_id or "", ""), template_version="",
                              shape=chosen.shape, dtype=chosen.dtype, config=chosen.config,
                              decided="confirmed", rule=BACKFILLED_RULE,
                              median_us=float(chosen.median_us or 0.0), device=chosen.device,
                              condition=condition, created=run[-1]["created"])
            provenance = Provenance(**dict(zip(PROVENANCE_COLUMNS, key[1:7], strict=True)))
            picks.append(pick_values(pick, provenance, pick.created))
            links += [(pick_id, int(r["id"])) for r in run]
    return picks, links


def latest_picks(picks: Sequence[PickRecord]) -> dict[tuple[str | None, str, str], PickRecord]:
    """The newest pick per (session, shape, dtype) of picks given in write order."""
    out: dict[tuple[str | None, str, str], PickRecord] = {}
    for p in picks:
        out[(p.session_id, p.shape, p.dtype)] = p
    return out


#: The columns trials and re-measurements share, in the order of :func:`result_values`.
RESULT_COLUMNS = ("template_sha256", "config_key", "shape", "dtype", "compiler", "flags",
                  "arch", "device", "driver", "status", "median_us", "result_json", "created")
#: A re-measurement row's columns, in the order of :func:`remeasurement_values`.
REMEASUREMENT_COLUMNS = ("session_id", "round_index", *RESULT_COLUMNS, *CONFIRMATION_COLUMNS)


def result_values(result: TrialResult, provenance: Provenance,
                  created: str | None = None) -> tuple[Any, ...]:
    """One result's values for :data:`RESULT_COLUMNS`, stamped ``created`` (default now)."""
    return (provenance.template_sha256, result.config.key(), result.shape, result.dtype,
            provenance.compiler, provenance.flags, provenance.arch, provenance.device,
            provenance.driver, result.status.value, result.median_us,
            json.dumps(result.to_dict(), sort_keys=True, default=str), created or now())


def remeasurement_values(measurement: ConfirmationMeasurement, provenance: Provenance,
                         session_id: str | None, pick_id: str,
                         created: str | None = None) -> tuple[Any, ...]:
    """One confirmation measurement's values for :data:`REMEASUREMENT_COLUMNS`."""
    return (session_id, measurement.round_index,
            *result_values(measurement.result, provenance, created), pick_id,
            measurement.condition, int(measurement.is_baseline))


def remeasurement_from_row(r: Mapping[str, Any], location: str) -> StoredRemeasurement:
    """A stored re-measurement; a row that does not read back (edited by hand, written by
    something else) is a StoreCorruptError naming it."""
    try:
        return StoredRemeasurement(
            result=TrialResult.from_dict(json.loads(r["result_json"])),
            provenance=Provenance(**{k: r[k] for k in PROVENANCE_COLUMNS}),
            round_index=int(r["round_index"]), session_id=r["session_id"],
            created=r["created"], pick_id=r["pick_id"], condition=r["cache_condition"],
            is_baseline=bool(r["is_baseline"]))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise StoreCorruptError(
            f"store {location}: row {r.get('id')} of remeasurements does not read back as a "
            f"trial ({type(exc).__name__}: {str(exc)[:200]}); delete that row or move the "
            "file aside and open a new store", file=location, table="remeasurements",
            row=r.get("id"), cause=str(exc)) from None
