"""SQLite store: one file, WAL mode, safe for several threads and several processes.

Every trial is committed the moment it is recorded, so a search killed with SIGKILL loses
at most the trial that was in flight. Each thread gets its own connection; writes take
``BEGIN IMMEDIATE`` so concurrent writers queue on SQLite's lock (up to ``timeout_s``)
instead of failing half-way.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from workbench.core.errors import StoreCorruptError, StoreError, StoreLockedError
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
    PROVENANCE_COLUMNS,
    REMEASUREMENT_COLUMNS,
    REMEASUREMENT_V2_COLUMNS,
    RESULT_COLUMNS,
    TALLY_COLUMNS,
    backfill_picks,
    backfill_tallies,
    confirmation_tags,
    insert_sql,
    keyed_select,
    llm_call_values,
    now,
    parse_schema_version,
    provenance_values,
    remeasurement_from_row,
    remeasurement_values,
    result_values,
    tally_upsert_sql,
    tally_values,
)

#: 2: session_tallies (the sidebar's per-session summary), backfilled from version 1.
#: 3: picks (the decision of each tune) and the typed confirmation columns of
#: remeasurements (pick_id, cache_condition, is_baseline), backfilled from version 2.
SCHEMA_VERSION = 3
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, created TEXT NOT NULL, kernel TEXT NOT NULL, notes TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS template_versions (
    id TEXT PRIMARY KEY, kernel TEXT NOT NULL, parent_id TEXT REFERENCES template_versions(id),
    session_id TEXT, source_sha256 TEXT NOT NULL, source_text TEXT NOT NULL,
    params_json TEXT NOT NULL, constraints_json TEXT NOT NULL, launch_json TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('curated', 'llm', 'offline')),
    diff_vs_parent TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    template_version_id TEXT NOT NULL REFERENCES template_versions(id),
    decision TEXT NOT NULL CHECK (decision IN ('proposed', 'approved', 'rejected')),
    reviewer TEXT NOT NULL, time TEXT NOT NULL, note TEXT NOT NULL,
    approved_text_sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT,
    template_sha256 TEXT NOT NULL, config_key TEXT NOT NULL, shape TEXT NOT NULL,
    dtype TEXT NOT NULL, compiler TEXT NOT NULL, flags TEXT NOT NULL, arch TEXT NOT NULL,
    device TEXT NOT NULL, driver TEXT NOT NULL, status TEXT NOT NULL, median_us REAL,
    result_json TEXT NOT NULL, created TEXT NOT NULL,
    UNIQUE (template_sha256, config_key, shape, dtype, compiler, flags, arch, device, driver));
CREATE INDEX IF NOT EXISTS trials_by_shape ON trials (template_sha256, shape, dtype);
CREATE TABLE IF NOT EXISTS remeasurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, round_index INTEGER NOT NULL,
    template_sha256 TEXT NOT NULL, config_key TEXT NOT NULL, shape TEXT NOT NULL,
    dtype TEXT NOT NULL, compiler TEXT NOT NULL, flags TEXT NOT NULL, arch TEXT NOT NULL,
    device TEXT NOT NULL, driver TEXT NOT NULL, status TEXT NOT NULL, median_us REAL,
    result_json TEXT NOT NULL, created TEXT NOT NULL, pick_id TEXT NOT NULL DEFAULT '',
    cache_condition TEXT NOT NULL DEFAULT '', is_baseline INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS picks (
    id TEXT PRIMARY KEY, session_id TEXT, kernel TEXT NOT NULL,
    template_version TEXT NOT NULL, template_sha256 TEXT NOT NULL, compiler TEXT NOT NULL,
    flags TEXT NOT NULL, arch TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL,
    shape TEXT NOT NULL, dtype TEXT NOT NULL, config_key TEXT NOT NULL,
    decided TEXT NOT NULL CHECK (decided IN ('confirmed', 'search-best')),
    rule TEXT NOT NULL, cache_condition TEXT NOT NULL, fallback_reason TEXT NOT NULL,
    median_us REAL NOT NULL, search_median_us REAL, baseline_us REAL, speedup REAL,
    speedup_low REAL, speedup_high REAL, holds INTEGER, measured_on TEXT NOT NULL,
    created TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS picks_by_problem ON picks (template_sha256, shape, dtype);
CREATE INDEX IF NOT EXISTS picks_by_session ON picks (session_id);
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, created TEXT NOT NULL,
    request_json TEXT NOT NULL, reply_text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, total_tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agent_iterations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, iteration INTEGER NOT NULL,
    state TEXT NOT NULL, best_us REAL, speedup REAL, detail_json TEXT NOT NULL,
    created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (
    template_sha256 TEXT NOT NULL, config_key TEXT NOT NULL, shape TEXT NOT NULL,
    dtype TEXT NOT NULL, compiler TEXT NOT NULL, flags TEXT NOT NULL, arch TEXT NOT NULL,
    device TEXT NOT NULL, driver TEXT NOT NULL, owner TEXT NOT NULL, expires REAL NOT NULL,
    PRIMARY KEY (template_sha256, config_key, shape, dtype, compiler, flags, arch, device,
                 driver));
CREATE TABLE IF NOT EXISTS session_tallies (
    session_id TEXT NOT NULL, shape TEXT NOT NULL, dtype TEXT NOT NULL,
    trials INTEGER NOT NULL, ok INTEGER NOT NULL, best_us REAL, best_device TEXT NOT NULL,
    first_created TEXT NOT NULL, PRIMARY KEY (session_id, shape, dtype));
CREATE INDEX IF NOT EXISTS iterations_by_session ON agent_iterations (session_id);
CREATE INDEX IF NOT EXISTS sessions_by_kernel ON sessions (kernel, created);
"""
#: Columns of every table, as created: a file whose tables differ is a foreign schema.
_TABLE_COLUMNS = {
    name: tuple(re.findall(r"(?:^|,)\s*([a-z_0-9]+) (?:TEXT|INTEGER|REAL)", body))
    for name, body in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\);", _SCHEMA, re.S)}

