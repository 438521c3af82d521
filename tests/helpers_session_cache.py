"""One test run's shared compiles: a host program or a kernel source that several tests (or
both xdist workers) compile with the same flags is compiled once a run, and every later
asker reads what that compile made.

The files live in ``$WORKBENCH_TEST_COMPILES`` (tests/conftest.py makes a fresh folder for
each run and removes it at the end; the xdist workers inherit it). A file is keyed by the
sha256 of what decides it — the tool's flags and the full text of its input, an
``-include``d header by its text, not its path — and written whole under a lock, so two
workers asking at once compile once and neither reads half a file. A compile that fails
leaves nothing behind: the next asker compiles again and fails the same way."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

#: The environment variable naming the run's folder of shared compiles.
COMPILES_ENV = "WORKBENCH_TEST_COMPILES"

_PRIVATE: list[Path] = []  # the folder of a process that runs without one (outside pytest)


def compiles_root() -> Path:
    """``$WORKBENCH_TEST_COMPILES``, or (outside a test run) a folder of this process's own."""
    named = os.environ.get(COMPILES_ENV)
    if named:
        root = Path(named)
        root.mkdir(parents=True, exist_ok=True)
        return root
    if not _PRIVATE:
        _PRIVATE.append(Path(tempfile.mkdtemp(prefix="wb-test-compiles-")))
    return _PRIVATE[0]


def flags_key(flags: Sequence[str]) -> list[str]:
    """``flags`` as a cache key: a flag that names an existing file (an ``-include``d
    header in a folder of one worker's own) stands for that file's text."""
    key = []
    for flag in flags:
        path = Path(flag)
        key.append(f"file:{path.read_text(errors='replace')}"
                   if path.is_absolute() and path.is_file() else flag)
    return key


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared_output(kind: str, key: Sequence[str], make: Callable[[Path], object]) -> Path:
    """The file (or folder) ``make(path)`` writes at ``path`` for ``key``, made once a run:
    the first asker makes it (under a lock, then renamed into place whole), the others get
    the same path. ``kind`` names what it is (``gxx-exe``, ``ptxas-log``) for anyone reading the
    folder. Whatever ``make`` raises reaches the caller and nothing is kept."""
    root = compiles_root()
    digest = hashlib.sha256("\0".join([kind, *key]).encode()).hexdigest()[:40]
    final = root / f"{kind}-{digest}"
    if final.exists():
        return final
    with _locked(root / f"{kind}-{digest}.lock"):
        if not final.exists():
            partial = root / f"{kind}-{digest}.{os.getpid()}.partial"
            try:
                make(partial)
                os.replace(partial, final)
            finally:
                if partial.is_dir():
                    shutil.rmtree(partial)
                partial.unlink(missing_ok=True)
    return final
