"""The Dask runner's measure-ahead bookkeeping (workbench.engine.measure_ahead), without a
cluster: futures are small objects with ``done()``, cancel records what it was handed.
The behaviour on a real LocalCluster is tests/test_dask_measure_ahead.py's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.engine.compile_ahead import CompileAhead
from workbench.engine.measure_ahead import MeasureAhead


@dataclass(eq=False)
class Future:
    name: str
    finished: bool = False

    def done(self) -> bool:
        return self.finished


@dataclass
class Recorder:
    cancelled: list[Any] = field(default_factory=list)
    submitted: list[tuple[Any, Any, str, int]] = field(default_factory=list)

    def cancel(self, futures: list[Any]) -> None:
        self.cancelled += futures

    def submit(self, candidate: Any, compiled: Any, key: str, priority: int) -> Future:
        self.submitted.append((candidate, compiled, key, priority))
        return Future(f"measure-{candidate}")


def _queue(*done: str, pending: tuple[str, ...] = ()) -> CompileAhead:
    compiles = CompileAhead(8)
    for key in (*done, *pending):
        compiles.hold(key, Future(f"compile-{key}", finished=key in done))
    return compiles


def test_only_finished_compiles_of_the_next_batch_are_sent_and_within_room() -> None:
    rec = Recorder()
    ahead = MeasureAhead(rec.cancel)
    ahead.queue_next(7, [("a", "ha"), ("b", "hb"), ("c", "hc"), ("d", "hd")])
    compiles = _queue("ha", "hc", "hd", pending=("hb",))
    assert ahead.dispatch(2, compiles, rec.submit, 100) == 2
    assert [(c, key, p) for c, _, key, p in rec.submitted] == [
        ("a", "wb-measure-7-0", 100), ("c", "wb-measure-7-2", 102)]
    assert compiles.future("ha") is None and compiles.future("hb") is not None  # released
    assert ahead.dispatch(5, compiles, rec.submit, 100) == 1  # d; a and c are not sent twice
    assert list(ahead.early) == ["a", "c", "d"] and ahead.running() == 3


def test_the_batch_takes_its_tasks_and_a_new_next_batch_cancels_the_others() -> None:
    rec = Recorder()
    ahead = MeasureAhead(rec.cancel)
    ahead.queue_next(1, [("a", "ha"), ("b", "hb")])
    ahead.dispatch(4, _queue("ha", "hb"), rec.submit, 0)
    a, b = ahead.early["a"], ahead.early["b"]
    assert ahead.take(["x", "b"]) == {1: b} and list(ahead.early) == ["a"]
    ahead.queue_next(2, [("c", "hc")])  # "a" is not in the next batch any more
    assert rec.cancelled == [a] and ahead.early == {} and ahead.next.token == 2


def test_forget_cancels_and_clears_the_next_batch_and_fresh_is_empty() -> None:
    rec = Recorder()
    ahead = MeasureAhead(rec.cancel)
    ahead.queue_next(3, [("a", "ha")])
    ahead.dispatch(1, _queue("ha"), rec.submit, 0)
    view = ahead.fresh()
    assert view.early == {} and view.next.candidates == () and len(ahead.futures) == 1
    ahead.forget()
    assert len(rec.cancelled) == 1 and ahead.futures == () and ahead.next.candidates == ()
    assert ahead.dispatch(1, _queue("ha"), rec.submit, 0) == 0  # nothing named next
