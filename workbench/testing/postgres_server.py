"""A throwaway PostgreSQL server for tests: Debian's ``postgresql`` package, started with
``initdb`` and ``pg_ctl`` in a temporary directory, listening on 127.0.0.1 only, trust
authentication, stopped and deleted afterwards.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user that
the Debian package creates (through ``runuser``); as anyone else, as that user.

    with PostgresServer.start() as server:
        store = PostgresStore(server.dsn, schema="t1")
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import StoreError

USER = "workbench"


class PostgresUnavailable(StoreError):
    """The server cannot be started here; the message says why (for a skip reason)."""


def find_bin_dir() -> Path:
    """The directory of ``initdb`` and ``pg_ctl`` (Debian keeps them off the PATH)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if not versions:
        raise PostgresUnavailable("PostgreSQL is not installed (apt-get install postgresql)")
    return Path(versions[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server: connect with :attr:`dsn`; :meth:`stop` removes it."""

    root: Path
    port: int
    bin_dir: Path
    as_user: str | None

    @property
    def dsn(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    @classmethod
    def start(cls, timeout_s: float = 60.0) -> PostgresServer:
        bin_dir = find_bin_dir()
        as_user = None
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                raise PostgresUnavailable("running as root without runuser: PostgreSQL refuses "
                                          "to run as root")
            try:
                import pwd

                pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable("running as root and there is no 'postgres' user "
                                          "to run the server as") from None
            as_user = "postgres"
        root = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
        os.chmod(root, 0o755)
        if as_user is not None:
            shutil.chown(root, user=as_user)
        server = cls(root=root, port=_free_port(), bin_dir=bin_dir, as_user=as_user)
        try:
            server._run(["initdb", "-D", str(root / "data"), "-U", USER, "--auth=trust",
                         "--no-sync", "-E", "UTF8", "--locale=C"], timeout_s)
            server._run(["pg_ctl", "-D", str(root / "data"), "-l", str(root / "log"), "-w",
                         "-t", str(int(timeout_s)), "-o",
                         f"-p {server.port} -c listen_addresses=127.0.0.1 "
                         f"-k {root} -c fsync=off", "start"], timeout_s)
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, command: Sequence[str], timeout_s: float) -> None:
        argv = [str(self.bin_dir / command[0]), *command[1:]]
        if self.as_user is not None:
            argv = ["runuser", "-u", self.as_user, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              check=False, cwd=self.root)
        if done.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise PostgresUnavailable(f"{command[0]} failed (exit {done.returncode}): "
                                      f"{done.stderr.strip()[-800:]} {log[-800:]}")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory."""
        if (self.root / "data" / "postmaster.pid").exists():
            with contextlib.suppress(PostgresUnavailable, subprocess.TimeoutExpired):
                self._run(["pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w",
                           "stop"], 60.0)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
