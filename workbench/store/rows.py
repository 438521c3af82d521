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

from workbench.core.errors import StoreError
from workbench.store.base import (
    DECISIONS,
    ORIGINS,
    AgentIteration,
    LLMCall,
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
