"""CUDA graphs through the driver API (ctypes on libcuda): capture a stream's launches once,
launch the captured sequence as one graph.

The GPU worker's pycuda build has no graph bindings, so the few driver calls the "graph"
cache condition needs (:mod:`workbench.core.conditions`) are bound here: stream capture
(thread-local mode, so the worker's other threads are unaffected), instantiation, launch
and destruction. Runs only in the GPU worker, with the worker's context current.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from workbench.core.errors import WorkerError

#: CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: only this thread's unsafe calls end the capture.
_CAPTURE_THREAD_LOCAL = 1


class GraphError(WorkerError):
    """A driver call of the graph path failed: ``call`` and the CUresult ``code``."""


_lib: Any = None


def _driver() -> Any:
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libcuda.so.1")
    return _lib


def _check(code: int, call: str) -> None:
    if code != 0:
        raise GraphError(f"{call} failed with CUresult {code}", call=call, code=code)


class CapturedGraph:
    """``count`` calls of ``launch`` captured on ``stream`` (a pycuda Stream), instantiated.

    ``launch()`` enqueues the whole graph on the same stream; :meth:`close` frees it."""

    def __init__(self, stream: Any, launch: Callable[[], object], count: int) -> None:
        lib = _driver()
        self._stream = ctypes.c_void_p(int(stream.handle))
        self._graph = ctypes.c_void_p()
        self._exec = ctypes.c_void_p()
        self.count = count
        _check(lib.cuStreamBeginCapture_v2(self._stream, _CAPTURE_THREAD_LOCAL),
               "cuStreamBeginCapture_v2")
        try:
            for _ in range(count):
                launch()
        finally:
            _check(lib.cuStreamEndCapture(self._stream, ctypes.byref(self._graph)),
                   "cuStreamEndCapture")
        _check(lib.cuGraphInstantiateWithFlags(ctypes.byref(self._exec), self._graph,
                                               ctypes.c_ulonglong(0)),
               "cuGraphInstantiateWithFlags")

    def launch(self) -> None:
        _check(_driver().cuGraphLaunch(self._exec, self._stream), "cuGraphLaunch")

    def close(self) -> None:
        lib = _driver()
        if self._exec:
            lib.cuGraphExecDestroy(self._exec)
            self._exec = ctypes.c_void_p()
        if self._graph:
            lib.cuGraphDestroy(self._graph)
            self._graph = ctypes.c_void_p()

    def __enter__(self) -> CapturedGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
