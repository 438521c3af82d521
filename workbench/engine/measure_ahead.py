"""The Dask runner's measure-ahead state: the next batch and its measure tasks sent early.

:meth:`DaskRunner.compile_ahead <workbench.engine.dask_runner.DaskRunner.compile_ahead>`
names the next batch (:meth:`MeasureAhead.queue_next`); once every candidate of the batch
measured now is dispatched, the measure slots its last ones free take the next batch's
candidates whose compiles are done (:meth:`MeasureAhead.dispatch`), so the devices keep
measuring while the caller stores this batch and hands the next one over. The next
``measure`` call takes those tasks as they are (:meth:`MeasureAhead.take`); a batch that does
not come (an edit, a stop, a suspect that must run alone) cancels them.

Holds Dask futures but calls Dask only through the ``cancel`` it is given (the client's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.engine.compile_ahead import CompileAhead


@dataclass(frozen=True)
class NextBatch:
    """The candidates ``compile_ahead`` queued (with their instance hashes) and the token
    that names their measure tasks when dispatched ahead."""

    token: int
    candidates: tuple[tuple[Any, str], ...]  # (Candidate, instance hash)


#: submit(candidate, compile future, task key, priority) -> the measure task's future
Submit = Callable[[Any, Any, str, int], Any]


class MeasureAhead:
    """The next batch and the measure tasks of it dispatched before its ``measure`` call."""

    def __init__(self, cancel: Callable[[list[Any]], Any]) -> None:
        self._cancel = cancel
        self.next = NextBatch(0, ())
        self.early: dict[Any, Any] = {}  # candidate -> its measure task's future

    def fresh(self) -> MeasureAhead:
        """An empty state with the same cancel (a pinned view measures in order)."""
        return MeasureAhead(self._cancel)

    @property
    def futures(self) -> tuple[Any, ...]:
        """The measure tasks dispatched ahead and not yet taken."""
        return tuple(self.early.values())

    def running(self) -> int:
        """How many of them have not finished."""
        return sum(1 for future in self.early.values() if not future.done())

    def take(self, candidates: Sequence[Any]) -> dict[int, Any]:
        """The tasks dispatched ahead for these candidates, by index, handed to the batch
        (they are no longer this state's)."""
        return {index: self.early.pop(candidate) for index, candidate in enumerate(candidates)
                if candidate in self.early}

    def cancel(self) -> None:
        """Cancel every task dispatched ahead (the next batch stays named)."""
        if self.early:
            self._cancel(list(self.early.values()))
            self.early = {}

    def forget(self) -> None:
        """A batch came that is not the one queued: cancel its tasks and forget it."""
        self.cancel()
        self.next = NextBatch(0, ())

    def queue_next(self, token: int, candidates: Sequence[tuple[Any, str]]) -> None:
        """The next batch is exactly these (candidate, instance hash) pairs: tasks sent
        ahead for other candidates are cancelled."""
        self.next = NextBatch(token, tuple(candidates))
        wanted = dict(self.next.candidates)
        for candidate in [c for c in self.early if c not in wanted]:
            self._cancel([self.early.pop(candidate)])

    def dispatch(self, room: int, compiles: CompileAhead, submit: Submit,
                 priority_base: int) -> int:
        """Dispatch up to ``room`` measure tasks of the next batch whose compiles are done
        (each compile's queue slot frees as it goes to a device); how many were sent."""
        sent = 0
        batch = self.next
        for position, (candidate, key) in enumerate(batch.candidates):
            if sent >= room:
                break
            future = compiles.future(key)
            if candidate in self.early or future is None or not future.done():
                continue
            compiles.release(key)
            self.early[candidate] = submit(candidate, future,
                                           f"wb-measure-{batch.token}-{position}",
                                           priority_base + position)
            sent += 1
        return sent
