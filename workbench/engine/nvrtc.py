"""NVRTC: the compiler's fast path (no host preprocessing, a far smaller translation unit).

:func:`find_nvrtc` locates a libnvrtc for a given nvcc — the setting ``WORKBENCH_NVRTC``
(``off``, the default; ``on``; ``all``; or a library path), then the toolkit of that nvcc
(its ``lib64`` and ``targets/<target>/lib``, read from ``nvcc -dryrun``), then the ``nvidia``
pip package (``nvidia/cu13/lib``, ``nvidia/cuda_nvrtc/lib``) — and keeps it only when its
``major.minor`` is nvcc's release (one ptxas and one front end of one release). Its
identity (:attr:`Nvrtc.identity`) joins the compiler's version, so it keys cached cubins and
stored trials.

Where NVRTC gives nvcc's code (tests/test_nvrtc_same_code.py, NVRTC 13.0.88 against nvcc
13.0.88): for kernels that touch no shared memory the PTX is the same; for kernels that do,
NVRTC addresses shared memory with 64-bit registers where nvcc uses 32-bit ones, and ptxas
then allocates a few registers more or fewer for some of them. So ``on`` (and a library
path) compiles with NVRTC only kernels whose source declares no ``__shared__`` and whose PTX
from NVRTC has no ``.shared`` state space (:func:`same_code_expected`); the rest go to nvcc.
``all`` compiles every kernel with NVRTC (faster; the code may differ as above): the search
ranks on NVRTC's code, and the confirmation that decides the stored pick compiles with nvcc
(:meth:`workbench.engine.compiler.Compiler.faithful`).

:func:`nvrtc_options` maps the Compiler's nvcc flags to NVRTC options, or answers None for a
flag it does not know (then nvcc compiles). :func:`run_nvrtc` compiles one work directory in
a sandboxed child (:mod:`workbench.engine.nvrtc_child`, standard library only, run inside the
sandbox's launcher under the same address-space, CPU-time and file-size limits as nvcc),
never in the caller's process. The child is persistent: it starts once, loads the library
once and answers one request after another (one JSON line each way; each request's files,
options and output stay in its own work directory). :data:`CHILDREN` holds them: one per
concurrent caller (the Compiler's threads, a Dask worker's compile tasks), started on demand,
at most :data:`MAX_CHILDREN` per library and limits, each used by one thread at a time, and
ended at interpreter exit or by :meth:`workbench.engine.compiler.Compiler.close`.

Limits per request: the wall deadline (the compile's ``timeout_s``, as before) kills the
child, and the request reads ``timed_out`` (the Compiler then hands the instance to nvcc,
whose own deadline makes it the ``timeout`` result it was); RLIMIT_CPU counts a process's
whole life, so the launcher keeps the hard CPU limit for a Python script and the child moves
its soft limit to ``cpu_s`` past its CPU time so far before each request (SIGXCPU then ends
it, and the request reads as that limit); RLIMIT_AS and RLIMIT_FSIZE apply to the child as
they did. A child that ends without answering (a crash, a limit, the deadline) is reported
for the request it was serving, with its exit status and output, and a new one serves the
next request; one found dead while idle is replaced without failing anyone.

Cost (benchmarks/compile/nvrtc_child_latency.py, 20 distinct silu_and_mul configs, on the
2-core development machine under a load of 6 to 7 from other work): a median 0.31 s per
compile in-process, 0.59 s through a one-shot child (an interpreter start and a library load
each time; the former path) and 0.30 s through the persistent child (its first compile,
which starts it, 0.42 s). Through ``Compiler.compile_many`` with 2 workers, 24 configs
compiled at 105 to 112 configs/min with one-shot children and 160 to 191 with persistent
ones. Differences from nvcc's code, measured with NVRTC 13.0.88 against nvcc 13.0.88: see
``tests/test_nvrtc_same_code.py``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from workbench.core.errors import CompilerNotFoundError
from workbench.engine.sandbox import (
    RUN_PYTHON,
    SandboxLimits,
    SandboxRun,
    kill_at,
    launcher_command,
    read_output,
)

CHILD = Path(__file__).with_name("nvrtc_child.py")
#: pip packages' library folders, under a ``site-packages`` entry of ``sys.path``.
PIP_FOLDERS = ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib")
_RELEASE = re.compile(r"release (\d+\.\d+)")
_QUOTED = re.compile(r'"([^"]+)"')
_DRYRUN_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Nvrtc:
    """One usable libnvrtc: the library, its builtins beside it, its version, and the
    include folders of nvcc's toolkit (cuda_fp16.h, cuda_bf16.h, cccl)."""

    library: Path
    builtins: Path | None
    version: str  # NVRTC's major.minor
    include_dirs: tuple[Path, ...]
    every_kernel: bool = False  # ``all``: also kernels whose code may differ from nvcc's
    build: str = ""  # major.minor.patch where the file name or its wheel says ("" if not)

    @property
    def identity(self) -> str:
        """What keys a compile by this library (with nvcc's own version text)."""
        scope = "every kernel" if self.every_kernel else "kernels without shared memory"
        return f"nvrtc {self.build or self.version} ({self.library.name}; {scope})"


