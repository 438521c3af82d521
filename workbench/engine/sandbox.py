"""The limits every compile runs under, and the sandboxed run itself.

:func:`run_sandboxed` runs a command (nvcc) in a private work directory (``TMPDIR`` too) in a
session of its own, through a small Python launcher that sets, then execs it:
RLIMIT_AS (address space), RLIMIT_CPU (CPU time), RLIMIT_FSIZE (the size of any file it
writes; the command's output goes to a file, so this bounds the log too) and no core dumps.
A timer kills the whole session at the wall limit; at most ``log_bytes`` of output are read
back; ``wait4`` gives the largest resident set of the process tree. :func:`limit_hit` says,
from the exit status and the log, which limit ended a run.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one compile (per process of the nvcc tree, except ``wall_s``).

    Defaults: 4 GiB of address space (nvcc's tools need under 0.5 GiB for the sample
    kernels; a runaway preprocessor stops there instead of at 13 GB), 120 s of CPU per
    process, 256 MiB per written file, 1 MiB of log read back, and the compiler's
    ``timeout_s`` of wall time. See ``benchmarks/README.md`` ("Compile sandbox").
    """

    address_space_bytes: int = 4 << 30
    cpu_s: int = 120
    file_bytes: int = 256 << 20
    log_bytes: int = 1 << 20

    def environment(self, work: Path) -> dict[str, str]:
        """The child's environment: ours, with temporary files kept inside ``work``."""
        env = dict(os.environ)
        for name in ("TMPDIR", "TMP", "TEMP"):
            env[name] = str(work)
        return env


DEFAULT_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class SandboxRun:
    """How a sandboxed run ended."""

    returncode: int
    log: str  # at most ``log_bytes`` of its output, then a note when cut
    peak_rss_bytes: int
    timed_out: bool = False
    launch_failed: bool = False  # the command could not be executed at all


_OUTPUT_FILE = "nvcc.out"
_LAUNCH_FAILED = 127
#: A command that starts with this runs the Python script after it inside the launcher
#: itself (``python -I -S``, under the limits), saving the start of a second interpreter.
RUN_PYTHON = "--run-python"
# argv: address-space bytes, CPU seconds, file bytes, then the command to exec (or
# RUN_PYTHON, a script and its arguments; the launcher spells RUN_PYTHON out). A Python
# script keeps the hard CPU limit, so a serving child (workbench/engine/nvrtc_child.py)
# can re-arm the soft one for each request it answers.
_LAUNCHER = """
import os, resource, sys
for which, value in ((resource.RLIMIT_AS, sys.argv[1]), (resource.RLIMIT_CPU, sys.argv[2]),
                     (resource.RLIMIT_FSIZE, sys.argv[3]), (resource.RLIMIT_CORE, "0")):
    hard = resource.getrlimit(which)[1]
    value = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
    rearm = which == resource.RLIMIT_CPU and sys.argv[4] == "--run-python"
    resource.setrlimit(which, (value, hard if rearm else value))
if sys.argv[4] == "--run-python":
    import runpy
    sys.argv = sys.argv[5:]
    sys.path[0] = os.path.dirname(sys.argv[0])
    runpy.run_path(sys.argv[0], run_name="__main__")
    sys.exit(0)
try:
    os.execv(sys.argv[4], sys.argv[4:])
except OSError as error:
    print(error, flush=True)
    os._exit(127)
"""
_SIGNAL_DEATH = re.compile(r"died due to signal (\d+)|terminated by signal (\d+)")
_FILE_LIMIT_MARKER = "[sandbox] a file the compiler wrote reached the file-size limit"
_FILE_LIMIT = re.compile(r"File size limit exceeded|File too large|" + re.escape(_FILE_LIMIT_MARKER))
_CPU_LIMIT = re.compile(r"CPU time limit exceeded")
_OUT_OF_MEMORY = re.compile(r"out of memory|virtual memory exhausted|std::bad_alloc|"
                            r"cannot allocate memory|memory allocation failed", re.I)


def limit_hit(returncode: int, log: str, limits: SandboxLimits) -> str | None:
    """Which sandbox limit ended a compile, in words, or None."""
    signals = {-returncode} if returncode < 0 else set()
    signals |= {int(a or b) for a, b in _SIGNAL_DEATH.findall(log)}
    if signal.SIGXCPU in signals or _CPU_LIMIT.search(log):
        return f"the compiler used more than the CPU-time limit of {limits.cpu_s} s"
    if signal.SIGXFSZ in signals or _FILE_LIMIT.search(log):
        return (f"the compiler wrote a file larger than the limit of "
                f"{limits.file_bytes >> 20} MiB")
    if _OUT_OF_MEMORY.search(log):
        return (f"the compiler ran out of its memory limit of "
                f"{limits.address_space_bytes >> 20} MiB of address space")
    return None


def launcher_command(command: list[str], limits: SandboxLimits) -> list[str]:
    """The launcher's argv: it sets ``limits``, then execs ``command`` (or runs the Python
    script of ``[RUN_PYTHON, script, *args]`` itself)."""
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(limits.address_space_bytes),
            str(limits.cpu_s), str(limits.file_bytes), *command]


def read_output(output_path: Path, work: Path, limits: SandboxLimits) -> str:
    """A run's output file (removed once read): at most ``log_bytes`` of it, a note when
    cut, and a note when a file in ``work`` reached the file-size limit."""
    with output_path.open("rb") as fh:
        raw = fh.read(limits.log_bytes + 1)
    output_path.unlink()
    log = raw[:limits.log_bytes].decode("utf-8", "replace")
    if len(raw) > limits.log_bytes:
        log += f"\n[log cut at {limits.log_bytes} bytes]\n"
    if any(p.is_file() and p.stat().st_size >= limits.file_bytes for p in work.rglob("*")):
        log += f"\n{_FILE_LIMIT_MARKER}\n"  # a write stopped at the limit
    return log


@contextlib.contextmanager
def kill_at(timeout_s: float, kill: Callable[[], None]) -> Iterator[threading.Event]:
    """Call ``kill`` (from a timer thread) should the block still run ``timeout_s`` from
    now; the event yielded says whether it did."""
    fired = threading.Event()

    def fire() -> None:
        fired.set()
        kill()

    timer = threading.Timer(timeout_s, fire)
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def run_sandboxed(command: list[str], work: Path, limits: SandboxLimits,
                  timeout_s: float) -> SandboxRun:
    """Run ``command`` in ``work`` under ``limits`` and a wall limit of ``timeout_s``.

    The limits are set by a launcher that then execs the command (a ``preexec_fn`` is not
    safe in the threads of a parallel compile), or, for ``[RUN_PYTHON, script, *args]``,
    runs the standard-library script itself.
    """
    output_path = work / _OUTPUT_FILE
    with output_path.open("wb") as output:
        process = subprocess.Popen(launcher_command(command, limits), cwd=work,
                                   stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, env=limits.environment(work),
                                   start_new_session=True)
    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    with kill_at(timeout_s, kill) as timed_out:
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    log = read_output(output_path, work, limits)
    return SandboxRun(returncode=process.returncode, log=log,
                      peak_rss_bytes=int(usage.ru_maxrss) * 1024, timed_out=timed_out.is_set(),
                      launch_failed=process.returncode == _LAUNCH_FAILED
                      and log.startswith("[Errno "))  # the launcher's exec failed