_PROVENANCE_COLUMNS = PROVENANCE_COLUMNS
#: The columns trials and re-measurements share, in the order of :func:`_result_values`.
_RESULT_COLUMNS = RESULT_COLUMNS


def _result_values(result: TrialResult, provenance: Provenance) -> tuple[Any, ...]:
    """One result's values for :data:`_RESULT_COLUMNS`, stamped now."""
    return result_values(result, provenance)


def _stored_result(row: sqlite3.Row, table: str, path: Path) -> tuple[TrialResult, Provenance]:
    """The result and provenance of a trials or re-measurements row; a row that does not
    read back (edited by hand, written by something else) is a StoreCorruptError naming it."""
    try:
        return (TrialResult.from_dict(json.loads(row["result_json"])),
                Provenance(**{k: row[k] for k in _PROVENANCE_COLUMNS}))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise StoreCorruptError(
            f"store {path}: row {row['id']} of {table} does not read back as a trial "
            f"({type(exc).__name__}: {str(exc)[:200]}); delete that row or move the file "
            "aside and open a new store", file=str(path), table=table, row=row["id"],
            cause=str(exc)) from None


_CLAIM_KEY = " AND ".join(f"{k} = ?" for k in (*_PROVENANCE_COLUMNS, "config_key", "shape",
                                                "dtype"))


_now = now