def library_build(library: Path) -> str:
    """The library's ``major.minor.patch``: from its real file name (a toolkit's
    ``libnvrtc.so.13.0.88``) or from the ``nvidia_cuda_nvrtc`` wheel that installed it;
    '' when neither says."""
    real = library.resolve()
    if match := re.fullmatch(r"libnvrtc\.so\.(\d+\.\d+\.\d+)", real.name):
        return match[1]
    for root in real.parents:
        if (root / "nvidia").is_dir():
            relative = real.relative_to(root).as_posix()
            for info in sorted(root.glob("nvidia_cuda_nvrtc*.dist-info")):
                record = info / "RECORD"
                if record.is_file() and f"{relative}," in record.read_text():
                    return _wheel_version(info / "METADATA")
            return ""
    return ""


def _wheel_version(metadata: Path) -> str:
    for line in metadata.read_text(errors="replace").splitlines():
        if line.startswith("Version:"):
            return line.partition(":")[2].strip()
    return ""


def nvcc_build(nvcc_version_text: str) -> str:
    """``13.0.88`` from ``nvcc --version`` text ('' when it names none)."""
    match = re.search(r"\bV(\d+\.\d+\.\d+)", nvcc_version_text)
    return match[1] if match else ""


def same_code_expected(source_texts: Sequence[str]) -> bool:
    """Whether NVRTC is expected to give nvcc's code for these texts (the source and the
    local headers it includes): none declares shared memory."""
    return not any("__shared__" in text for text in source_texts)


def ptx_uses_shared_memory(ptx: str) -> bool:
    """Whether PTX declares or addresses the shared state space (where NVRTC's addressing
    differs from nvcc's)."""
    return ".shared" in ptx


@dataclass(frozen=True)
class Toolkit:
    """What ``nvcc -dryrun`` says of nvcc's toolkit: its root and include folders."""

    top: Path
    target_dir: str  # e.g. targets/x86_64-linux
    include_dirs: tuple[Path, ...]

    def library_dirs(self) -> tuple[Path, ...]:
        return (self.top / "lib64", self.top / self.target_dir / "lib", self.top / "lib")


_TOOLKITS: dict[str, Toolkit] = {}
_FOUND: dict[tuple[str, str], Nvrtc | None] = {}
_LOCK = threading.Lock()


def toolkit_of(nvcc: Path) -> Toolkit:
    """Read nvcc's toolkit from ``nvcc -dryrun`` (cached per nvcc path)."""
    with _LOCK:
        if str(nvcc) not in _TOOLKITS:
            _TOOLKITS[str(nvcc)] = _read_toolkit(nvcc)
        return _TOOLKITS[str(nvcc)]


