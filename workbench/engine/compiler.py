"""Offline compilation: rendered CUDA source -> cubin with nvcc, cached by content hash.

Compiling is a pure function of (source, entry, flags, arch, nvcc version), so its result
is cached on disk under the sha256 of those; a cache hit costs no nvcc call. Failures a
rerun would repeat (source errors, resource overflows) are cached too; timeouts and
unrecognised failures are not. Each cache entry is one directory holding the rendered
source, the compiler log, the cubin and ``result.json``; it is built in a private
temporary directory and renamed into place, so a reader never sees a partial entry. Every
file of the cache is written through :func:`workbench.core.write_policy.write_file` with the
cache folder as its root (no symlink inside the cache is written through).

The cache lives outside the project, so no configured key may land there: the source is
scrubbed (:func:`workbench.core.secrets.scrub`) before it is hashed, written and compiled,
and the log is scrubbed too. A key inside code changes what compiles, as it should: that
text is never handed to nvcc.

Template sources are data (:mod:`workbench.engine.source_policy`): before nvcc runs, every
``#include`` and file-reading directive is checked (system headers on an allow-list and
files inside the kernel folder only; a refusal is a ``refused`` result naming the line,
and nvcc never starts), and nvcc runs under memory, CPU-time, file-size and wall limits in
the private temporary directory (:mod:`workbench.engine.sandbox`).

With ``WORKBENCH_NVRTC`` (or ``Compiler(nvrtc=...)``) set to ``on``, kernels for which NVRTC
gives nvcc's code are compiled by NVRTC in a sandboxed child first, under the same limits
(:mod:`workbench.engine.nvrtc`: persistent children, one per concurrent caller, ended by
:meth:`Compiler.close` or at exit); ``all`` sends every kernel there. Whatever NVRTC does not
compile is compiled by nvcc, and ``CompileResult.compiler`` says which did. Where NVRTC
compiles every kernel, :meth:`Compiler.faithful` is the nvcc-only twin (same cache folder) a
confirmation compiles with, so the stored pick is measured on nvcc's code.

    compiler = Compiler("sm_90a")
    result = compiler.compile(instance)            # CompileResult
    for result in compiler.compile_many(instances, workers=8):
        ...                                         # yielded as each finishes
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from workbench.core.errors import CompileError, CompilerNotFoundError
from workbench.core.records import ResourceUsage
from workbench.core.secrets import scrub
from workbench.core.settings import workbench_settings
from workbench.core.write_policy import ensure_folder, inside_root, write_file
from workbench.engine.nvrtc import (
    Nvrtc,
    close_children,
    find_nvrtc,
    nvrtc_options,
    ptx_uses_shared_memory,
    run_nvrtc,
    same_code_expected,
)
from workbench.engine.ptxas import (
    TIMEOUT_MARKER,
    classify_failure,
    find_entry,
    parse_ptxas_report,
)
from workbench.engine.sandbox import (
    DEFAULT_LIMITS,
    SandboxLimits,
    SandboxRun,
    limit_hit,
    run_sandboxed,
)
from workbench.engine.source_policy import SourceCheck, check_source

DEFAULT_ARCH = "sm_90a"
DEFAULT_TIMEOUT_S = 60.0
CACHE_ENV = "WORKBENCH_CACHE_DIR"
_CACHE_FORMAT = 2
_SOURCE_FILE = "source.cu"
_CUBIN_FILE = "kernel.cubin"
_LOG_FILE = "compile.log"
_RESULT_FILE = "result.json"
_PTX_FILE = "kernel.ptx"  # NVRTC's, read to check that its code is nvcc's, then removed
# Failures that a rerun with the same inputs would repeat, so they are cached.
_CACHEABLE_FAILURES = frozenset({"syntax", "resource"})

INSTALL_HINT = (
    "install the CUDA compiler: `conda install -c conda-forge cuda-nvcc`, or NVIDIA's CUDA "
    "toolkit (https://developer.nvidia.com/cuda-downloads); or set CUDA_HOME to a toolkit "
    "that contains bin/nvcc"
)


class KernelSource(Protocol):
    """What the compiler needs of a ``KernelInstance`` (workbench.core.template)."""

    @property
    def name(self) -> str: ...
    @property
    def entry(self) -> str: ...
    @property
    def source(self) -> str: ...  # the full rendered text
    @property
    def hash(self) -> str: ...


@dataclass(frozen=True)
class CompileResult:
    """The outcome of compiling one kernel instance for one architecture.

    ``error_kind`` is None on success, else ``"syntax"`` (the source is wrong),
    ``"resource"`` (it asks for more than the architecture has, e.g. shared memory),
    ``"refused"`` (the source includes or reads a file it may not; nvcc did not run),
    ``"limit"`` (nvcc hit a sandbox limit: memory, CPU time or file size),
    ``"timeout"`` or ``"internal"`` (anything the classification table does not know; the
    log is kept). ``compiler`` says which compiler produced the result (NVRTC's failures are
    compiled again by nvcc, so a failure always reads as nvcc's). ``log`` is the complete
    compiler output; ``log_path`` and ``source_path``
    say where it and the rendered source were saved.
    """

    instance_hash: str
    arch: str
    ok: bool
    cubin_path: str | None
    usage: ResourceUsage | None
    compile_s: float
    error_kind: str | None = None
    log: str = ""
    log_path: str | None = None
    cached: bool = False
    entry: str = ""
    error_summary: str = ""  # the log line that decided error_kind
    error_file: str | None = None  # for source errors: the file named by #line
    error_line: int | None = None
    source_path: str | None = None
    cache_key: str = ""
    peak_rss_bytes: int = 0  # the largest resident set of any process of the nvcc tree
    compiler: str = "nvcc"  # which produced it: "nvcc", or "nvrtc" (see workbench.engine.nvrtc)

    def raise_for_error(self) -> CompileResult:
        """Return self when ok, else raise CompileError carrying the kind and the paths."""
        if self.ok:
            return self
        raise CompileError(
            f"compiling {self.entry or self.instance_hash} for {self.arch} failed "
            f"({self.error_kind}): {self.error_summary}",
            kind=self.error_kind, instance_hash=self.instance_hash, arch=self.arch,
            log_path=self.log_path, source_path=self.source_path,
            file=self.error_file, line=self.error_line)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data; :meth:`from_dict` reverses it."""
        data = asdict(self)
        data["usage"] = asdict(self.usage) if self.usage else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompileResult:
        """Rebuild a result from :meth:`to_dict` data."""
        values = dict(data)
        if values.get("usage") is not None:
            values["usage"] = ResourceUsage(**values["usage"])
        return cls(**values)


@dataclass(frozen=True)
class _ScrubbedSource:
    """An instance whose source had a configured key in it, with that key scrubbed (the
    instance's own hash is kept, so results still answer for the instance asked about)."""

    name: str
    entry: str
    source: str
    hash: str


def scrubbed(instance: KernelSource) -> KernelSource:
    """``instance`` itself, or a copy whose source is scrubbed of configured keys."""
    clean = scrub(instance.source)
    if clean == instance.source:
        return instance
    return _ScrubbedSource(instance.name, instance.entry, clean, instance.hash)


def find_nvcc(environ: Mapping[str, str] | None = None) -> Path:
    """Locate nvcc: ``$CUDA_HOME/bin``, then ``$CUDA_PATH/bin``, then ``$PATH``."""
    env = os.environ if environ is None else environ
    searched: list[str] = []
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = env.get(variable)
        if root:
            candidate = Path(root) / "bin" / "nvcc"
            searched.append(str(candidate))
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    found = shutil.which("nvcc", path=env.get("PATH", ""))
    if found:
        return Path(found)
    searched.append("$PATH")
    raise CompilerNotFoundError(
        f"nvcc was not found (searched {', '.join(searched)}); {INSTALL_HINT}",
        searched=searched, hint=INSTALL_HINT)


_VERSIONS: dict[tuple[str, float], str] = {}
_VERSIONS_LOCK = threading.Lock()


def nvcc_version(nvcc: Path) -> str:
    """``nvcc --version`` text (cached per binary and modification time)."""
    key = (str(nvcc), nvcc.stat().st_mtime)
    with _VERSIONS_LOCK:
        if key not in _VERSIONS:
            done = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True,
                                  timeout=60, check=False)
            if done.returncode != 0:
                raise CompilerNotFoundError(
                    f"{nvcc} --version failed (exit {done.returncode}): {done.stderr.strip()}",
                    nvcc=str(nvcc), hint=INSTALL_HINT)
            _VERSIONS[key] = done.stdout.strip()
        return _VERSIONS[key]


