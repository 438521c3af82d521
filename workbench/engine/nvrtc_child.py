"""The NVRTC compile itself, run as a script in a sandboxed child (standard library only).

:mod:`workbench.engine.nvrtc` starts ``python -I -S nvrtc_child.py --serve LIBRARY
[BUILTINS]`` inside the sandbox's launcher (:func:`workbench.engine.sandbox.launcher_command`:
the address-space, CPU-time and file-size limits are set before this script runs), so every
compile of a generated source runs in this child, never in the caller's process. The child
loads the library once, then answers requests until its stdin closes: one JSON line in, one
JSON line out::

    {"work": "/…/tmp/ab12-x", "source": "source.cu", "options": ["-arch=sm_90a", …],
     "cubin": "kernel.cubin", "ptx": "kernel.ptx" or null, "output": "nvrtc.out",
     "cpu_s": 120}
    -> {"status": 0, "peak_rss_kib": 91234}

For a request the child moves into ``work`` (``TMPDIR`` too) and sends its stdout and stderr
to ``work/output``, which receives NVRTC's program log (with ptxas's ``-v`` report) and
anything else printed, as a one-shot child's output did. Its CPU-time limit is re-armed to
``cpu_s`` seconds past the CPU time already used (the launcher keeps the hard limit for a
Python script, so only the soft one moves): each request gets the whole limit, and the
kernel's SIGXCPU ends the child when one request spends it. Nothing else carries from one
request to the next: each names its own work directory, options and files, and every NVRTC
program is destroyed before the answer is written.

``status``: 0 compiled (the cubin, and the PTX when asked, written), 1 NVRTC refused the
source (the log says why), 3 an NVRTC call failed. Anything unexpected (an exception, a
signal) ends the child with no answer: the traceback goes to the request's output, and the
parent restarts a child for the next request. A library that cannot be loaded is printed
to stdout (not yet a JSON line) and the child exits with status 3.

``nvrtc_child.py REQUEST`` compiles one request file (the same keys, less ``work``, which is
the file's folder) and exits with its status: the former one-shot path, kept for
benchmarks/compile/nvrtc_child_latency.py. ``--version LIBRARY [BUILTINS]`` prints NVRTC's
``major.minor``.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import resource
import sys
import traceback
from pathlib import Path
from typing import Any

COMPILED, REFUSED, BROKEN = 0, 1, 3
CRASHED = 4  # an unexpected exception: the child exits without an answer
_TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")


class _Broken(Exception):
    """The library could not be loaded, or one of its calls failed."""


def load_library(library: str, builtins: str | None) -> ctypes.CDLL:
    try:
        if builtins:  # libnvrtc opens it by name; loaded first, it is found in any folder
            ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
        return ctypes.CDLL(library)
    except OSError as error:
        raise _Broken(f"loading {library}: {error}") from None


def _check(lib: ctypes.CDLL, status: int, call: str) -> None:
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise _Broken(f"{call} failed: {lib.nvrtcGetErrorString(status).decode()}")


def _bytes(lib: ctypes.CDLL, program: ctypes.c_void_p, what: str) -> bytes:
    """``nvrtcGet<what>Size`` then ``nvrtcGet<what>``."""
    size = ctypes.c_size_t()
    _check(lib, getattr(lib, f"nvrtcGet{what}Size")(program, ctypes.byref(size)),
           f"nvrtcGet{what}Size")
    buffer = ctypes.create_string_buffer(size.value)
    _check(lib, getattr(lib, f"nvrtcGet{what}")(program, buffer), f"nvrtcGet{what}")
    return buffer.raw[:size.value]


def version(library: str, builtins: str | None) -> str:
    """NVRTC's ``major.minor``."""
    lib = load_library(library, builtins)
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return f"{major.value}.{minor.value}"


def compile_request(lib: ctypes.CDLL, request: dict[str, Any], work: Path) -> int:
    """Compile as ``request`` says, in ``work``, printing the program log; the status."""
    source_name = str(request["source"])
    source = (work / source_name).read_bytes()
    options = [str(o).encode() for o in request["options"]]
    program = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(program), source, source_name.encode(),
                                       0, None, None), "nvrtcCreateProgram")
    try:
        status = lib.nvrtcCompileProgram(program, len(options),
                                         (ctypes.c_char_p * len(options))(*options))
        log = _bytes(lib, program, "ProgramLog").rstrip(b"\0")
        sys.stdout.write(log.decode("utf-8", "replace"))
        sys.stdout.flush()
        if status != 0:
            return REFUSED
        (work / str(request["cubin"])).write_bytes(_bytes(lib, program, "CUBIN"))
        if request.get("ptx"):
            ptx = _bytes(lib, program, "PTX").rstrip(b"\0")
            (work / str(request["ptx"])).write_bytes(ptx)
        return COMPILED
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def _arm_cpu_limit(cpu_s: int) -> None:
    """Let this request use ``cpu_s`` seconds of CPU beyond what the child has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime) + cpu_s
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _point_output(fd: int) -> None:
    """stdout and stderr (the file descriptors, as NVRTC writes to them too) to ``fd``."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)


def _answer(lib: ctypes.CDLL, request: dict[str, Any], quiet: int) -> int:
    """One request, its output in its work directory; the status (or the child exits)."""
    work = Path(str(request["work"]))
    output = os.open(work / str(request["output"]),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    _point_output(output)
    os.close(output)
    try:
        os.chdir(work)
        for name in _TEMP_VARIABLES:
            os.environ[name] = str(work)
        _arm_cpu_limit(int(request["cpu_s"]))
        try:
            return compile_request(lib, request, work)
        except _Broken as error:
            print(f"[nvrtc] {error}", flush=True)
            return BROKEN
    except BaseException:  # the child's state is unknown: report it here, and end
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(CRASHED)
    finally:
        _point_output(quiet)
        os.chdir("/")


def serve(library: str, builtins: str | None) -> int:
    """Load the library, then answer requests from stdin until it closes."""
    answers = os.fdopen(os.dup(1), "w")
    try:
        lib = load_library(library, builtins)
    except _Broken as error:
        print(f"[nvrtc] {error}", flush=True)
        return BROKEN
    quiet = os.open(os.devnull, os.O_WRONLY)
    _point_output(quiet)
    for line in sys.stdin:
        status = _answer(lib, json.loads(line), quiet)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        answers.write(json.dumps({"status": status, "peak_rss_kib": peak}) + "\n")
        answers.flush()
    return COMPILED


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["--version"]:
            print(version(argv[1], argv[2] if len(argv) > 2 else None))
            return COMPILED
        if argv[:1] == ["--serve"]:
            return serve(argv[1], argv[2] if len(argv) > 2 else None)
        path = Path(argv[0]).resolve()
        request = json.loads(path.read_text())
        lib = load_library(str(request["library"]), request.get("builtins") or None)
        return compile_request(lib, request, path.parent)
    except _Broken as error:
        print(f"[nvrtc] {error}", flush=True)
        return BROKEN


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
