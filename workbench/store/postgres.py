"""PostgreSQL store: one database shared by several drivers or hosts (psycopg 3).

The same records and guarantees as :class:`~workbench.store.sqlite.SQLiteStore`: every
write commits at once (a driver killed mid-search loses at most the trial in flight), a
trial's key is unique across every writer (``ON CONFLICT DO NOTHING``), and each thread gets
its own connection. ``schema`` keeps one project's tables apart from another's in the same
database. The connection string may carry a password; it never appears in an error message
or a log (only host, port, database and user do).

    store = PostgresStore("postgresql://tuner@db-host:5432/kernels", schema="team_a")
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from workbench.core.errors import StoreError, StoreLockedError
from workbench.core.picks import ConfirmationMeasurement
from workbench.core.records import TrialResult
from workbench.store.base import (
    Provenance,
    StoredRemeasurement,
    StoredTrial,
    TokenUsage,
    owner_is_dead,
)
from workbench.store.record_tables import RecordTables
from workbench.store.rows import (
    BACKFILL_SELECT,
    LLM_CALL_COLUMNS,
    PICK_COLUMNS,
    REMEASUREMENT_COLUMNS,
    TALLY_COLUMNS,
    backfill_picks,
    backfill_tallies,
    confirmation_tags,
    insert_sql,
    keyed_select,
    llm_call_values,
    parse_schema_version,
    provenance_values,
    remeasurement_from_row,
    remeasurement_values,
    tally_upsert_sql,
    tally_values,
)
from workbench.store.sqlite import (
    _PROVENANCE_COLUMNS,
    _RESULT_COLUMNS,
    SCHEMA_VERSION,
    _now,
    _result_values,
)

T = TypeVar("T")
INSTALL_HINT = 'install the PostgreSQL driver: `pip install -e ".[postgres]"` (psycopg 3)'
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: One advisory-lock id for schema creation (several drivers may open a new store at once).
_SCHEMA_LOCK = 0x776F726B62656E63  # "workbenc"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, created TEXT NOT NULL, kernel TEXT NOT NULL, notes TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS template_versions (
    id TEXT PRIMARY KEY, kernel TEXT NOT NULL, parent_id TEXT REFERENCES template_versions(id),
    session_id TEXT, source_sha256 TEXT NOT NULL, source_text TEXT NOT NULL,
    params_json TEXT NOT NULL, constraints_json TEXT NOT NULL, launch_json TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('curated', 'llm', 'offline')),
    diff_vs_parent TEXT NOT NULL, created TEXT NOT NULL,
    seq BIGINT GENERATED ALWAYS AS IDENTITY);
CREATE TABLE IF NOT EXISTS reviews (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    template_version_id TEXT NOT NULL REFERENCES template_versions(id),
    decision TEXT NOT NULL CHECK (decision IN ('proposed', 'approved', 'rejected')),
    reviewer TEXT NOT NULL, time TEXT NOT NULL, note TEXT NOT NULL,
    approved_text_sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, session_id TEXT,
    template_sha256 TEXT NOT NULL, config_key TEXT NOT NULL, shape TEXT NOT NULL,
    dtype TEXT NOT NULL, compiler TEXT NOT NULL, flags TEXT NOT NULL, arch TEXT NOT NULL,
    device TEXT NOT NULL, driver TEXT NOT NULL, status TEXT NOT NULL,
    median_us DOUBLE PRECISION, result_json TEXT NOT NULL, created TEXT NOT NULL,
    UNIQUE (template_sha256, config_key, shape, dtype, compiler, flags, arch, device, driver));
CREATE INDEX IF NOT EXISTS trials_by_shape ON trials (template_sha256, shape, dtype);
CREATE TABLE IF NOT EXISTS remeasurements (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, session_id TEXT,
    round_index INTEGER NOT NULL, template_sha256 TEXT NOT NULL, config_key TEXT NOT NULL,
    shape TEXT NOT NULL, dtype TEXT NOT NULL, compiler TEXT NOT NULL, flags TEXT NOT NULL,
    arch TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL, status TEXT NOT NULL,
    median_us DOUBLE PRECISION, result_json TEXT NOT NULL, created TEXT NOT NULL,
    pick_id TEXT NOT NULL DEFAULT '', cache_condition TEXT NOT NULL DEFAULT '',
    is_baseline INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS picks (
    id TEXT PRIMARY KEY, session_id TEXT, kernel TEXT NOT NULL,
    template_version TEXT NOT NULL, template_sha256 TEXT NOT NULL, compiler TEXT NOT NULL,
    flags TEXT NOT NULL, arch TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL,
    shape TEXT NOT NULL, dtype TEXT NOT NULL, config_key TEXT NOT NULL,
    decided TEXT NOT NULL CHECK (decided IN ('confirmed', 'search-best')),
    rule TEXT NOT NULL, cache_condition TEXT NOT NULL, fallback_reason TEXT NOT NULL,
    median_us DOUBLE PRECISION NOT NULL, search_median_us DOUBLE PRECISION,
    baseline_us DOUBLE PRECISION, speedup DOUBLE PRECISION, speedup_low DOUBLE PRECISION,
    speedup_high DOUBLE PRECISION, holds INTEGER, measured_on TEXT NOT NULL,
    created TEXT NOT NULL, seq BIGINT GENERATED ALWAYS AS IDENTITY);
CREATE INDEX IF NOT EXISTS picks_by_problem ON picks (template_sha256, shape, dtype);
CREATE INDEX IF NOT EXISTS picks_by_session ON picks (session_id);
CREATE TABLE IF NOT EXISTS llm_calls (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, session_id TEXT NOT NULL,
    created TEXT NOT NULL, request_json TEXT NOT NULL, reply_text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    total_tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agent_iterations (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, session_id TEXT NOT NULL,
    iteration INTEGER NOT NULL, state TEXT NOT NULL, best_us DOUBLE PRECISION,
    speedup DOUBLE PRECISION, detail_json TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (
    template_sha256 TEXT NOT NULL, config_key TEXT NOT NULL, shape TEXT NOT NULL,
    dtype TEXT NOT NULL, compiler TEXT NOT NULL, flags TEXT NOT NULL, arch TEXT NOT NULL,
    device TEXT NOT NULL, driver TEXT NOT NULL, owner TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (template_sha256, config_key, shape, dtype, compiler, flags, arch, device,
                 driver));
CREATE TABLE IF NOT EXISTS session_tallies (
    session_id TEXT NOT NULL, shape TEXT NOT NULL, dtype TEXT NOT NULL,
    trials INTEGER NOT NULL, ok INTEGER NOT NULL, best_us DOUBLE PRECISION,
    best_device TEXT NOT NULL, first_created TEXT NOT NULL,
    PRIMARY KEY (session_id, shape, dtype));
CREATE INDEX IF NOT EXISTS iterations_by_session ON agent_iterations (session_id);
CREATE INDEX IF NOT EXISTS sessions_by_kernel ON sessions (kernel, created);
"""
#: The re-measurement columns schema 3 added (a version-2 table gets them on open).
_CONFIRMATION_DDL = ("pick_id TEXT NOT NULL DEFAULT ''",
                     "cache_condition TEXT NOT NULL DEFAULT ''",
                     "is_baseline INTEGER NOT NULL DEFAULT 0")