class SQLiteStore(RecordTables):
    """A :class:`~workbench.store.base.Store` in one SQLite file (created if missing).

    ``timeout_s`` is how long a write waits for another writer's lock before raising
    :class:`StoreLockedError`.
    """

    _mark = "?"
    _version_order = "rowid"
    _newest_schema = SCHEMA_VERSION

    def __init__(self, path: str | Path, *, timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._all_connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        self._initialise()

    # -- connections and error mapping -------------------------------------------------

    @property
    def _location(self) -> str:
        return str(self.path)

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"store {self.path} is closed", file=str(self.path))
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            with self._errors("open"):
                conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None,
                                       check_same_thread=False)
            conn.row_factory = sqlite3.Row
            with self._errors("open"):
                conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
                conn.execute("PRAGMA foreign_keys = ON")
                conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
            with self._connections_lock:
                self._all_connections.append(conn)
        return conn

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "locked" in text or "busy" in text:
                raise StoreLockedError(
                    f"store {self.path} stayed locked by another writer for more than "
                    f"{self.timeout_s} s during {action}; close the other process or raise "
                    "timeout_s", file=str(self.path), timeout_s=self.timeout_s,
                    action=action) from exc
            if "malformed" in text or "not a database" in text:
                raise self._corrupt(exc) from exc
            raise self._unusable(exc, action) from exc
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from exc

    def _unusable(self, exc: BaseException, action: str) -> StoreError:
        """A StoreError saying why the file cannot be used and what to do."""
        text = str(exc).lower()
        if "readonly" in text or "read-only" in text:
            why = ("it cannot be written (a read-only file, directory or mount); choose a "
                   "writable --store path")
        elif "full" in text:
            why = "the disk (or the file-size limit) is full; free space or choose another path"
        elif "unable to open" in text or "cannot open" in text:
            why = ("it cannot be opened; check that its directory exists and is writable, and "
                   "that the path names a file")
        elif "disk i/o" in text:
            why = "the disk reported an I/O error (full, read-only, or not a regular file)"
        elif "no column" in text or "no such table" in text or "has no column" in text:
            why = "its tables are not the workbench's (a foreign schema); use another path"
        else:
            why = "SQLite refused it"
        return StoreError(f"store {self.path}: {action} failed: {why} (SQLite: {exc})",
                          file=str(self.path), action=action, cause=str(exc))

    def _corrupt(self, exc: BaseException) -> StoreCorruptError:
        return StoreCorruptError(
            f"store {self.path} is not a readable SQLite database ({exc}); move the file "
            "aside (keep it for inspection) and open a new store path; measurements that "
            "are also in recordings can be re-imported", file=str(self.path), cause=str(exc))

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        with self._errors(action):
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, action: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._connection()
        with self._errors(action):
            return fn(conn)

    def _check_path(self) -> None:
        """Refuse paths SQLite cannot keep a store in, before it tries."""
        def refuse(why: str, expected: str) -> StoreError:
            return StoreError(f"store {self.path}: {why}; expected {expected}",
                              file=str(self.path), expected=expected)

        if self.path.is_dir():
            raise refuse("is a directory", "the path of a SQLite file (e.g. workbench.sqlite)")
        if self.path.exists() and not self.path.is_file():
            raise refuse("is not a regular file (a device, pipe or socket)",
                         "the path of a SQLite file")
        parent = self.path.parent
        if not parent.is_dir():
            raise refuse(f"its directory {parent} does not exist",
                         "a file in an existing directory (create it first)")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise refuse(f"its directory {parent} is not writable (SQLite keeps its journal "
                         "beside the file)", "a writable directory")
        if self.path.exists() and not os.access(self.path, os.R_OK | os.W_OK):
            raise refuse("cannot be read and written by this user", "a writable file")

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        """Every workbench table must have exactly the workbench's columns."""
        for table, expected in _TABLE_COLUMNS.items():
            found = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))
            if table == "remeasurements" and found == REMEASUREMENT_V2_COLUMNS:
                continue  # a version-2 store: schema 3 adds the confirmation columns
            if found and found != expected:
                raise StoreError(
                    f"store {self.path} has a foreign schema: table {table} has columns "
                    f"{list(found)}; the workbench's has {list(expected)}. Use another "
                    "--store path (this file belongs to something else or to an "
                    "incompatible version)", file=str(self.path), key=table,
                    value=list(found), expected=list(expected))

    def _initialise(self) -> None:
        self._check_path()
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open("rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    raise self._corrupt(ValueError("missing the SQLite file header"))
        conn = self._connection()
        with self._errors("open"):
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"store {self.path} could not switch to WAL mode (got {mode})",
                                 file=str(self.path))
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise self._corrupt(ValueError(check))
        with self._write("create schema") as c:
            self._check_schema(c)
            found = tuple(r[1] for r in c.execute("PRAGMA table_info(remeasurements)"))
            if found == REMEASUREMENT_V2_COLUMNS:
                c.execute("ALTER TABLE remeasurements ADD COLUMN pick_id TEXT NOT NULL "
                          "DEFAULT ''")
                c.execute("ALTER TABLE remeasurements ADD COLUMN cache_condition TEXT NOT NULL "
                          "DEFAULT ''")
                c.execute("ALTER TABLE remeasurements ADD COLUMN is_baseline INTEGER NOT NULL "
                          "DEFAULT 0")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)
            # A real write at open: a store that cannot be written fails here, before any
            # GPU time is spent, not at the first measurement.
            c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_opened', ?)",
                      (_now(),))
            row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                c.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                          (str(SCHEMA_VERSION),))
                c.execute("INSERT INTO meta (key, value) VALUES ('created', ?)", (_now(),))
            elif (version := parse_schema_version(row[0], str(self.path),
                                                  SCHEMA_VERSION)) < SCHEMA_VERSION:
                # Each step in this transaction, so no writer ever sees a half-migrated store.
                if version < 2:  # version 1 had no tallies: count them once from the trials
                    c.execute("DELETE FROM session_tallies")
                    c.executemany(insert_sql("session_tallies", TALLY_COLUMNS, "?"),
                                  backfill_tallies(c.execute(BACKFILL_SELECT)))
                if version < 3:  # picks and typed confirmations from the re-measurements
                    self._backfill_picks(c)
                c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                          (str(SCHEMA_VERSION),))
            c.execute("CREATE INDEX IF NOT EXISTS remeasurements_by_pick "
                      "ON remeasurements (pick_id)")

    def _backfill_picks(self, c: sqlite3.Connection) -> None:
        """Schema 2 -> 3: tag each re-measurement with its condition and baseline flag (from
        its result's tags) and recover a confirmed pick from each confirmation that reached
        round 2 (:func:`~workbench.store.rows.backfill_picks`)."""
        rows = c.execute("SELECT * FROM remeasurements ORDER BY id").fetchall()
        tags = [(*confirmation_tags(_stored_result(r, "remeasurements", self.path)[0]),
                 r["id"]) for r in rows]
        c.executemany("UPDATE remeasurements SET cache_condition = ?, is_baseline = ? "
                      "WHERE id = ?", [(cond, int(base), i) for cond, base, i in tags])
        kernels = {r["id"]: r["kernel"] for r in c.execute("SELECT id, kernel FROM sessions")}
        picks, links = backfill_picks(rows, kernels)
        c.execute("DELETE FROM picks")
        c.executemany(insert_sql("picks", PICK_COLUMNS, "?"), picks)
        c.executemany("UPDATE remeasurements SET pick_id = ? WHERE id = ?", links)

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        with self._connections_lock:
            for conn in self._all_connections:
                conn.close()
            self._all_connections.clear()
        self._local = threading.local()
        self._closed = True

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- trials --------------------------------------------------------------------------

    def record_trial(self, result: TrialResult, provenance: Provenance,
                     session_id: str | None = None) -> bool:
        """Write and commit one trial now. False when that key was already stored."""
        values = (session_id, *_result_values(result, provenance))  # encoded outside the lock
        with self._write("record trial") as c:
            cursor = c.execute(
                f"INSERT OR IGNORE INTO trials (session_id, {', '.join(_RESULT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(values))})", values)
            stored = cursor.rowcount == 1
            if stored and session_id is not None:
                c.execute(tally_upsert_sql("?"),
                          tally_values(session_id, result, provenance, values[-1]))
            c.execute(f"DELETE FROM claims WHERE {_CLAIM_KEY}",
                      (*provenance_values(provenance), result.config.key(), result.shape,
                       result.dtype))
            return stored

    # -- claims (see workbench.store.base) -------------------------------------------------

    def claim_trials(self, provenance: Provenance, shape: str, dtype: str,
                     config_keys: Sequence[str], owner: str, lease_s: float,
                     now: float | None = None) -> list[str]:
        """Grant ``owner`` every key neither stored nor held by a live claim of another."""
        at = time.time() if now is None else now
        granted: list[str] = []
        prov = provenance_values(provenance)
        with self._write("claim trials") as c:
            for key in dict.fromkeys(config_keys):
                values = (*prov, key, shape, dtype)
                if c.execute(f"SELECT 1 FROM trials WHERE {_CLAIM_KEY}", values).fetchone():
                    continue
                held = c.execute(f"SELECT owner, expires FROM claims WHERE {_CLAIM_KEY}",
                                 values).fetchone()
                if (held is not None and held["owner"] != owner and held["expires"] > at
                        and not owner_is_dead(held["owner"])):
                    continue
                c.execute(f"INSERT OR REPLACE INTO claims ({', '.join(_PROVENANCE_COLUMNS)}, "
                          "config_key, shape, dtype, owner, expires) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (*values, owner, at + lease_s))
                granted.append(key)
        return granted

    def release_claims(self, provenance: Provenance, shape: str, dtype: str,
                       config_keys: Sequence[str], owner: str) -> None:
        """Drop ``owner``'s claims on these keys (others' claims are left alone)."""
        prov = provenance_values(provenance)
        with self._write("release claims") as c:
            for key in config_keys:
                c.execute(f"DELETE FROM claims WHERE {_CLAIM_KEY} AND owner = ?",
                          (*prov, key, shape, dtype, owner))

    def record_remeasurement(self, result: TrialResult, provenance: Provenance,
                             round_index: int, session_id: str | None = None) -> None:
        """Write and commit one re-measurement now (every one is kept)."""
        condition, is_baseline = confirmation_tags(result)
        values = remeasurement_values(
            ConfirmationMeasurement(round_index, condition, is_baseline, result), provenance,
            session_id, "")
        with self._write("record remeasurement") as c:
            c.execute(insert_sql("remeasurements", REMEASUREMENT_COLUMNS, "?"), values)

    def remeasurements(self, provenance: Provenance | None = None,
                       shape: str | None = None) -> list[StoredRemeasurement]:
        """Stored re-measurements in write order, filtered by provenance and/or shape."""
        sql, values = keyed_select("remeasurements", provenance, shape, None, "?")
        rows = self._read("read remeasurements", lambda c: c.execute(sql, values).fetchall())
        return [remeasurement_from_row(r, str(self.path)) for r in rows]

    def has_trial(self, provenance: Provenance, config_key: str, shape: str,
                  dtype: str) -> bool:
        """Whether this exact key is stored."""
        row = self._read("read trial", lambda c: c.execute(
            "SELECT 1 FROM trials WHERE config_key = ? AND shape = ? AND dtype = ? AND "
            + " AND ".join(f"{k} = ?" for k in _PROVENANCE_COLUMNS),
            (config_key, shape, dtype, *provenance_values(provenance))).fetchone())
        return row is not None



    def trials(self, provenance: Provenance | None = None, shape: str | None = None,
               dtype: str | None = None) -> list[StoredTrial]:
        """Stored trials in write order, filtered by any of provenance/shape/dtype."""
        sql, values = keyed_select("trials", provenance, shape, dtype, "?")
        rows = self._read("read trials", lambda c: c.execute(sql, values).fetchall())
        return [StoredTrial(*_stored_result(r, "trials", self.path), session_id=r["session_id"],
                            created=r["created"]) for r in rows]

    def count_trials(self, provenance: Provenance | None = None) -> int:
        """Number of stored trials (of one provenance when given)."""
        if provenance is None:
            return int(self._read("count trials", lambda c: c.execute(
                "SELECT COUNT(*) FROM trials").fetchone()[0]))
        return int(self._read("count trials", lambda c: c.execute(
            "SELECT COUNT(*) FROM trials WHERE "
            + " AND ".join(f"{k} = ?" for k in _PROVENANCE_COLUMNS),
            provenance_values(provenance)).fetchone()[0]))

    # -- LLM calls and agent iterations --------------------------------------------------

    def record_llm_call(self, session_id: str, request: Mapping[str, Any], reply_text: str,
                        usage: TokenUsage) -> int:
        """Store one LLM call; credentials in ``request`` are scrubbed first. Returns its id."""
        values = llm_call_values(session_id, request, reply_text, usage, _now())
        with self._write("record llm call") as c:
            cursor = c.execute(insert_sql("llm_calls", LLM_CALL_COLUMNS, "?"), values)
            return int(cursor.lastrowid or 0)

