"""The compile-ahead queue's bound and order (pure bookkeeping: futures are opaque)."""

from __future__ import annotations

import pytest

from workbench.core.errors import ClusterError
from workbench.core.records import Config
from workbench.core.template import KernelInstance
from workbench.engine.compile_ahead import CompileAhead

pytestmark = pytest.mark.timeout(30)


def _items(*keys: str) -> list[tuple[str, KernelInstance]]:
    return [(k, KernelInstance(name=k, entry=k, source=f"// {k}", config=Config(), dtype="f32",
                               hash=k)) for k in keys]


def _submit(queue: CompileAhead) -> list[str]:
    taken = queue.to_submit()
    for key, _ in taken:
        queue.hold(key, f"future-{key}")
    return [key for key, _ in taken]


def test_never_more_than_the_limit_held_and_slots_free_as_compiles_reach_a_device() -> None:
    queue = CompileAhead(3)
    queue.want(_items(*"abcdefg"), front=True)
    assert _submit(queue) == ["a", "b", "c"] and len(queue) == 3 and queue.waiting == 4
    assert _submit(queue) == []  # full: nothing more until a compile goes to a device
    with pytest.raises(ClusterError) as caught:
        queue.hold("x", "future-x")
    assert caught.value.details["expected"] == "<= 3"
    queue.release("b")
    assert _submit(queue) == ["d"]
    for key in "acd":
        queue.release(key)
    assert _submit(queue) == ["e", "f", "g"]
    assert queue.peak == 3 and queue.submitted == 7


def test_the_batch_measured_now_goes_before_the_next_one() -> None:
    queue = CompileAhead(2)
    queue.want(_items("n1", "n2", "n3"), front=False)  # the next batch, queued ahead
    queue.want(_items("c1", "c2", "n2"), front=True)   # the current one (n2 in both)
    assert _submit(queue) == ["c1", "c2"]
    queue.release("c1")
    queue.release("c2")
    assert _submit(queue) == ["n2", "n1"]
    assert queue.future("n2") == "future-n2" and queue.future("c1") is None


def test_a_batch_that_is_not_measured_is_cancelled_and_the_next_one_kept() -> None:
    queue = CompileAhead(4)
    queue.want(_items("a", "b"), front=True)
    _submit(queue)
    queue.want(_items("next1", "next2", "next3"), front=False)
    assert _submit(queue) == ["next1", "next2"]
    # the batch of a and b ended (or was stopped): their compiles go, the next batch stays
    assert sorted(queue.drop({"a", "b"})) == ["future-a", "future-b"]
    assert _submit(queue) == ["next3"]
    # the caller measures something else next: what it queued ahead is cancelled
    assert sorted(queue.keep_only({"next2"})) == ["future-next1", "future-next3"]
    assert queue.future("next2") == "future-next2" and queue.waiting == 0


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_the_limit_is_a_positive_integer(limit: object) -> None:
    with pytest.raises(ClusterError):
        CompileAhead(limit)  # type: ignore[arg-type]