def _read_toolkit(nvcc: Path) -> Toolkit:
    done = subprocess.run([str(nvcc), "-dryrun", "-cubin", "probe.cu"], capture_output=True,
                          text=True, timeout=_DRYRUN_TIMEOUT_S, check=False)
    values: dict[str, str] = {}
    for line in (done.stdout + done.stderr).splitlines():
        name, _, value = line.removeprefix("#$ ").partition("=")
        if line.startswith("#$ ") and name.isidentifier():
            values[name] = value.strip()  # the last one wins (_TARGET_DIR_ is set twice)
    if "TOP" not in values:
        raise CompilerNotFoundError(f"{nvcc} -dryrun named no toolkit (no TOP line): "
                                    f"{(done.stdout + done.stderr)[:300]!r}",
                                    nvcc=str(nvcc), expected="a #$ TOP= line")
    includes = [Path(p.removeprefix("-I")) for key in ("INCLUDES", "SYSTEM_INCLUDES")
                for p in _QUOTED.findall(values.get(key, "")) if p != "-isystem"]
    return Toolkit(Path(values["TOP"]).resolve(), values.get("_TARGET_DIR_", ""),
                   tuple(p.resolve() for p in includes))


def _libraries_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("libnvrtc.so*") if ".alt." not in p.name)


def candidates(toolkit: Toolkit, paths: Sequence[str] | None = None) -> list[Path]:
    """libnvrtc files in search order: the toolkit's library folders, then pip packages."""
    found: list[Path] = []
    for folder in toolkit.library_dirs():
        found += _libraries_in(folder)
    for entry in sys.path if paths is None else paths:
        for sub in PIP_FOLDERS:
            found += _libraries_in(Path(entry or ".") / sub)
    return list(dict.fromkeys(found))


def builtins_beside(library: Path) -> Path | None:
    """The libnvrtc-builtins of the same release in the library's folder."""
    found = sorted(p for p in library.parent.glob("libnvrtc-builtins.so*")
                   if ".alt." not in p.name)
    return found[-1] if found else None


def library_version(library: Path, builtins: Path | None) -> str | None:
    """NVRTC's ``major.minor``, asked of the library in a child; None when it cannot load."""
    command = [sys.executable, "-I", "-S", str(CHILD), "--version", str(library)]
    if builtins is not None:
        command.append(str(builtins))
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=_DRYRUN_TIMEOUT_S, check=False)
    text = done.stdout.strip()
    return text if done.returncode == 0 and re.fullmatch(r"\d+\.\d+", text) else None


def nvcc_release(nvcc_version_text: str) -> str:
    """``13.0`` from ``nvcc --version`` text ('' when it names none)."""
    match = _RELEASE.search(nvcc_version_text)
    return match[1] if match else ""


def find_nvrtc(nvcc: Path, nvcc_version_text: str, setting: str) -> Nvrtc | None:
    """The libnvrtc to compile with beside ``nvcc``, or None (``setting`` is ``off``, or no
    library of nvcc's release was found); ``all`` marks it for every kernel. A library path
    in ``setting`` that cannot be used raises CompilerNotFoundError naming it. Cached per
    nvcc and setting."""
    if setting == "off":
        return None
    key = (str(nvcc), setting)
    with _LOCK:
        if key in _FOUND:
            return _FOUND[key]
    found = _find(nvcc, nvcc_version_text, setting)
    with _LOCK:
        _FOUND[key] = found
    return found


