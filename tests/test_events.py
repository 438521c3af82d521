"""EventBus: delivery order, unsubscribe, isolation of raising subscribers, threads."""

from __future__ import annotations

import logging
import threading

import pytest

from workbench.core.events import (
    EventBus,
    IterationFinished,
    PhaseChanged,
    SearchFinished,
)


def test_publish_order_and_unsubscribe() -> None:
    bus = EventBus()
    seen: list[tuple[str, object]] = []
    stop_a = bus.subscribe(lambda e: seen.append(("a", e)))
    bus.subscribe(lambda e: seen.append(("b", e)))
    first = PhaseChanged("searching", "x")
    bus.publish(first)
    stop_a()
    stop_a()  # idempotent
    second = SearchFinished("budget", 3)
    bus.publish(second)
    assert seen == [("a", first), ("b", first), ("b", second)]
    assert bus.subscriber_count == 1


def test_raising_subscriber_is_logged_and_isolated(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    got: list[object] = []

    def broken(event: object) -> None:
        raise RuntimeError("subscriber bug")

    bus.subscribe(broken)
    bus.subscribe(got.append)
    with caplog.at_level(logging.ERROR, logger="workbench.core.events"):
        bus.publish(IterationFinished(1, 10.0, 1.2))
    assert got == [IterationFinished(1, 10.0, 1.2)]
    assert "subscriber bug" in caplog.text


def test_events_are_frozen() -> None:
    event = PhaseChanged("a")
    with pytest.raises(AttributeError):
        event.phase = "b"  # type: ignore[misc]


@pytest.mark.timeout(20)
def test_concurrent_publish_and_subscribe() -> None:
    bus = EventBus()
    counts = [0]
    lock = threading.Lock()

    def count(_: object) -> None:
        with lock:
            counts[0] += 1

    bus.subscribe(count)

    def publisher() -> None:
        for i in range(500):
            bus.publish(PhaseChanged(str(i)))

    def churner() -> None:
        for _ in range(500):
            bus.subscribe(lambda e: None)()

    threads = [threading.Thread(target=publisher) for _ in range(4)]
    threads.append(threading.Thread(target=churner))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts[0] == 2000
    assert bus.subscriber_count == 1