def default_cache_dir() -> Path:
    """``$WORKBENCH_CACHE_DIR``, else ``~/.cache/kernel-workbench/cubins``."""
    configured = workbench_settings().cache_dir
    if configured is not None:
        return configured
    return Path.home() / ".cache" / "kernel-workbench" / "cubins"


class Compiler:
    """nvcc for one architecture and flag set, with an on-disk cache.

    ``flags`` are appended to ``-cubin -arch=ARCH -O3 -Xptxas -v --std=c++17`` (plus
    ``-lineinfo`` when ``lineinfo``, which lets profilers map SASS back to source and
    does not change the generated code).

    ``nvrtc`` (default: the ``WORKBENCH_NVRTC`` setting, ``off`` unless set) is ``off``,
    ``on``, ``all`` or a libnvrtc path: with a libnvrtc of nvcc's release
    (:func:`workbench.engine.nvrtc.find_nvrtc`) and flags it can map, an instance is first
    compiled by NVRTC in a sandboxed child — with ``on`` (or a path) only where NVRTC gives
    nvcc's code (no shared memory; see :mod:`workbench.engine.nvrtc`), with ``all`` every
    one; anything NVRTC does not compile (or compiles without the entry) is compiled again
    by nvcc, so failures read as nvcc's. The library's identity joins :attr:`version` (the
    cache key and the trials' provenance).
    """

    def __init__(self, arch: str = DEFAULT_ARCH, *, flags: Sequence[str] = (),
                 lineinfo: bool = True, cache_dir: str | Path | None = None,
                 nvcc: str | Path | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, include_dir: str | Path | None = None,
                 limits: SandboxLimits = DEFAULT_LIMITS, nvrtc: str | None = None) -> None:
        self.arch = arch
        self.flags: tuple[str, ...] = (
            "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "--std=c++17",
            *(("-lineinfo",) if lineinfo else ()), *flags)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.nvcc = Path(nvcc) if nvcc is not None else find_nvcc()
        if not self.nvcc.is_file():
            raise CompilerNotFoundError(f"nvcc not found at {self.nvcc}; {INSTALL_HINT}",
                                        nvcc=str(self.nvcc), hint=INSTALL_HINT)
        self.timeout_s = timeout_s
        self.include_dir = Path(include_dir) if include_dir is not None else None
        self.limits = limits
        self.nvrtc_setting = nvrtc if nvrtc is not None else workbench_settings().nvrtc
        self._version: str | None = None
        self._nvrtc: Nvrtc | None = None
        self._faithful: Compiler | None = None

    @property
    def version(self) -> str:
        """The ``nvcc --version`` text, and the NVRTC library's identity on a line of its own
        when NVRTC compiles (part of every cache key and of the trials' provenance)."""
        if self._version is None:
            text = nvcc_version(self.nvcc)
            self._nvrtc = find_nvrtc(self.nvcc, text, self.nvrtc_setting)
            if self._nvrtc is not None and self._nvrtc_options() is not None:
                text += f"\n{self._nvrtc.identity}"
            else:
                self._nvrtc = None
            self._version = text
        return self._version

    @property
    def backend(self) -> Nvrtc | None:
        """The NVRTC library tried first, or None (nvcc only)."""
        _ = self.version
        return self._nvrtc

    @property
    def may_differ(self) -> bool:
        """Whether this compiler may build code that is not nvcc's: NVRTC compiles every
        kernel (``all``), shared-memory ones included, whose addressing differs
        (:mod:`workbench.engine.nvrtc`)."""
        backend = self.backend
        return backend is not None and backend.every_kernel

    def faithful(self) -> Compiler:
        """The compiler whose code is nvcc's: this one when it cannot differ
        (:attr:`may_differ`), else its nvcc-only twin (same arch, flags, nvcc, limits and
        cache folder; its cache keys name nvcc alone, so both artifacts coexist). A
        confirmation compiles with it, so the stored pick is measured on the user's build."""
        if not self.may_differ:
            return self
        if self._faithful is None:
            twin = copy.copy(self)
            twin.nvrtc_setting = "off"
            twin._version = twin._nvrtc = twin._faithful = None
            self._faithful = twin
        return self._faithful

    def close(self) -> None:
        """End this compiler's NVRTC children (idle ones now, busy ones when their compile
        ends). Compiling again starts new ones; the interpreter's exit ends them too."""
        if self._nvrtc is not None:
            close_children(self._nvrtc, self.limits)

    def _nvrtc_options(self) -> list[str] | None:
        return nvrtc_options(self.flags)

    def cache_key(self, instance: KernelSource, check: SourceCheck | None = None) -> str:
        """sha256 (hex) of everything the compiled artifact depends on (the source, the
        local files it includes, entry, flags, arch and nvcc); the source as scrubbed."""
        instance = scrubbed(instance)
        check = check if check is not None else self.check(instance)
        local = {name: hashlib.sha256(path.read_bytes()).hexdigest()
                 for name, path in check.local_files}
        material = json.dumps({"format": _CACHE_FORMAT, "source": instance.source,
                               "local_files": local,
                               "entry": instance.entry, "flags": list(self.flags),
                               "arch": self.arch, "nvcc": self.version,
                               "backend": "nvrtc" if self.backend else "nvcc"},
                              sort_keys=True)
        return hashlib.sha256(material.encode()).hexdigest()

    def check(self, instance: KernelSource) -> SourceCheck:
        """What the source may read (see :func:`workbench.engine.sandbox.check_source`)."""
        return check_source(scrub(instance.source), self.include_dir)

    def entry_dir(self, key: str) -> Path:
        """The cache directory for one cache key."""
        return self.cache_dir / key[:2] / key

    def compile(self, instance: KernelSource, *, timeout_s: float | None = None) -> CompileResult:
        """Compile one instance (or answer from the cache). Failures are data, not raised."""
        started = time.perf_counter()
        instance = scrubbed(instance)
        check = self.check(instance)
        if not check.ok:
            first = check.refusals[0]
            return CompileResult(
                instance_hash=instance.hash, arch=self.arch, ok=False, cubin_path=None,
                usage=None, compile_s=time.perf_counter() - started, error_kind="refused",
                log="\n".join(str(r) for r in check.refusals), entry=instance.entry,
                error_summary=check.summary(), error_file=first.file, error_line=first.line)
        key = self.cache_key(instance, check)
        hit = self._load(key)
        if hit is not None:
            return replace(hit, instance_hash=instance.hash, cached=True,
                           compile_s=time.perf_counter() - started)

        work = self._work_dir(key)
        try:
            self._write(work / _SOURCE_FILE, instance.source)
            for name, path in check.local_files:  # the kernel folder's own headers
                self._write(work / name, path.read_bytes())
            result = self._compile_nvrtc(instance, check, key, work,
                                         timeout_s or self.timeout_s, started)
            if result is None:
                done = self._run_nvcc(work, timeout_s or self.timeout_s)
                log = scrub(done.log)
                self._write(work / _LOG_FILE, log)
                result = self._result(instance, key, done.returncode, log, work,
                                      time.perf_counter() - started)
                result = replace(result, peak_rss_bytes=done.peak_rss_bytes)
            self._write(work / _RESULT_FILE, json.dumps(self._relative(result), indent=1))
            final = self._publish(work, key, cacheable=result.ok
                                  or result.error_kind in _CACHEABLE_FAILURES)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return self._absolute(result, final)

    def compile_many(self, instances: Iterable[KernelSource], *, workers: int | None = None,
                     timeout_s: float | None = None,
                     on_result: Callable[[CompileResult], None] | None = None,
                     ) -> Iterator[CompileResult]:
        """Compile in parallel (nvcc subprocesses from a thread pool), yielding as each ends.

        Instances with the same cache key are compiled once and answered together.
        ``workers`` defaults to ``os.cpu_count()``; ``on_result`` is called with each
        result just before it is yielded.
        """
        groups: dict[str, list[KernelSource]] = {}
        for instance in instances:
            instance = scrubbed(instance)
            check = self.check(instance)
            key = self.cache_key(instance, check) if check.ok else f"refused:{instance.hash}"
            groups.setdefault(key, []).append(instance)
        if not groups:
            return
        count = max(1, min(workers or os.cpu_count() or 1, len(groups)))
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix="nvcc") as pool:
            futures: dict[Future[CompileResult], list[KernelSource]] = {
                pool.submit(self.compile, group[0], timeout_s=timeout_s): group
                for group in groups.values()}
            try:
                for future in as_completed(futures):
                    first = future.result()
                    for instance in futures[future]:
                        result = (first if instance.hash == first.instance_hash
                                  else replace(first, instance_hash=instance.hash))
                        if on_result is not None:
                            on_result(result)
                        yield result
            finally:
                for future in futures:
                    future.cancel()

    def adopt(self, result: CompileResult, cubin: bytes) -> bool:
        """Put a cubin compiled elsewhere (another host of a cluster) into this cache, under
        the key it was compiled with, so that compiling the same instance here is a hit.

        Only a key this compiler would compute itself is ever looked up, so an artifact
        built by another nvcc, flag set or arch is stored but never used. False when the
        entry was already present (nothing written)."""
        if not result.ok or not result.cache_key:
            raise CompileError(f"only a successful compile can be adopted ({result.entry}: "
                               f"{result.error_kind})", kind=result.error_kind,
                               instance_hash=result.instance_hash, arch=result.arch)
        if (self.entry_dir(result.cache_key) / _RESULT_FILE).is_file():
            return False
        work = self._work_dir(result.cache_key)
        try:
            self._write(work / _CUBIN_FILE, cubin)
            self._write(work / _LOG_FILE, scrub(result.log))
            placed = replace(result, cubin_path=str(work / _CUBIN_FILE),
                             log_path=str(work / _LOG_FILE), source_path=None,
                             log=scrub(result.log), error_summary=scrub(result.error_summary))
            self._write(work / _RESULT_FILE, json.dumps(self._relative(placed), indent=1))
            self._publish(work, result.cache_key, cacheable=True)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return True

    # --- internals ----------------------------------------------------------------

    def _work_dir(self, key: str) -> Path:
        """A fresh private directory under ``<cache>/tmp`` (no symlink on the way)."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)  # the root may sit behind links
        tmp = ensure_folder(self.cache_dir, self.cache_dir / "tmp")
        return Path(tempfile.mkdtemp(prefix=f"{key[:12]}-", dir=tmp))

    def _write(self, target: Path, data: str | bytes) -> None:
        """One file of a work directory, under the write policy (the cache is the root)."""
        write_file(self.cache_dir, target, data, make_folders=True)

    def _compile_nvrtc(self, instance: KernelSource, check: SourceCheck, key: str, work: Path,
                       timeout_s: float, started: float) -> CompileResult | None:
        """NVRTC's result when it compiled the instance with its entry (and, unless NVRTC
        is on for every kernel, its code is expected to be nvcc's), else None (the work
        directory is left as nvcc expects it)."""
        nvrtc, options = self.backend, self._nvrtc_options()
        if nvrtc is None or options is None:
            return None
        texts = [instance.source, *(path.read_text(errors="replace")
                                    for _, path in check.local_files)]
        if not nvrtc.every_kernel and not same_code_expected(texts):
            return None
        ptx = None if nvrtc.every_kernel else _PTX_FILE
        done = run_nvrtc(nvrtc, options, work, source=_SOURCE_FILE, cubin=_CUBIN_FILE,
                         limits=self.limits, timeout_s=timeout_s, ptx=ptx)
        same = ptx is None or not ptx_uses_shared_memory(
            (work / ptx).read_text(errors="replace") if (work / ptx).is_file() else ".shared")
        if ptx is not None:
            (work / ptx).unlink(missing_ok=True)
        if done.returncode == 0 and not done.timed_out and same:
            log = scrub(done.log)
            result = self._result(instance, key, 0, log, work, time.perf_counter() - started)
            if result.ok:
                self._write(work / _LOG_FILE, log)
                return replace(result, peak_rss_bytes=done.peak_rss_bytes, compiler="nvrtc")
        (work / _CUBIN_FILE).unlink(missing_ok=True)
        return None

    def _run_nvcc(self, work: Path, timeout_s: float) -> SandboxRun:
        """nvcc in ``work`` under the sandbox (see :func:`run_sandboxed`)."""
        command = [str(self.nvcc), *self.flags, "-o", _CUBIN_FILE, _SOURCE_FILE]
        done = run_sandboxed(command, work, self.limits, timeout_s)
        if done.launch_failed:
            raise CompilerNotFoundError(f"nvcc could not be started at {self.nvcc}: "
                                        f"{done.log.strip()}; {INSTALL_HINT}",
                                        nvcc=str(self.nvcc), hint=INSTALL_HINT)
        if done.timed_out:
            return replace(done, returncode=-signal.SIGKILL, log=done.log + (
                f"\n{TIMEOUT_MARKER} {timeout_s:g} s and was killed\n"))
        return done

    def _result(self, instance: KernelSource, key: str, returncode: int, log: str, work: Path,
                elapsed_s: float) -> CompileResult:
        common: dict[str, Any] = {
            "instance_hash": instance.hash, "arch": self.arch, "compile_s": elapsed_s,
            "log": log, "log_path": str(work / _LOG_FILE), "entry": instance.entry,
            "source_path": str(work / _SOURCE_FILE), "cache_key": key}
        cubin = work / _CUBIN_FILE
        if returncode == 0 and cubin.is_file():
            reports = parse_ptxas_report(log)
            report = find_entry(reports, instance.entry)
            if report is not None:
                return CompileResult(ok=True, cubin_path=str(cubin), usage=report.usage(),
                                     **common)
            known = ", ".join(sorted(r.name for r in reports.values() if r.is_entry)) or "none"
            return CompileResult(
                ok=False, cubin_path=None, usage=None, error_kind="syntax",
                error_summary=(f"entry function {instance.entry!r} is not in the compiled "
                               f"module (entry functions: {known}); is it extern \"C\" "
                               f"__global__?"), **common)
        limit = limit_hit(returncode, log, self.limits)
        if limit is not None:
            return CompileResult(ok=False, cubin_path=None, usage=None, error_kind="limit",
                                 error_summary=limit, **common)
        diagnosis = classify_failure(log)
        return CompileResult(ok=False, cubin_path=None, usage=None, error_kind=diagnosis.kind,
                             error_summary=diagnosis.summary, error_file=diagnosis.file,
                             error_line=diagnosis.line, **common)

    def _publish(self, work: Path, key: str, *, cacheable: bool) -> Path:
        """Move a finished work directory into the cache (or into failed/ when not cacheable)."""
        if not cacheable:
            failed = self.cache_dir / "failed" / work.name
            inside_root(self.cache_dir, failed)  # refused when a symlink is on the way
            ensure_folder(self.cache_dir, failed.parent)
            work.rename(failed)
            return failed
        final = self.entry_dir(key)
        inside_root(self.cache_dir, final)  # refused when a symlink is on the way
        ensure_folder(self.cache_dir, final.parent)
        try:
            work.rename(final)  # atomic; fails when a parallel compile got there first
        except OSError:
            if not (final / _RESULT_FILE).is_file():
                raise
            shutil.rmtree(work, ignore_errors=True)
        return final

    def _load(self, key: str) -> CompileResult | None:
        folder = self.entry_dir(key)
        try:
            data = json.loads((folder / _RESULT_FILE).read_text())
            log = (folder / _LOG_FILE).read_text()
        except FileNotFoundError:
            return None
        return self._absolute(replace(CompileResult.from_dict(data), log=log), folder)

    @staticmethod
    def _relative(result: CompileResult) -> dict[str, Any]:
        """result.json: file names only (the entry can move with its cache); log kept aside."""
        data = result.to_dict()
        data["log"] = ""
        for name in ("cubin_path", "log_path", "source_path"):
            if data[name] is not None:
                data[name] = Path(data[name]).name
        return data

    @staticmethod
    def _absolute(result: CompileResult, folder: Path) -> CompileResult:
        def place(path: str | None) -> str | None:
            return str(folder / Path(path).name) if path is not None else None

        return replace(result, cubin_path=place(result.cubin_path),
                       log_path=place(result.log_path), source_path=place(result.source_path))


def compile_instance(instance: KernelSource, arch: str = DEFAULT_ARCH, *,
                     timeout_s: float = DEFAULT_TIMEOUT_S, **compiler_options: Any,
                     ) -> CompileResult:
    """Compile one instance with a :class:`Compiler` built from ``compiler_options``."""
    return Compiler(arch, timeout_s=timeout_s, **compiler_options).compile(instance)


def compile_many(instances: Iterable[KernelSource], arch: str = DEFAULT_ARCH, *,
                 workers: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 on_result: Callable[[CompileResult], None] | None = None,
                 **compiler_options: Any) -> Iterator[CompileResult]:
    """Parallel compile; see :meth:`Compiler.compile_many`."""
    compiler = Compiler(arch, timeout_s=timeout_s, **compiler_options)
    return compiler.compile_many(instances, workers=workers, on_result=on_result)
