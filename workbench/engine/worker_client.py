"""The parent's handle on the GPU worker: starts, talks to, watches and kills the child.

The notebook / CLI process never imports pycuda. It starts :mod:`workbench.engine.worker` as a
child and talks to it through :class:`WorkerClient`. An illegal address poisons a CUDA
context for good, so after such an error (or a hang, or the child dying) the parent kills the
child and starts a fresh one; only that candidate is lost.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from workbench.core.errors import WorkerError
from workbench.engine.worker_protocol import read_message, write_message


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


class WorkerDied(WorkerError):
    """The worker exited (or broke the protocol) without answering."""


class WorkerTimeout(WorkerError):
    """The worker did not answer within the deadline and was killed."""


class WorkerClient:
    """Starts, talks to, watches and kills one worker process.

    ``request`` raises :class:`WorkerTimeout` when no answer arrives in time (the child is
    killed first) and :class:`WorkerDied` when the child exits without answering. A reply
    with ``{"error": ...}`` is returned as is; interpreting it is the caller's job.
    """

    def __init__(self, *, python: str | None = None, env: Mapping[str, str] | None = None,
                 start_timeout_s: float = 120.0) -> None:
        self.python = python or sys.executable
        self._env = dict(os.environ if env is None else env)
        root = _package_root()
        self._env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, self._env.get("PYTHONPATH", "")) if p)
        self._env.setdefault("PYTHONUNBUFFERED", "1")
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue[dict[str, Any] | BaseException | None] = queue.Queue()
        self._stderr_file: IO[bytes] | None = None
        self.starts = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        """Start a fresh child (killing any previous one)."""
        self.kill()
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child)
        self._replies = queue.Queue()
        self._proc = subprocess.Popen(
            [self.python, "-m", "workbench.engine.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr_file,
            env=self._env, start_new_session=True)
        self.starts += 1
        proc, replies = self._proc, self._replies

        def pump() -> None:
            assert proc.stdout is not None
            try:
                while True:
                    msg = read_message(proc.stdout)
                    replies.put(msg)
                    if msg is None:
                        return
            except BaseException as exc:  # torn frame: hand it to the waiting caller
                replies.put(exc)

        threading.Thread(target=pump, name="workbench-worker-reader", daemon=True).start()

    def stderr_tail(self, limit: int = 4000) -> str:
        """The last ``limit`` characters the child wrote to stderr."""
        if self._stderr_file is None:
            return ""
        try:
            self._stderr_file.flush()
            size = self._stderr_file.seek(0, os.SEEK_END)
            self._stderr_file.seek(max(0, size - limit))
            return self._stderr_file.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def request(self, message: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one command and wait up to ``timeout_s`` for its reply."""
        if not self.alive:
            self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            write_message(proc.stdin, message)
        except (BrokenPipeError, OSError) as exc:
            tail = self.stderr_tail()
            self.kill()
            raise WorkerDied(f"worker pipe closed: {exc}", stderr=tail) from exc
        try:
            reply = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            tail = self.stderr_tail()
            self.kill()
            raise WorkerTimeout(f"worker gave no answer to {message.get('cmd')!r} within "
                                f"{timeout_s:.1f} s; killed", timeout_s=timeout_s,
                                stderr=tail) from None
        if reply is None or isinstance(reply, BaseException):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            tail = self.stderr_tail()
            code = proc.poll()
            self.kill()
            raise WorkerDied(f"worker exited (code {code}) while answering "
                             f"{message.get('cmd')!r}", returncode=code, stderr=tail)
        return reply

    def kill(self) -> None:
        """Kill the child (if any) and wait for it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def close(self) -> None:
        """Ask the child to quit, then make sure it is gone."""
        if self.alive:
            with contextlib.suppress(WorkerError):
                self.request({"cmd": "quit"}, timeout_s=10)
        self.kill()
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

