"""PostgresStore against a real PostgreSQL server from Debian's package (started for this
module in a temporary directory): the Store contract, several writers at once, the search
loop writing into it, and what a user sees when the server is not there."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.core.errors import StoreError
from workbench.testing.store_contract import PROVENANCE, StoreContract, sample_result

psycopg = pytest.importorskip("psycopg")

from workbench.store.postgres import PostgresStore, describe_dsn, open_store  # noqa: E402
from workbench.store.sqlite import SCHEMA_VERSION  # noqa: E402
from workbench.testing.postgres_server import (  # noqa: E402
    PostgresServer,
    PostgresUnavailable,
)

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]
_schemas = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    try:
        started = PostgresServer.start()
    except PostgresUnavailable as exc:
        if os.environ.get("WORKBENCH_REQUIRE_POSTGRES"):
            raise
        pytest.skip(f"no PostgreSQL server can be started here: {exc}")
    yield started
    started.stop()


def _schema() -> str:
    return f"t{os.getpid()}_{next(_schemas)}"


class TestPostgresStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _server(self, server: PostgresServer) -> None:
        self.dsn = server.dsn

    def make_store(self, tmp_path: Path) -> PostgresStore:
        return PostgresStore(self.dsn, schema=_schema())


def test_several_writers_store_each_trial_once(server: PostgresServer) -> None:
    """Drivers on several hosts write to one store: the same key lands once, whoever wins."""
    schema = _schema()
    stores = [PostgresStore(server.dsn, schema=schema) for _ in range(4)]
    results = [sample_result(block) for block in (32, 64, 128, 256, 512)]
    outcomes: list[bool] = []
    lock = threading.Lock()

    def write(store: PostgresStore) -> None:
        for result in results:
            stored = store.record_trial(result, PROVENANCE)
            with lock:
                outcomes.append(stored)

    threads = [threading.Thread(target=write, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count(True) == len(results)  # each key won by exactly one writer
    assert stores[0].count_trials(PROVENANCE) == len(results)
    assert stores[3].schema_version() == SCHEMA_VERSION
    for store in stores:
        store.close()


def test_open_store_reads_the_schema_from_the_url(server: PostgresServer,
                                                  tmp_path: Path) -> None:
    schema = _schema()
    store = open_store(f"{server.dsn}?schema={schema}")
    assert isinstance(store, PostgresStore) and store.schema == schema
    store.record_trial(sample_result(), PROVENANCE)
    store.close()
    again = PostgresStore(server.dsn, schema=schema)
    assert again.count_trials() == 1  # the same tables, opened again
    again.close()
    assert type(open_store(str(tmp_path / "x.sqlite"))).__name__ == "SQLiteStore"


def test_no_server_is_a_clear_error_without_the_password() -> None:
    dsn = "postgresql://tuner:s3cret-pw@127.0.0.1:1/kernels"
    with pytest.raises(StoreError) as caught:
        PostgresStore(dsn, timeout_s=2)
    assert "tuner@127.0.0.1:1/kernels" in caught.value.message
    assert "s3cret-pw" not in caught.value.message
    assert "s3cret-pw" not in describe_dsn(dsn)
    with pytest.raises(StoreError) as bad:
        PostgresStore(dsn, schema="Robert'); DROP TABLE trials;--")
    assert bad.value.details["key"] == "schema"


def test_session_tallies_follow_each_trial_and_are_backfilled(server: PostgresServer) -> None:
    """The sidebar's per-session tallies: updated with each trial, rebuilt from the trials
    when a version-1 store (no tallies) is opened, and a non-integer version is refused."""
    from workbench.core.errors import StoreCorruptError
    from workbench.core.records import Status

    schema = _schema()
    store = PostgresStore(server.dsn, schema=schema)
    session = store.create_session("k").id
    for block, median in ((32, 9.0), (64, 5.0), (128, 7.0)):
        store.record_trial(sample_result(block, median_us=median), PROVENANCE, session)
    store.record_trial(sample_result(256, status=Status.COMPILE_ERROR), PROVENANCE, session)
    expected = [(4, 3, 5.0, PROVENANCE.device)]
    tallies = store.problem_tallies([session])
    assert [(t.trials, t.ok, t.best_us, t.best_device) for t in tallies] == expected
    conn = psycopg.connect(server.dsn, autocommit=True,
                           options=f"-c search_path={schema}")
    conn.execute("DELETE FROM session_tallies")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    store.close()
    with PostgresStore(server.dsn, schema=schema) as reopened:
        tallies = reopened.problem_tallies([session])
        assert [(t.trials, t.ok, t.best_us, t.best_device) for t in tallies] == expected
    conn.execute("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(StoreCorruptError, match="schema_version holds 'abc'"):
        PostgresStore(server.dsn, schema=schema)
