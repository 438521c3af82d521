"""The record tables both SQL stores read and write the same way (sessions, template
versions, reviews, LLM calls, agent iterations, the schema version in ``meta``); a store supplies its placeholder ``_mark``, the
column that orders versions written in the same instant, ``_location`` for messages, and
its ``_read``/``_write`` transactions. Trials and claims stay in each store: their upserts
and locking differ by dialect."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, TypeVar

from workbench.core.errors import StoreError
from workbench.core.picks import ConfirmationMeasurement, PickRecord
from workbench.store.base import (
    AgentIteration,
    LLMCall,
    ProblemTally,
    Provenance,
    Review,
    Session,
    StoredRemeasurement,
    TemplateVersion,
)
from workbench.store.rows import (
    ITERATION_COLUMNS,
    PICK_COLUMNS,
    PROVENANCE_COLUMNS,
    REMEASUREMENT_COLUMNS,
    REVIEW_COLUMNS,
    VERSION_COLUMNS,
    insert_sql,
    iteration_from_row,
    iteration_values,
    llm_call_from_row,
    now,
    parse_schema_version,
    pick_from_row,
    pick_values,
    provenance_values,
    remeasurement_from_row,
    remeasurement_values,
    review_values,
    tally_from_row,
    version_from_row,
    version_values,
)

T = TypeVar("T")


class RecordTables:
    """Template versions, reviews, LLM calls and agent iterations over a SQL store."""

    _mark: str  # the driver's placeholder: "?" (sqlite3) or "%s" (psycopg)
    _version_order: str  # tie-break for versions created in the same instant

    @property
    def _location(self) -> str:
        raise NotImplementedError

    def _read(self, action: str, fn: Callable[[Any], T]) -> T:
        raise NotImplementedError

    def _write(self, action: str) -> AbstractContextManager[Any]:
        raise NotImplementedError

    _newest_schema: int  # the schema version this code writes

    def schema_version(self) -> int:
        """The schema version recorded in the ``meta`` table."""
        row = self._read("read meta", lambda c: c.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone())
        return parse_schema_version(None if row is None else row["value"], self._location,
                                    self._newest_schema)

    def problem_tallies(self, session_ids: Sequence[str]) -> list[ProblemTally]:
        """The per-problem tallies of these sessions (one row per session, shape and dtype
        measured), oldest problem first: a read of O(sessions), never of every trial."""
        ids = list(dict.fromkeys(session_ids))
        out: list[ProblemTally] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            sql = ("SELECT * FROM session_tallies WHERE session_id IN "
                   f"({', '.join([self._mark] * len(chunk))}) "
                   "ORDER BY first_created, shape, dtype")

            def read(c: Any, sql: str = sql, chunk: list[str] = chunk) -> list[Any]:
                return list(c.execute(sql, chunk).fetchall())

            out += [tally_from_row(r) for r in self._read("read session tallies", read)]
        return out

    def create_session(self, kernel: str, notes: str = "") -> Session:
        """Start a new session for ``kernel``."""
        session = Session(id=uuid.uuid4().hex, created=now(), kernel=kernel, notes=notes)
        with self._write("create session") as c:
            c.execute(insert_sql("sessions", ("id", "created", "kernel", "notes"), self._mark),
                      (session.id, session.created, session.kernel, session.notes))
        return session

    def sessions(self, kernel: str | None = None) -> list[Session]:
        """Sessions, oldest first, optionally only those of ``kernel``."""
        sql = "SELECT id, created, kernel, notes FROM sessions"
        rows = self._read("read sessions", lambda c: (
            c.execute(f"{sql} WHERE kernel = {self._mark} ORDER BY created", (kernel,))
            if kernel is not None else c.execute(sql + " ORDER BY created")).fetchall())
        return [Session(**dict(r)) for r in rows]

    def add_template_version(self, version: TemplateVersion) -> None:
        """Store a template version (its id must be new)."""
        values = version_values(version, now())
        with self._write("add template version") as c:
            c.execute(insert_sql("template_versions", VERSION_COLUMNS, self._mark), values)

    def template_version(self, version_id: str) -> TemplateVersion:
        """One template version; StoreError naming the id when missing."""
        row = self._read("read template version", lambda c: c.execute(
            f"SELECT * FROM template_versions WHERE id = {self._mark}",
            (version_id,)).fetchone())
        if row is None:
            raise StoreError(f"no template version {version_id!r} in {self._location}",
                             key="template_version_id", value=version_id)
        return version_from_row(row)

    def template_versions(self, kernel: str) -> list[TemplateVersion]:
        """Every version of ``kernel``'s template, oldest first."""
        rows = self._read("read template versions", lambda c: c.execute(
            f"SELECT * FROM template_versions WHERE kernel = {self._mark} "
            f"ORDER BY created, {self._version_order}",
            (kernel,)).fetchall())
        return [version_from_row(r) for r in rows]

    def add_review(self, review: Review) -> None:
        """Record a review decision on a stored template version."""
        values = review_values(review)
        self.template_version(review.template_version_id)  # must exist
        with self._write("add review") as c:
            c.execute(insert_sql("reviews", REVIEW_COLUMNS, self._mark), values)

    def reviews(self, template_version_id: str) -> list[Review]:
        """Reviews of one template version, in the order they were made."""
        rows = self._read("read reviews", lambda c: c.execute(
            f"SELECT {', '.join(REVIEW_COLUMNS)} FROM reviews "
            f"WHERE template_version_id = {self._mark} ORDER BY id",
            (template_version_id,)).fetchall())
        return [Review(**dict(r)) for r in rows]

    def llm_calls(self, session_id: str) -> list[LLMCall]:
        """LLM calls of a session, oldest first."""
        rows = self._read("read llm calls", lambda c: c.execute(
            f"SELECT * FROM llm_calls WHERE session_id = {self._mark} ORDER BY id",
            (session_id,)).fetchall())
        return [llm_call_from_row(r) for r in rows]

    def record_iteration(self, iteration: AgentIteration) -> None:
        """Store one agent iteration."""
        values = iteration_values(iteration, now())
        with self._write("record agent iteration") as c:
            c.execute(insert_sql("agent_iterations", ITERATION_COLUMNS, self._mark), values)

    def iterations(self, session_id: str) -> list[AgentIteration]:
        """Agent iterations of a session, in order."""
        rows = self._read("read agent iterations", lambda c: c.execute(
            f"SELECT * FROM agent_iterations WHERE session_id = {self._mark} ORDER BY id",
            (session_id,)).fetchall())
        return [iteration_from_row(r) for r in rows]

    # -- picks (schema 3): the decision of a tune, with the measurements that decided it --

    def record_pick(self, pick: PickRecord, provenance: Provenance,
                    measurements: Sequence[ConfirmationMeasurement] = ()) -> PickRecord:
        """Store ``pick`` (of ``provenance``'s template at its shape and dtype) and the
        confirmation measurements that decided it, in one transaction; returns the pick as
        stored (its ``created`` stamped)."""
        stamp = now()
        stored = replace(pick, created=pick.created or stamp)
        values = pick_values(stored, provenance, stamp)
        rows = [remeasurement_values(m, provenance, pick.session_id, pick.id, stamp)
                for m in measurements]
        with self._write("record pick") as c:
            c.execute(insert_sql("picks", PICK_COLUMNS, self._mark), values)
            for row in rows:
                c.execute(insert_sql("remeasurements", REMEASUREMENT_COLUMNS, self._mark), row)
        return stored

    def picks(self, *, provenance: Provenance | None = None, shape: str | None = None,
              dtype: str | None = None, kernel: str | None = None,
              session_ids: Sequence[str] | None = None,
              template_sha256: str | None = None) -> list[PickRecord]:
        """Stored picks in write order (the newest last), filtered by what is given. With
        ``session_ids`` one indexed read per 500 sessions (the sidebar's)."""
        where: list[str] = []
        values: list[Any] = []
        if provenance is not None:
            where += [f"{k} = {self._mark}" for k in PROVENANCE_COLUMNS]
            values += provenance_values(provenance)
        for column, value in (("shape", shape), ("dtype", dtype), ("kernel", kernel),
                              ("template_sha256", template_sha256)):
            if value is not None:
                where.append(f"{column} = {self._mark}")
                values.append(value)
        chunks: list[list[str] | None] = [None]
        if session_ids is not None:
            ids = list(dict.fromkeys(session_ids))
            chunks = [ids[i:i + 500] for i in range(0, len(ids), 500)]
        out: list[tuple[Any, PickRecord]] = []
        for chunk in chunks:
            clause = list(where)
            args = list(values)
            if chunk is not None:
                clause.append(f"session_id IN ({', '.join([self._mark] * len(chunk))})")
                args += chunk
            sql = (f"SELECT *, {self._version_order} AS wb_order FROM picks"
                   + (" WHERE " + " AND ".join(clause) if clause else ""))

            def read(c: Any, sql: str = sql, args: list[Any] = args) -> list[Any]:
                return list(c.execute(sql, args).fetchall())

            out += [(r["wb_order"], pick_from_row(r, self._location))
                    for r in self._read("read picks", read)]
        return [p for _, p in sorted(out, key=lambda t: t[0])]

    def pick(self, provenance: Provenance, shape: str, dtype: str) -> PickRecord | None:
        """The newest stored pick of ``provenance``'s template at (shape, dtype), or None."""
        found = self.picks(provenance=provenance, shape=shape, dtype=dtype)
        return found[-1] if found else None

    def confirmations(self, pick_id: str) -> list[StoredRemeasurement]:
        """The confirmation measurements stored with pick ``pick_id``, in write order."""
        rows = self._read("read confirmations", lambda c: c.execute(
            f"SELECT * FROM remeasurements WHERE pick_id = {self._mark} ORDER BY id",
            (pick_id,)).fetchall())
        return [remeasurement_from_row(r, self._location) for r in rows]
