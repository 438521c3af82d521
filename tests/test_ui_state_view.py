"""The run state widget: ETA without paused time (injected clock), one message per update,
and the browser acknowledgement the pusher waits on."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("anywidget")

from workbench.ui.state_view import PanelStateView, RunClock
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


def test_show_sends_one_state_and_keeps_unchanged_fields() -> None:
    view = PanelStateView()
    sent: list[dict[str, object]] = []
    view.observe(lambda change: sent.append(change["new"]), names="state")
    view.show(header_html="<b>k</b>", status="running", done=3, budget=10)
    view.show(done=4, eta="ETA 3 s")
    assert len(sent) == 2  # one change (one comm message) per update
    assert sent[-1] == {"header_html": "<b>k</b>", "status": "running", "done": 4,
                        "budget": 10, "eta": "ETA 3 s", "seq": 2}


def test_wait_drawn_waits_for_the_browser_once_one_answered() -> None:
    view = PanelStateView()
    view.show(done=1)
    assert view.wait_drawn(0.0)  # no browser has ever answered: nothing to wait for
    view._on_message(view, {"ack": 1}, [])
    view.show(done=2)
    assert not view.wait_drawn(0.01)  # state 2 not drawn yet
    answer = threading.Timer(0.05, lambda: view._on_message(view, {"ack": 2}, []))
    answer.start()
    assert view.wait_drawn(5.0)
    answer.join()


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
