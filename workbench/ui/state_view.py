"""The panel's run view: one anywidget, one message per update, acknowledged by the browser.

Progress, ETA, best time, the charts, the trial table and the recent failures are drawn
from two synced traits of ONE widget, ``state`` (text: small) and ``chart`` (the changed
trace arrays, numbers as binary buffers), set together under ``hold_sync`` so a push is ONE
comm message however many trials it carries. The browser writes the text at once and draws
the charts on a task of their own (``state_view.js``), then acknowledges (``ack``, with the
draw time). :meth:`RunView.wait_drawn` lets the panel's pusher wait for that before sending
the next chart, and :meth:`RunView.draw_s` says how long the browser took, so a loaded
browser gets fewer frames instead of a queue of them in front of a click's answer. A state
without a chart (a click's answer) goes out at once and is never queued behind a draw.
Without a browser (no acknowledgement ever seen: nbclient, unit tests) nothing waits.

The table's controls live in the same view; their changes come back as ``query`` messages
(:attr:`RunView.on_query`). A view that comes up sends ``hello`` (:attr:`RunView.on_hello`):
the panel pushes its whole state again, since updates sent while the page was still
creating the model found no listener there and were lost.

A model that never hears the kernel: anywidget (0.11) gives a model 2 s from its creation
to import its ``_esm`` and bind it; past that its ``ready`` promise is rejected and every
later comm message to the model is dropped, silently, for the life of the page. On a loaded
2-core machine that happened to one panel in five (the charts and the table never filled).
So the module is small (plotly.js travels apart, in ``_plotly_js``, and a page evaluates it
once for all its panels), and a view that hears nothing after its hello says hello again,
naming the last message its model holds (``seen``). The same view asking again with nothing
more seen, :data:`DEAF_AFTER_S` after the kernel answered its first hello, is deaf
(:attr:`RunView.on_deaf`): the panel puts a new run view (a new model, its whole state in
the opening message) in place of the deaf one. A kernel busy with a cell reads the hellos
late, but the model heard the pushes meanwhile (``seen`` grew): not taken for deafness.

:class:`RunClock` is the pure part: elapsed running time with pauses left out, from an
injected clock, and the ETA it gives.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anywidget
import numpy as np
import traitlets


class RunClock:
    """Running time of a search with its pauses left out (``now`` injected for tests)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._started: float | None = None
        self._paused_at: float | None = None
        self._paused_s = 0.0
        self._ended_at: float | None = None

    def start(self) -> None:
        self._started, self._paused_at, self._paused_s, self._ended_at = self._now(), None, 0.0, None

    def pause(self) -> None:
        if self._started is not None and self._paused_at is None and self._ended_at is None:
            self._paused_at = self._now()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._paused_s += self._now() - self._paused_at
            self._paused_at = None

    def stop(self) -> None:
        self.resume()
        if self._started is not None and self._ended_at is None:
            self._ended_at = self._now()

    @property
    def running_s(self) -> float:
        """Seconds spent running (not paused) since :meth:`start`."""
        if self._started is None:
            return 0.0
        end = self._ended_at if self._ended_at is not None else self._now()
        paused = self._paused_s + (end - self._paused_at if self._paused_at is not None else 0.0)
        return max(end - self._started - paused, 0.0)

    def eta_s(self, done: int, left: int) -> float | None:
        """Seconds to finish ``left`` more at this run's pace over ``done``; None before one."""
        if done <= 0:
            return None
        return left * self.running_s / done




