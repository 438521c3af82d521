"""The NVRTC compile itself, run as a script in a sandboxed child (standard library only).

:mod:`workbench.engine.nvrtc` starts ``python -I -S nvrtc_child.py REQUEST`` through
:func:`workbench.engine.sandbox.run_sandboxed`, so the compile of a generated source runs
under the same memory, CPU-time, file-size and wall limits as nvcc, never in the caller's
process. The child imports nothing outside the standard library (its start-up is part of
every compile).

``REQUEST`` is a JSON file in the work directory::

    {"library": "/…/libnvrtc.so.13", "builtins": "/…/libnvrtc-builtins.so.13.0" or null,
     "source": "source.cu", "options": ["-arch=sm_90a", …],
     "cubin": "kernel.cubin", "ptx": "kernel.ptx" or null}

The program log (which holds ptxas's ``-v`` report) goes to stdout. Exit status: 0 compiled
(the cubin, and the PTX when asked, written), 1 NVRTC refused the source (the log says
why), 3 the library could not be loaded or an NVRTC call failed. ``--version LIBRARY
[BUILTINS]`` prints NVRTC's ``major.minor`` instead.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

COMPILED, REFUSED, BROKEN = 0, 1, 3


class _Broken(Exception):
    """The library could not be loaded, or one of its calls failed."""


def _load(library: str, builtins: str | None) -> ctypes.CDLL:
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
    lib = _load(library, builtins)
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return f"{major.value}.{minor.value}"


def compile_request(request: dict[str, object], work: Path) -> int:
    """Compile as ``request`` says, in ``work``; the status to exit with."""
    lib = _load(str(request["library"]), request.get("builtins") or None)  # type: ignore[arg-type]
    source_name = str(request["source"])
    source = (work / source_name).read_bytes()
    options = [str(o).encode() for o in request["options"]]  # type: ignore[attr-defined]
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


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["--version"]:
            print(version(argv[1], argv[2] if len(argv) > 2 else None))
            return COMPILED
        path = Path(argv[0]).resolve()
        return compile_request(json.loads(path.read_text()), path.parent)
    except _Broken as error:
        print(f"[nvrtc] {error}", flush=True)
        return BROKEN


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
