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
sandbox's launcher: one interpreter start) under the same limits as nvcc. The child loads
the library for each compile: on the loaded 2-core development machine a silu_and_mul
compile took a median 0.35 s in-process and 0.66 s through the child. Differences from nvcc's code, measured with NVRTC 13.0.88 against nvcc
13.0.88: see ``tests/test_nvrtc_same_code.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import CompilerNotFoundError
from workbench.engine.sandbox import RUN_PYTHON, SandboxLimits, SandboxRun, run_sandboxed

CHILD = Path(__file__).with_name("nvrtc_child.py")
REQUEST_FILE = "nvrtc.json"
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


# --- one compile ---------------------------------------------------------------------


def run_nvrtc(nvrtc: Nvrtc, options: Sequence[str], work: Path, *, source: str, cubin: str,
              limits: SandboxLimits, timeout_s: float, ptx: str | None = None,
              write: Callable[[Path, str], None] | None = None) -> SandboxRun:
    """Compile ``work/source`` to ``work/cubin`` in a sandboxed child (the log is NVRTC's
    program log; see :mod:`workbench.engine.nvrtc_child` for the exit statuses). ``write``
    writes the request file (the Compiler's write policy; default: a plain write)."""
    includes = [f"-I{work}", *(f"-I{d}" for d in nvrtc.include_dirs)]
    request = {"library": str(nvrtc.library),
               "builtins": str(nvrtc.builtins) if nvrtc.builtins else None,
               "source": source, "options": [*options, *includes], "cubin": cubin,
               "ptx": ptx}
    if write is None:
        (work / REQUEST_FILE).write_text(json.dumps(request))
    else:
        write(work / REQUEST_FILE, json.dumps(request))
    try:
        return run_sandboxed([RUN_PYTHON, str(CHILD), REQUEST_FILE], work, limits, timeout_s)
    finally:
        (work / REQUEST_FILE).unlink(missing_ok=True)