_CSS = """
.wb-run .wb-runline { display: flex; align-items: center; gap: 14px; margin: 4px 0; }
.wb-run .wb-progress { position: relative; width: 340px; height: 20px;
  background: #e8e8e8; border-radius: 3px; overflow: hidden; }
.wb-run .wb-progress-fill { position: absolute; left: 0; top: 0; bottom: 0;
  background: #2f7ed8; }
.wb-run .wb-progress-label { position: relative; padding-left: 8px; line-height: 20px;
  font-size: 12px; }
.wb-run .wb-eta, .wb-run .wb-best { font-size: 12px; }
.wb-run .wb-figure-box { width: 100%; }
.wb-run .wb-figure-empty { color: #555; margin: 6px 0; font-size: 13px; }
.wb-run .wb-trials { max-width: 100%; overflow-x: auto; }
.wb-run .wb-trials-table { border-collapse: collapse; font-size: 12px; table-layout: auto;
  max-width: 100%; }
.wb-run .wb-trials-table td, .wb-run .wb-trials-table th { padding: 1px 6px;
  text-align: left; vertical-align: top; }
.wb-run .wb-trials-table td.wb-trials-config { max-width: 260px; white-space: normal;
  overflow-wrap: anywhere; font-family: var(--jp-code-font-family, monospace); }
.wb-run .wb-trials-table td.wb-trials-reason { max-width: 320px; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }
.wb-run .wb-trials-table td.wb-trials-status, .wb-run .wb-trials-table td.wb-trials-median,
.wb-run .wb-trials-table td.wb-trials-speedup { white-space: nowrap; }
.wb-run .wb-trials-controls { display: flex; flex-wrap: wrap; gap: 10px; margin: 6px 0;
  font-size: 12px; align-items: center; }
"""


#: A view that asks again, its model holding nothing new this long (seconds) after the
#: kernel answered, is deaf: its model drops what the kernel sends (the module's docstring).
DEAF_AFTER_S = 8.0


@dataclasses.dataclass(frozen=True)
class _Asked:
    """A view's first unanswered hello: the last message its model held then (``seen``)
    and when the kernel's next message went out (``answered_at``, None before one)."""

    seen: int
    answered_at: float | None = None


@functools.cache
def _module_source() -> str:
    """The view's own module (small: it must load within anywidget's 2 s)."""
    return Path(__file__).with_name("state_view.js").read_text(encoding="utf-8")


