"""Programmatic dependent launch (PDL) through the driver API (ctypes on libcuda).

A kernel launched with the attribute ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``
may be scheduled while the kernel before it on the stream is still finishing; it must then
execute ``griddepcontrol.wait`` before touching memory that kernel writes, and may signal
its own dependents early with ``griddepcontrol.launch_dependents`` (sm_90+). Back to back
(in a CUDA graph, or a model's stream) this hides the launch latency of the next kernel,
which FlashInfer's kernels use. pycuda cannot launch with attributes, so a template whose
``[template] pdl`` expression is true for a config is loaded and launched here
(``cuModuleLoad``, ``cuLaunchKernelEx``), with the arguments packed exactly as pycuda packs
them for its own launches. Runs only in the GPU worker, with the worker's context current.
"""

from __future__ import annotations

import ctypes
from typing import Any

from workbench.engine.cuda_graph import GraphError, _check, _driver

#: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (cuda.h)
_PROGRAMMATIC_STREAM_SERIALIZATION = 6
#: cuLaunchKernel's ``extra`` keys: CU_LAUNCH_PARAM_BUFFER_POINTER, _BUFFER_SIZE, _END
_BUFFER_POINTER, _BUFFER_SIZE, _END = 1, 2, 0


class _AttributeValue(ctypes.Union):
    _fields_ = [("programmatic_stream_serialization_allowed", ctypes.c_int),
                ("pad", ctypes.c_char * 64)]


class _Attribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _AttributeValue)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint),
                ("block_z", ctypes.c_uint), ("shared_mem_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attribute)),
                ("num_attrs", ctypes.c_uint)]


class PdlFunction:
    """One kernel of a cubin, launched with programmatic stream serialization allowed.

    ``prepared_async_call`` has pycuda's signature (grid, block, stream, *args,
    shared_size=...) so the worker can use it where it uses a pycuda Function."""

    def __init__(self, cubin_path: str, entry: str, arg_format: str) -> None:
        lib = _driver()
        self._module = ctypes.c_void_p()
        _check(lib.cuModuleLoad(ctypes.byref(self._module), cubin_path.encode()), "cuModuleLoad")
        self._function = ctypes.c_void_p()
        _check(lib.cuModuleGetFunction(ctypes.byref(self._function), self._module,
                                       entry.encode()), "cuModuleGetFunction")
        self.arg_format = arg_format

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        """cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) for launches above 48 KiB."""
        _check(_driver().cuFuncSetAttribute(self._function, 8, ctypes.c_int(nbytes)),
               "cuFuncSetAttribute")

    def prepared_async_call(self, grid: tuple[int, ...], block: tuple[int, ...], stream: Any,
                            *args: Any, shared_size: int = 0) -> None:
        from pycuda._pvt_struct import pack  # the worker's pycuda: its own argument layout

        buf = pack(self.arg_format, *args)
        data = ctypes.create_string_buffer(buf, len(buf))
        size = ctypes.c_size_t(len(buf))
        extra = (ctypes.c_void_p * 5)(_BUFFER_POINTER, ctypes.addressof(data), _BUFFER_SIZE,
                                      ctypes.addressof(size), _END)
        launch_pdl(self._function.value or 0, grid, block, int(shared_size),
                   int(stream.handle) if stream is not None else 0, extra=extra)

    def close(self) -> None:
        if self._module:
            _driver().cuModuleUnload(self._module)
            self._module = ctypes.c_void_p()


def launch_pdl(function: int, grid: tuple[int, ...], block: tuple[int, ...], smem_bytes: int,
               stream: int, *, params: Any = None, extra: Any = None) -> None:
    """``cuLaunchKernelEx`` of the CUfunction ``function`` on the CUstream ``stream`` with
    programmatic stream serialization allowed; the arguments as ``params`` (an array of
    pointers to each value) or ``extra`` (a packed buffer), as for ``cuLaunchKernel``."""
    attr = _Attribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
    attr.value.programmatic_stream_serialization_allowed = 1
    g = (*tuple(grid), 1, 1)[:3]
    b = (*tuple(block), 1, 1)[:3]
    config = _LaunchConfig(g[0], g[1], g[2], b[0], b[1], b[2], smem_bytes,
                           ctypes.c_void_p(stream), ctypes.pointer(attr), 1)
    _check(_driver().cuLaunchKernelEx(ctypes.byref(config), ctypes.c_void_p(function), params,
                                      extra), "cuLaunchKernelEx")


__all__ = ["GraphError", "PdlFunction", "launch_pdl"]