def _find(nvcc: Path, nvcc_version_text: str, setting: str) -> Nvrtc | None:
    release = nvcc_release(nvcc_version_text)
    every_kernel = setting == "all"
    if setting in ("on", "all"):
        try:
            toolkit = toolkit_of(nvcc)
        except CompilerNotFoundError:  # an nvcc that names no toolkit: nvcc alone
            return None
    else:
        toolkit = toolkit_of(nvcc)
        library = Path(setting)
        builtins = builtins_beside(library)
        version = library_version(library, builtins) if library.is_file() else None
        if version is None or version != release:
            raise CompilerNotFoundError(
                f"WORKBENCH_NVRTC={setting}: "
                f"{'not a loadable libnvrtc' if version is None else f'NVRTC {version}'}; "
                f"expected a libnvrtc of nvcc's release {release}",
                key="WORKBENCH_NVRTC", value=setting, expected=f"libnvrtc {release}")
        return Nvrtc(library, builtins, version, toolkit.include_dirs,
                     build=library_build(library))
    for library in candidates(toolkit):
        builtins = builtins_beside(library)
        version = library_version(library, builtins)
        if version is not None and version == release:
            return Nvrtc(library, builtins, version, toolkit.include_dirs, every_kernel,
                         library_build(library))
    return None


# --- nvcc flags -> NVRTC options ------------------------------------------------------

#: nvcc flags with no NVRTC counterpart that change nothing in the device code: ``-cubin``
#: (NVRTC builds a cubin for an ``sm_`` arch) and host optimisation levels.
_DROPPED = frozenset({"-cubin", "--cubin", "-O0", "-O1", "-O2", "-O3"})
#: Flags passed through as written (with their ``=value``).
_PASSED = re.compile(
    r"^(--?std=c\+\+\d\d|-lineinfo|--generate-line-info|-D\S+|-U\S+|--?maxrregcount=\d+|"
    r"--?use_fast_math|--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)|"
    r"--extra-device-vectorization)$")
_ARCH = re.compile(r"^(-arch|--gpu-architecture)=(sm_\d+[a-z]?)$")


def nvrtc_options(flags: Sequence[str]) -> list[str] | None:
    """NVRTC options for the Compiler's nvcc ``flags``; None when one flag has no known
    counterpart (or the arch is not a real ``sm_``), so nvcc compiles instead."""
    options: list[str] = []
    pending_ptxas = False
    for flag in flags:
        if pending_ptxas:
            options.append(f"--ptxas-options={flag}")
            pending_ptxas = False
        elif flag in ("-Xptxas", "--ptxas-options"):
            pending_ptxas = True
        elif flag.startswith(("-Xptxas=", "--ptxas-options=")):
            options.append(f"--ptxas-options={flag.partition('=')[2]}")
        elif flag in _DROPPED:
            continue
        elif match := _ARCH.match(flag):
            options.append(f"-arch={match[2]}")
        elif _PASSED.match(flag):
            options.append(flag)
        else:
            return None
    if pending_ptxas or not any(o.startswith("-arch=") for o in options):
        return None
    return options


# --- the compile children ----------------------------------------------------------

OUTPUT_FILE = "nvrtc.out"
NVRTC_TIMEOUT_MARKER = "workbench: the NVRTC child did not finish within"
#: Children per library and limits: one per concurrent caller, at most this many (a caller
#: past it waits for one to be free). Each holds the interpreter and the library, ~90 MiB.
MAX_CHILDREN = max(4, 2 * (os.cpu_count() or 1))
_CLOSE_WAIT_S = 2.0
_ChildKey = tuple[str, str | None, SandboxLimits]


@dataclass(frozen=True)
class ChildRequest:
    """One compile for a child (one JSON line; see :mod:`workbench.engine.nvrtc_child`)."""

    work: str  # the request's own work directory: the child runs there
    source: str
    options: tuple[str, ...]
    cubin: str
    ptx: str | None
    output: str  # the file in ``work`` that takes the child's output for this request
    cpu_s: int  # the CPU time this request may use

    def line(self) -> bytes:
        return json.dumps({**asdict(self), "options": list(self.options)}).encode() + b"\n"


@dataclass(frozen=True)
class _Reply:
    """What one request got from a child: its answer, or how the child ended."""

    returncode: int
    peak_rss_bytes: int
    answered: bool  # False: the child ended (crash, limit, kill) and is gone
    said: str = ""  # what the child printed instead of an answer (a load failure)


