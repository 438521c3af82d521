"""The bounded compile-ahead queue of a multi-GPU runner.

Compiles run on CPU cores, measurements on the GPUs; a runner keeps the GPUs fed by
compiling what comes next while the devices measure what is compiled. Unbounded, a large
batch (or a caller queueing the next one) would put every compile of a sweep on the
scheduler at once, with their cubins held in memory until measured; bounded too tightly,
the devices wait for nvcc. The queue holds at most ``limit`` compiles *submitted and not
yet handed to a device* (a runner sizes it to two batches: the one measured now, whose
compiles stay held until dispatched, and the next); more are *wanted*, in order,
and submitted as slots free. The current batch's compiles go to the front, the next
batch's (:meth:`~workbench.engine.dask_runner.DaskRunner.compile_ahead`) behind them.

Bookkeeping only: a compile's future is opaque here (a Dask future in the runner), keyed
by the instance hash it compiles, so this module runs and is tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.core.errors import ClusterError
from workbench.core.template import KernelInstance


class CompileAhead:
    """At most ``limit`` compiles held (submitted, not yet handed to a device) and an
    ordered list of the compiles wanted next. ``peak`` is the most ever held at once,
    ``submitted`` how many were held in all (each compile submitted once)."""

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ClusterError(f"the compile-ahead limit must be an integer >= 1, got "
                               f"{limit!r}", key="compile_limit", value=limit,
                               expected=">= 1")
        self.limit = limit
        self.peak = 0
        self.submitted = 0
        self._held: dict[str, Any] = {}
        self._wanted: dict[str, KernelInstance] = {}

    def __len__(self) -> int:
        """How many compiles are held now."""
        return len(self._held)

    @property
    def room(self) -> int:
        return self.limit - len(self._held)

    @property
    def waiting(self) -> int:
        """How many compiles are wanted and not submitted yet."""
        return len(self._wanted)

    def want(self, items: Sequence[tuple[str, KernelInstance]], *, front: bool) -> None:
        """Ask for these compiles (by instance hash): ahead of every other wanted one when
        ``front`` (the batch being measured: one wanted already moves up), else behind
        them (the next batch: one wanted already keeps its place). A held one stays."""
        items = [(key, instance) for key, instance in items if key not in self._held]
        if front:
            first = dict(items)
            self._wanted = {**first, **{k: v for k, v in self._wanted.items()
                                        if k not in first}}
        else:
            self._wanted = {**self._wanted, **{k: v for k, v in items
                                               if k not in self._wanted}}

    def to_submit(self) -> list[tuple[str, KernelInstance]]:
        """The wanted compiles there is room for now, in order (taken off the list: the
        caller submits them and :meth:`hold` s each future)."""
        keys = list(self._wanted)[:max(0, self.room)]
        return [(key, self._wanted.pop(key)) for key in keys]

    def hold(self, key: str, future: Any) -> None:
        """A submitted compile, held until :meth:`release`."""
        if key not in self._held and self.room <= 0:
            raise ClusterError(f"the compile-ahead queue is full ({self.limit} held)",
                               key="compile_limit", value=len(self._held) + 1,
                               expected=f"<= {self.limit}")
        if key not in self._held:
            self.submitted += 1
        self._held[key] = future
        self.peak = max(self.peak, len(self._held))

    def future(self, key: str) -> Any | None:
        """The held compile of ``key`` (None: not submitted, or released)."""
        return self._held.get(key)

    def release(self, key: str) -> None:
        """``key``'s compile went to a device: its slot frees."""
        self._held.pop(key, None)

    def keep_only(self, keys: set[str]) -> list[Any]:
        """Forget what is neither held nor wanted for ``keys`` (compiles queued for a batch
        that is not the one measured now); returns the held futures to cancel."""
        self._wanted = {k: v for k, v in self._wanted.items() if k in keys}
        return self._drop(lambda key: key not in keys)

    def drop(self, keys: set[str]) -> list[Any]:
        """Forget ``keys`` (a batch that ended or was stopped); returns the held futures to
        cancel. What was wanted for other keys (the next batch) stays."""
        self._wanted = {k: v for k, v in self._wanted.items() if k not in keys}
        return self._drop(lambda key: key in keys)

    def _drop(self, doomed: Any) -> list[Any]:
        gone = [key for key in self._held if doomed(key)]
        return [self._held.pop(key) for key in gone]
