"""The run state widget: ETA without paused time (injected clock), one message per update,
and the browser acknowledgement the pusher waits on."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

pytest.importorskip("anywidget")

from workbench.ui.state_view import RunClock, RunView, from_wire
from workbench.ui.throttle import CoalescingPusher


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_running_time_and_eta_leave_pauses_out() -> None:
    clock = FakeClock()
    run = RunClock(clock)
    assert run.eta_s(0, 10) is None and run.running_s == 0.0
    run.start()
    clock.t += 10  # 10 s running: 5 done
    run.pause()
    clock.t += 1000  # a long pause counts for nothing
    assert run.running_s == 10.0
    run.resume()
    clock.t += 10
    assert run.running_s == 20.0
    assert run.eta_s(10, 30) == 60.0  # 2 s per config
    run.pause()
    clock.t += 5
    run.stop()  # stopping while paused ends the clock at the pause
    clock.t += 50
    assert run.running_s == 20.0


def _sent(view: RunView) -> list[tuple[dict[str, Any], list[Any]]]:
    """Every comm message the widget sends from now on: (state, binary buffers)."""
    messages: list[tuple[dict[str, Any], list[Any]]] = []
    view._send = lambda msg, buffers=None: messages.append((msg["state"], list(buffers or [])))
    return messages


def test_show_sends_one_small_message_and_keeps_unchanged_fields() -> None:
    view = RunView()
    sent = _sent(view)
    view.show(status="running", done=3, budget=10)
    view.show(done=4, eta="ETA 3 s")
    assert [sorted(state) for state, _ in sent] == [["state"], ["state"]]  # no chart
    assert sent[-1][0]["state"] == {"status": "running", "done": 4, "budget": 10,
                                    "eta": "ETA 3 s", "seq": 2}


def test_push_sends_text_and_charts_as_one_message_with_binary_arrays() -> None:
    view = RunView()
    sent = _sent(view)
    x = np.array([1.0, np.nan, 3.0])
    view.push({0: {"x": x, "text": np.array(["a", "b"], dtype=object)}},
              {"yaxis": {"type": "log"}}, status="running", done=3)
    assert len(sent) == 1  # ONE message per push, however many traces it carries
    state, buffers = sent[0]
    assert sorted(state) == ["chart", "state"] and len(buffers) == 1
    chart = from_wire(view.chart)
    assert np.array_equal(chart["traces"]["0"]["x"], x, equal_nan=True)  # NaN survives
    assert chart["traces"]["0"]["text"] == ["a", "b"] and chart["seq"] == view.seq
    assert chart["layout"] == {"yaxis": {"type": "log"}}


def test_wait_drawn_waits_for_the_browser_once_one_answered() -> None:
    view = RunView()
    view.push({0: {"x": np.arange(3)}})
    assert view.wait_drawn(0.0)  # no browser has ever answered: nothing to wait for
    view._on_message(view, {"ack": 1, "draw_ms": 250.0}, [])
    assert view.draw_s == 0.25
    view.push({0: {"x": np.arange(4)}})
    view.show(status="paused")  # a text-only answer is not a chart to wait for
    assert not view.wait_drawn(0.01)  # chart 2 not drawn yet
    answer = threading.Timer(0.05, lambda: view._on_message(view, {"ack": 2}, []))
    answer.start()
    assert view.wait_drawn(5.0)
    answer.join()


def test_query_messages_reach_the_handler() -> None:
    view = RunView()
    seen: list[dict[str, Any]] = []
    view.on_query = seen.append
    view._on_message(view, {"query": {"filter": "BLOCK == 64", "limit": 50}}, [])
    view._on_message(view, "not a dict", [])
    assert seen == [{"filter": "BLOCK == 64", "limit": 50}]


def test_pusher_gate_runs_before_each_push() -> None:
    order: list[str] = []
    done = threading.Event()

    def push() -> None:
        order.append("push")
        done.set()

    pusher = CoalescingPusher(push, max_per_s=1000, gate=lambda: order.append("gate"))
    try:
        pusher.notify()
        assert done.wait(5)
    finally:
        pusher.close(flush=False)
    assert order[:2] == ["gate", "push"]