class _Child:
    """One sandboxed NVRTC child: the library loaded once, one request at a time."""

    def __init__(self, key: _ChildKey, work: Path, generation: int) -> None:
        library, builtins, limits = key
        command = [RUN_PYTHON, str(CHILD), "--serve", library, *([builtins] if builtins else [])]
        self.generation = generation
        self.process = subprocess.Popen(
            launcher_command(command, limits), cwd="/", stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=limits.environment(work),
            start_new_session=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def ask(self, request: ChildRequest, timeout_s: float) -> tuple[_Reply, bool]:
        """Send one request and wait for its answer, killing the child at ``timeout_s``;
        the reply and whether the deadline killed it."""
        with kill_at(timeout_s, self.kill) as timed_out:
            reply = self._exchange(request)
        return reply, timed_out.is_set()

    def _exchange(self, request: ChildRequest) -> _Reply:
        assert self.process.stdin is not None and self.process.stdout is not None
        line = b""
        try:
            self.process.stdin.write(request.line())
            self.process.stdin.flush()
            line = self.process.stdout.readline()
            answer = json.loads(line)
            return _Reply(int(answer["status"]), int(answer["peak_rss_kib"]) * 1024, True)
        except (OSError, ValueError, KeyError, TypeError):
            return self._ended(line.decode("utf-8", "replace"))

    def _ended(self, said: str) -> _Reply:
        """The child stopped without an answer: what it printed, and its exit status."""
        assert self.process.stdout is not None
        said += self.process.stdout.read().decode("utf-8", "replace")
        _, status, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = os.waitstatus_to_exitcode(status)
        return _Reply(self.process.returncode, int(usage.ru_maxrss) * 1024, False, said)

    def forget_pipes(self) -> None:
        """Close this process's copy of the pipes (after a fork), leaving the child be."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.process.returncode = 0  # not ours to wait for

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def close(self) -> None:
        """End the child: its stdin closes, so it leaves its loop (killed if it does not)."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(_CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


class ChildPool:
    """Idle children per (library, builtins, limits); each taken by one thread at a time,
    started on demand, at most :data:`MAX_CHILDREN` per key. A child that ended is replaced
    by a fresh one at the next request; :meth:`close` ends the idle ones and those in use
    when they come back."""

    def __init__(self, limit: int = MAX_CHILDREN) -> None:
        self.limit = limit
        self._ready = threading.Condition()
        self._idle: dict[_ChildKey, list[_Child]] = {}
        self._count: dict[_ChildKey, int] = {}
        self._live: set[_Child] = set()  # idle and in use
        self._generation = 0

    def take(self, key: _ChildKey, work: Path) -> _Child:
        """An idle child of ``key`` (one that ended while idle is dropped), else a new one
        (``work`` is its first request's folder), waiting while ``key`` has its limit."""
        while True:
            idle, generation = self._reserve(key)
            if idle is None:
                break
            if idle.process.poll() is None:
                return idle
            self._end(key, idle)  # killed from outside while idle: not this request's crash
        try:
            child = _Child(key, work, generation)
        except BaseException:
            self._forget(key)
            raise
        with self._ready:
            self._live.add(child)
        return child

    def _reserve(self, key: _ChildKey) -> tuple[_Child | None, int]:
        """An idle child, or (None, the generation) with a place for a new one counted."""
        with self._ready:
            while not self._idle.get(key) and self._count.get(key, 0) >= self.limit:
                self._ready.wait()
            if self._idle.get(key):
                return self._idle[key].pop(), self._generation
            self._count[key] = self._count.get(key, 0) + 1
            return None, self._generation

    def give_back(self, key: _ChildKey, child: _Child, *, alive: bool) -> None:
        """Return a child after a request; one that ended, or is from before a
        :meth:`close`, is not kept."""
        with self._ready:
            keep = alive and child.generation == self._generation
            if keep:
                self._idle.setdefault(key, []).append(child)
                self._ready.notify()
        if not keep:
            self._end(key, child)

    def _end(self, key: _ChildKey, child: _Child) -> None:
        child.close()
        with self._ready:
            self._live.discard(child)
        self._forget(key)

    def _forget(self, key: _ChildKey) -> None:
        with self._ready:
            self._count[key] -= 1
            self._ready.notify()

    def pids(self, key: _ChildKey) -> list[int]:
        """The idle children's process ids (oldest first)."""
        with self._ready:
            return [child.pid for child in self._idle.get(key, [])]

    def close(self, key: _ChildKey | None = None) -> int:
        """End the idle children (of ``key``, or all); children in use end when given
        back. The number ended now."""
        with self._ready:
            self._generation += 1
            ending: list[_Child] = []
            for k in [key] if key is not None else list(self._idle):
                idle = self._idle.pop(k, [])
                self._count[k] = self._count.get(k, 0) - len(idle)
                ending += idle
            self._live.difference_update(ending)
            self._ready.notify_all()
        for child in ending:
            child.close()
        return len(ending)

    def after_fork(self) -> None:
        """In a forked process: the parent's children are not ours to use or end; their
        pipes are closed here, so the parent's closing them still ends them."""
        for child in self._live:
            child.forget_pipes()
        self._ready = threading.Condition()
        self._idle, self._count, self._live = {}, {}, set()


#: The process's children, ended at interpreter exit (and in a forked process, forgotten).
CHILDREN = ChildPool()
atexit.register(CHILDREN.close)
os.register_at_fork(after_in_child=CHILDREN.after_fork)


def child_key(nvrtc: Nvrtc, limits: SandboxLimits) -> _ChildKey:
    """Which children may compile with ``nvrtc`` under ``limits``."""
    return (str(nvrtc.library), str(nvrtc.builtins) if nvrtc.builtins else None, limits)


def close_children(nvrtc: Nvrtc, limits: SandboxLimits) -> int:
    """End the children that compile with ``nvrtc`` under ``limits`` (started again on
    demand); the number ended now."""
    return CHILDREN.close(child_key(nvrtc, limits))


# --- one compile ---------------------------------------------------------------------


def run_nvrtc(nvrtc: Nvrtc, options: Sequence[str], work: Path, *, source: str, cubin: str,
              limits: SandboxLimits, timeout_s: float, ptx: str | None = None) -> SandboxRun:
    """Compile ``work/source`` to ``work/cubin`` in a sandboxed child of :data:`CHILDREN`
    (the log is NVRTC's program log; see :mod:`workbench.engine.nvrtc_child` for the
    statuses). At ``timeout_s`` the child is killed and the run reads ``timed_out``; a
    child that ended (a crash, a limit, the deadline) is reported for this request, with
    its exit status, and replaced for the next. ``peak_rss_bytes`` is the child's largest
    resident set so far (it serves many requests)."""
    key = child_key(nvrtc, limits)
    includes = [f"-I{work}", *(f"-I{d}" for d in nvrtc.include_dirs)]
    request = ChildRequest(str(work), source, (*options, *includes), cubin, ptx, OUTPUT_FILE,
                           limits.cpu_s)
    child = CHILDREN.take(key, work)
    try:
        reply, timed_out = child.ask(request, timeout_s)
    except BaseException:  # interrupted while it compiled: the child's state is unknown
        child.kill()
        CHILDREN.give_back(key, child, alive=False)
        raise
    CHILDREN.give_back(key, child, alive=reply.answered and not timed_out)
    output = work / OUTPUT_FILE
    log = reply.said + (read_output(output, work, limits) if output.is_file() else "")
    if timed_out:
        log += f"\n{NVRTC_TIMEOUT_MARKER} {timeout_s:g} s and was killed\n"
    elif not reply.answered:
        log += (f"\n[nvrtc] the compile child ended without answering "
                f"(exit status {reply.returncode}); a new one serves the next request\n")
    return SandboxRun(returncode=reply.returncode, log=log,
                      peak_rss_bytes=reply.peak_rss_bytes, timed_out=timed_out)