@functools.cache
def _plotly_source() -> tuple[str, str]:
    """(plotly.js as shipped with plotly, its version): evaluated once per page."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return path.read_text(encoding="utf-8"), str(plotly.__version__)


def to_wire(value: Any) -> Any:
    """``value`` with numeric numpy arrays as ``{"dtype": "f8", "buffer": bytes}`` (sent as
    binary buffers: compact, and NaN survives), other arrays as lists, recursively."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fiub":
            return {"dtype": "f8", "buffer": memoryview(value.astype("<f8").tobytes())}
        return [to_wire(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class RunView(anywidget.AnyWidget):
    """Progress, ETA, best, charts, trial table and failures as one synced view.

    ``figure`` is the empty figure (plotly JSON), sent once; ``parcoords`` optionally a
    second one drawn apart (its ``trace`` key: the update index that goes to its trace 0);
    :meth:`push` sends the text fields and the changed traces in one message; :meth:`show`
    sends text fields alone. Text fields the browser reads: ``status``, ``done``,
    ``budget``, ``progress_label`` (instead of "done / budget"), ``eta``, ``best``,
    ``empty_html`` (shown instead of the charts when set), ``table_html``, ``failures_html``.
    """

    _css = _CSS
    _plotly_js = traitlets.Unicode().tag(sync=True)  # plotly.min.js, evaluated once per page
    _plotly_version = traitlets.Unicode().tag(sync=True)
    figure = traitlets.Dict().tag(sync=True)
    parcoords = traitlets.Dict().tag(sync=True)  # plotly JSON and "trace": its update index
    table_options = traitlets.Dict().tag(sync=True)
    query = traitlets.Dict().tag(sync=True)
    state = traitlets.Dict().tag(sync=True)
    chart = traitlets.Dict().tag(sync=True)

    def __init__(self, *, now: Callable[[], float] = time.monotonic, **kwargs: Any) -> None:
        self._esm = _module_source()
        plotly_js, plotly_version = _plotly_source()
        super().__init__(_plotly_js=plotly_js, _plotly_version=plotly_version, **kwargs)
        self._now = now
        self._asked: dict[str, _Asked] = {}  # view id -> its hello, until its model hears
        self._seq = 0
        self._chart_seq = 0
        self._acked = 0
        self._draw_s = 0.0
        self._seen_browser = False
        self._send_lock = threading.Lock()
        self._drawn = threading.Condition()
        self.on_query: Callable[[Mapping[str, Any]], None] | None = None
        # a view came up and asks for the whole state (what it may have missed)
        self.on_hello: Callable[[], None] | None = None
        # a view asked again and nothing sent for DEAF_AFTER_S reached it: a new model
        self.on_deaf: Callable[[], None] | None = None
        self.draw_times_s: list[float] = []  # every chart draw the browser reported
        self.on_msg(self._on_message)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if isinstance(content.get("ack"), int):
            draw_s = float(content.get("draw_ms") or 0.0) / 1000.0
            with self._drawn:
                self._seen_browser = True
                self._acked = max(self._acked, content["ack"])
                if draw_s > 0:
                    self._draw_s = draw_s
                    self.draw_times_s.append(draw_s)
                self._drawn.notify_all()
        elif isinstance(content.get("query"), dict) and self.on_query is not None:
            self.on_query(content["query"])
        elif content.get("hello") is True:
            seen = content.get("seen")
            self._hello(content.get("view"), seen if isinstance(seen, int) else 0)

    def _hello(self, view: Any, seen: int) -> None:
        """A view asks for the whole state (``seen``: the last message its model holds). The
        same view asking again, its model holding nothing more, :data:`DEAF_AFTER_S` after
        the kernel's answer went out, is deaf (:attr:`on_deaf`)."""
        key = view if isinstance(view, str) and 0 < len(view) <= 64 else ""
        with self._drawn:
            asked = self._asked.get(key)
            if asked is None or seen > asked.seen or not key:
                self._asked[key] = asked = _Asked(seen)  # first, or the model hears us
                deaf = False
            else:
                deaf = (asked.answered_at is not None
                        and self._now() - asked.answered_at >= DEAF_AFTER_S)
        if deaf and self.on_deaf is not None:
            self.on_deaf()
        elif self.on_hello is not None:
            self.on_hello()

    def _sent(self) -> None:
        """A message went out (under the send lock): the answer to every open hello."""
        with self._drawn:
            for key, asked in self._asked.items():
                if asked.answered_at is None:
                    self._asked[key] = dataclasses.replace(asked, answered_at=self._now())

    def show(self, **fields: Any) -> None:
        """Send text fields now (one small message); fields not given keep their value."""
        with self._send_lock:
            self._seq += 1
            self.state = {**self.state, **fields, "seq": self._seq}
            self._sent()

    def push(self, traces: Mapping[int, Mapping[str, Any]],
             layout: Mapping[str, Mapping[str, Any]] | None = None, **fields: Any) -> None:
        """Send text fields and chart updates (trace index -> properties, layout key ->
        properties) together: ONE message."""
        with self._send_lock, self.hold_sync():
            self._seq += 1
            self._chart_seq = self._seq
            self.chart = {"seq": self._seq, "traces": to_wire(traces),
                          "layout": to_wire(dict(layout or {}))}
            self.state = {**self.state, **fields, "seq": self._seq}
            self._sent()

    @property
    def seq(self) -> int:
        return self._seq

    @property
    def draw_s(self) -> float:
        """How long the browser took to draw the last chart (0 before one)."""
        return self._draw_s

    def field(self, name: str, default: Any = None) -> Any:
        """The last value sent for a text field."""
        return self.state.get(name, default)

    def wait_drawn(self, timeout_s: float) -> bool:
        """Wait until the browser drew the last chart sent (True), or ``timeout_s`` passed.

        Returns at once when no browser has ever acknowledged a state.
        """
        with self._drawn:
            if not self._seen_browser:
                return True
            return self._drawn.wait_for(lambda: self._acked >= self._chart_seq, timeout_s)


def from_wire(value: Any) -> Any:
    """The inverse of :func:`to_wire` (numeric buffers back to float64 arrays)."""
    if isinstance(value, Mapping):
        if value.get("dtype") == "f8" and isinstance(value.get("buffer"), memoryview | bytes):
            return np.frombuffer(bytes(value["buffer"]), dtype="<f8")
        return {k: from_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_wire(v) for v in value]
    return value
