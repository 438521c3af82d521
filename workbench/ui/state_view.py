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

:class:`RunClock` is the pure part: elapsed running time with pauses left out, from an
injected clock, and the ETA it gives.
"""

from __future__ import annotations

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


@functools.cache
def _module_source() -> str:
    """plotly.js (sets ``window.Plotly``), then the view's own module."""
    import plotly

    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    own = Path(__file__).with_name("state_view.js")
    return plotly_js.read_text(encoding="utf-8") + "\n" + own.read_text(encoding="utf-8")


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
    figure = traitlets.Dict().tag(sync=True)
    parcoords = traitlets.Dict().tag(sync=True)  # plotly JSON and "trace": its update index
    table_options = traitlets.Dict().tag(sync=True)
    query = traitlets.Dict().tag(sync=True)
    state = traitlets.Dict().tag(sync=True)
    chart = traitlets.Dict().tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        self._esm = _module_source()
        super().__init__(**kwargs)
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
        elif content.get("hello") is True and self.on_hello is not None:
            self.on_hello()

    def show(self, **fields: Any) -> None:
        """Send text fields now (one small message); fields not given keep their value."""
        with self._send_lock:
            self._seq += 1
            self.state = {**self.state, **fields, "seq": self._seq}

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
