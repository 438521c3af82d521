"""Where a timing's inputs live on the device: input set 1 and copies of it at other
addresses, which timed repetitions rotate over (the GPU worker's, see
:meth:`~workbench.engine.gpu_session.GpuSession.evaluate`).

Lives in the worker process only; it touches device memory through the input set's
session (pycuda), imported by nobody else.
"""

from __future__ import annotations

from typing import Any

from workbench.engine.gpu_verify import _InputSet


class Replica:
    """Kernel arguments for one placement of input set 1: its own buffers or a copy."""

    def __init__(self, source: _InputSet, buffers: dict[str, Any], owned: list[Any]) -> None:
        self.source = source
        self.buffers = buffers  # argument name -> device pointer (allocation or int)
        self.owned = owned      # allocations this replica frees
        values: list[Any] = []
        scalars = iter(v for a, v in zip(source.args, source.values, strict=True)
                       if a["role"] == "scalar")
        for arg in source.args:
            values.append(next(scalars) if arg["role"] == "scalar"
                          else int(buffers[arg["name"]]))
        self.values = values

    @classmethod
    def of(cls, source: _InputSet) -> Replica:
        return cls(source, dict(source.buffers), owned=[])

    @classmethod
    def copy(cls, source: _InputSet) -> Replica:
        """A copy in new allocations (page aligned, like the original)."""
        cuda = source.session.cuda
        buffers: dict[str, Any] = {}
        owned = []
        for name, buf in source.buffers.items():
            nbytes = source.nbytes[name]
            new = cuda.mem_alloc(nbytes)
            owned.append(new)
            ptr = int(new)
            cuda.memcpy_dtod(ptr, buf, nbytes)
            buffers[name] = ptr
        return cls(source, buffers, owned=owned)

    def restore(self, stream: Any) -> None:
        """Copy every inout argument back from input set 1's pristine copy."""
        for name, pristine in self.source.pristine.items():
            self.source.session.cuda.memcpy_dtod_async(self.buffers[name], pristine,
                                                       self.source.nbytes[name], stream)

    def free(self) -> None:
        for allocation in self.owned:
            allocation.free()
        self.owned = []
        self.buffers = {}


#: Device memory the timing copies of one problem's inputs may take (see placements).
PLACEMENT_BYTES = 1 << 30


def placements(first: _InputSet, replicas: list[Replica], wanted: int) -> list[Replica]:
    """Input set 1 plus up to ``wanted - 1`` copies of it at other device addresses
    (``replicas``: the ones made so far, extended in place and reused while the problem
    stays loaded).

    Timed repetitions rotate over them, so a time is not the property of one physical
    placement of the buffers (on the H100 the same config's median moves by 2-5 %
    between fresh processes at a few microseconds; 8 placements took the median
    between-process spread of 30 such configs from 2.96 % to 2.53 %: it helps, it is not
    the whole story). Copies stay within PLACEMENT_BYTES in all.
    """
    per_copy = sum(first.nbytes.values())
    fit = max(1, min(wanted, 1 + PLACEMENT_BYTES // max(1, per_copy)))
    if not replicas:
        replicas.append(Replica.of(first))
    while len(replicas) < fit:
        replicas.append(Replica.copy(first))
    return replicas[:fit]