#: A claims or trials row of one key: the provenance, then config_key, shape, dtype.
_CLAIM_KEY = " AND ".join(f"{k} = %s" for k in (*_PROVENANCE_COLUMNS, "config_key", "shape",
                                                 "dtype"))


def describe_dsn(dsn: str) -> str:
    """``user@host:port/dbname`` of a connection string, without its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:
        return "a PostgreSQL server (unparsable connection string)"
    return (f"{parts.get('user') or ''}@{parts.get('host') or 'localhost'}:"
            f"{parts.get('port') or 5432}/{parts.get('dbname') or ''}")


class PostgresStore(RecordTables):
    """A :class:`~workbench.store.base.Store` in a PostgreSQL database (tables created if
    missing, in ``schema``). ``timeout_s`` bounds connecting and waiting for a lock."""

    _mark = "%s"
    _version_order = "seq"
    _newest_schema = SCHEMA_VERSION

    def __init__(self, dsn: str, *, schema: str = "public", timeout_s: float = 10.0) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(f"a postgresql:// store needs psycopg ({exc}); {INSTALL_HINT}",
                             hint=INSTALL_HINT) from exc
        if not _IDENTIFIER.fullmatch(schema):
            raise StoreError(f"schema name {schema!r} is not a plain lower-case identifier",
                             key="schema", value=schema, expected="[a-z_][a-z0-9_]*")
        self._psycopg = psycopg
        self._dsn = dsn
        self.where = describe_dsn(dsn)
        self.schema = schema
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._all: list[Any] = []
        self._all_lock = threading.Lock()
        self._closed = False
        self._initialise()

    # -- connections and errors ---------------------------------------------------------

    @property
    def _location(self) -> str:
        return self.where

    def _connection(self) -> Any:
        if self._closed:
            raise StoreError(f"store {self.where} is closed", store=self.where)
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            from psycopg.rows import dict_row

            with self._errors("connect"):
                conn = self._psycopg.connect(
                    self._dsn, autocommit=True, row_factory=dict_row,
                    connect_timeout=max(1, int(self.timeout_s)),
                    options=f"-c search_path={self.schema} "
                            f"-c lock_timeout={int(self.timeout_s * 1000)}")
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        errors = self._psycopg.errors
        try:
            yield
        except errors.LockNotAvailable as exc:
            raise StoreLockedError(
                f"store {self.where} stayed locked by another writer for more than "
                f"{self.timeout_s} s during {action}", store=self.where,
                timeout_s=self.timeout_s, action=action) from exc
        except self._psycopg.OperationalError as exc:
            raise StoreError(f"store {self.where}: {action} failed: {_first_line(exc)}",
                             store=self.where, action=action) from exc

    @contextmanager
    def _write(self, action: str) -> Iterator[Any]:
        conn = self._connection()
        with self._errors(action), conn.transaction():
            yield conn

    def _read(self, action: str, fn: Callable[[Any], T]) -> T:
        conn = self._connection()
        with self._errors(action):
            return fn(conn)

    def _initialise(self) -> None:
        with self._errors("open"):
            admin = self._psycopg.connect(self._dsn, autocommit=True,
                                          connect_timeout=max(1, int(self.timeout_s)))
        try:
            with self._errors("create schema"), admin.transaction():
                admin.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                admin.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
                admin.execute(f"SET LOCAL search_path = {self.schema}")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        admin.execute(statement)
                row = admin.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                    ).fetchone()
                if row is None:
                    admin.execute("INSERT INTO meta (key, value) VALUES ('schema_version', %s),"
                                  " ('created', %s)", (str(SCHEMA_VERSION), _now()))
                elif (version := parse_schema_version(
                        row[0], f"{self.where} (schema {self.schema})",
                        SCHEMA_VERSION)) < SCHEMA_VERSION:
                    # Every step under the schema lock, in this one transaction.
                    if version < 2:  # version 1 had no tallies: count them once
                        from psycopg.rows import dict_row

                        admin.execute("DELETE FROM session_tallies")
                        with admin.cursor(row_factory=dict_row) as cur:
                            rows = cur.execute(BACKFILL_SELECT).fetchall()
                        with admin.cursor() as cur:
                            cur.executemany(insert_sql("session_tallies", TALLY_COLUMNS, "%s"),
                                            backfill_tallies(rows))
                    if version < 3:  # picks and typed confirmations from re-measurements
                        for column in _CONFIRMATION_DDL:
                            admin.execute("ALTER TABLE remeasurements ADD COLUMN IF NOT EXISTS "
                                          + column)
                        _backfill_picks(admin)
                    admin.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'",
                                  (str(SCHEMA_VERSION),))
                admin.execute("CREATE INDEX IF NOT EXISTS remeasurements_by_pick "
                              "ON remeasurements (pick_id)")
        finally:
            admin.close()

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
        self._closed = True

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- trials and re-measurements -----------------------------------------------------

    def record_trial(self, result: TrialResult, provenance: Provenance,
                     session_id: str | None = None) -> bool:
        """Write and commit one trial now. False when that key was already stored (by any
        writer)."""
        values = (session_id, *_result_values(result, provenance))
        with self._write("record trial") as c:
            cursor = c.execute(
                f"INSERT INTO trials (session_id, {', '.join(_RESULT_COLUMNS)}) VALUES "
                f"({', '.join(['%s'] * len(values))}) ON CONFLICT DO NOTHING", values)
            stored = bool(cursor.rowcount == 1)
            if stored and session_id is not None:
                c.execute(tally_upsert_sql("%s"),
                          tally_values(session_id, result, provenance, values[-1]))
            c.execute(f"DELETE FROM claims WHERE {_CLAIM_KEY}",
                      (*provenance_values(provenance), result.config.key(), result.shape,
                       result.dtype))
            return stored

    # -- claims (see workbench.store.base) ----------------------------------------------

    def claim_trials(self, provenance: Provenance, shape: str, dtype: str,
                     config_keys: Sequence[str], owner: str, lease_s: float,
                     now: float | None = None) -> list[str]:
        """Grant ``owner`` every key neither stored nor held by a live claim of another
        (claims of one template, shape and dtype are granted one transaction at a time)."""
        at = time.time() if now is None else now
        prov = provenance_values(provenance)
        granted: list[str] = []
        with self._write("claim trials") as c:
            c.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                      ("|".join((*prov, shape, dtype)),))
            for key in dict.fromkeys(config_keys):
                values = (*prov, key, shape, dtype)
                if c.execute(f"SELECT 1 FROM trials WHERE {_CLAIM_KEY}", values).fetchone():
                    continue
                held = c.execute(f"SELECT owner, expires FROM claims WHERE {_CLAIM_KEY}",
                                 values).fetchone()
                if (held is not None and held["owner"] != owner and held["expires"] > at
                        and not owner_is_dead(held["owner"])):
                    continue
                c.execute(f"DELETE FROM claims WHERE {_CLAIM_KEY}", values)
                c.execute(f"INSERT INTO claims ({', '.join(_PROVENANCE_COLUMNS)}, config_key, "
                          f"shape, dtype, owner, expires) VALUES "
                          f"({', '.join(['%s'] * (len(values) + 2))})",
                          (*values, owner, at + lease_s))
                granted.append(key)
        return granted

    def release_claims(self, provenance: Provenance, shape: str, dtype: str,
                       config_keys: Sequence[str], owner: str) -> None:
        """Drop ``owner``'s claims on these keys (others' claims are left alone)."""
        prov = provenance_values(provenance)
        with self._write("release claims") as c:
            for key in config_keys:
                c.execute(f"DELETE FROM claims WHERE {_CLAIM_KEY} AND owner = %s",
                          (*prov, key, shape, dtype, owner))

    def record_remeasurement(self, result: TrialResult, provenance: Provenance,
                             round_index: int, session_id: str | None = None) -> None:
        """Write and commit one re-measurement now (every one is kept)."""
        condition, is_baseline = confirmation_tags(result)
        values = remeasurement_values(
            ConfirmationMeasurement(round_index, condition, is_baseline, result), provenance,
            session_id, "")
        with self._write("record remeasurement") as c:
            c.execute(insert_sql("remeasurements", REMEASUREMENT_COLUMNS, "%s"), values)


    @staticmethod
    def _stored(row: Mapping[str, Any]) -> tuple[TrialResult, Provenance]:
        return (TrialResult.from_dict(json.loads(row["result_json"])),
                Provenance(**{k: row[k] for k in _PROVENANCE_COLUMNS}))

    def has_trial(self, provenance: Provenance, config_key: str, shape: str,
                  dtype: str) -> bool:
        """Whether this exact key is stored."""
        sql, values = keyed_select("trials", provenance, shape, dtype, "%s")
        sql = sql.replace("SELECT *", "SELECT 1", 1).replace(" WHERE ",
                                                              " WHERE config_key = %s AND ", 1)
        row = self._read("read trial", lambda c: c.execute(
            sql, [config_key, *values]).fetchone())
        return row is not None

    def trials(self, provenance: Provenance | None = None, shape: str | None = None,
               dtype: str | None = None) -> list[StoredTrial]:
        """Stored trials in write order, filtered by any of provenance/shape/dtype."""
        sql, values = keyed_select("trials", provenance, shape, dtype, "%s")
        rows = self._read("read trials", lambda c: c.execute(sql, values).fetchall())
        return [StoredTrial(*self._stored(r), session_id=r["session_id"],
                            created=r["created"]) for r in rows]

    def count_trials(self, provenance: Provenance | None = None) -> int:
        """Number of stored trials (of one provenance when given)."""
        sql, values = keyed_select("trials", provenance, None, None, "%s")
        sql = sql.replace("SELECT *", "SELECT COUNT(*) AS n", 1).replace(" ORDER BY id", "")
        return int(self._read("count trials", lambda c: c.execute(sql, values).fetchone())["n"])

    def remeasurements(self, provenance: Provenance | None = None,
                       shape: str | None = None) -> list[StoredRemeasurement]:
        """Stored re-measurements in write order, filtered by provenance and/or shape."""
        sql, values = keyed_select("remeasurements", provenance, shape, None, "%s")
        rows = self._read("read remeasurements", lambda c: c.execute(sql, values).fetchall())
        return [remeasurement_from_row(r, self.where) for r in rows]

    # -- LLM calls and agent iterations ---------------------------------------------------

    def record_llm_call(self, session_id: str, request: Mapping[str, Any], reply_text: str,
                        usage: TokenUsage) -> int:
        """Store one LLM call; credentials in ``request`` are scrubbed first. Returns its id."""
        values = llm_call_values(session_id, request, reply_text, usage, _now())
        with self._write("record llm call") as c:
            row = c.execute(insert_sql("llm_calls", LLM_CALL_COLUMNS, "%s") + " RETURNING id",
                            values).fetchone()
            return int(row["id"])




def _backfill_picks(admin: Any) -> None:
    """Schema 2 -> 3 (inside the caller's transaction): tag each re-measurement with its
    condition and baseline flag and recover a confirmed pick from each confirmation that
    reached round 2 (:func:`~workbench.store.rows.backfill_picks`)."""
    from psycopg.rows import dict_row

    with admin.cursor(row_factory=dict_row) as cur:
        rows = cur.execute("SELECT * FROM remeasurements ORDER BY id").fetchall()
        kernels = {r["id"]: r["kernel"]
                   for r in cur.execute("SELECT id, kernel FROM sessions").fetchall()}
    tags = [(*confirmation_tags(TrialResult.from_dict(json.loads(r["result_json"]))), r["id"])
            for r in rows]
    picks, links = backfill_picks(rows, kernels)
    with admin.cursor() as cur:
        cur.executemany("UPDATE remeasurements SET cache_condition = %s, is_baseline = %s "
                        "WHERE id = %s", [(cond, int(base), i) for cond, base, i in tags])
        cur.execute("DELETE FROM picks")
        cur.executemany(insert_sql("picks", PICK_COLUMNS, "%s"), picks)
        cur.executemany("UPDATE remeasurements SET pick_id = %s WHERE id = %s", links)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def open_store(location: str) -> Any:
    """A store from ``--store``: ``postgresql://...`` (``?schema=`` optional, defaults to
    public) or a SQLite file path."""
    if location.startswith(("postgresql://", "postgres://")):
        base, _, query = location.partition("?")
        options = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
        schema = options.pop("schema", "public")
        rest = "&".join(f"{k}={v}" for k, v in options.items())
        return PostgresStore(base + (f"?{rest}" if rest else ""), schema=schema)
    from workbench.store.sqlite import SQLiteStore

    return SQLiteStore(location)
