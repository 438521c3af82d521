"""The panel's run state on screen: one anywidget, one message per update, acknowledged.

Header (kernel, runner, template version, shape, dtype, status), progress bar, ETA and best
time are one ``state`` dict on one widget, so an update is one comm message rather than one
per widget. The browser acknowledges each state it has drawn (``ack`` message); the panel's
pusher waits for that acknowledgement before the next push (:meth:`PanelStateView.wait_drawn`),
so a slow or loaded browser slows the pushes down instead of queueing seconds of stale
frames behind a click's answer. Without a browser (no acknowledgement ever seen: nbclient,
unit tests) nothing waits.

:class:`RunClock` is the pure part: elapsed running time with pauses left out, from an
injected clock, and the ETA it gives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

_ESM = """
function render({ model, el }) {
  el.classList.add("wb-state");
  el.innerHTML = `<div class="wb-header"></div>
    <div class="wb-runline">
      <div class="wb-progress" role="progressbar"><div class="wb-progress-fill"></div>
        <span class="wb-progress-label"></span></div>
      <span class="wb-eta"></span><span class="wb-best"></span>
    </div>`;
  const q = (c) => el.querySelector(c);
  const draw = () => {
    const s = model.get("state") || {};
    q(".wb-header").innerHTML = s.header_html || "";
    const budget = Math.max(s.budget || 0, s.done || 0, 1);
    q(".wb-progress-fill").style.width = `${Math.min(100, 100 * (s.done || 0) / budget)}%`;
    q(".wb-progress-label").textContent = `${s.done || 0} / ${s.budget || 0}`;
    q(".wb-eta").textContent = s.eta || "";
    q(".wb-best").textContent = s.best || "";
    el.dataset.status = s.status || "";
    el.dataset.seq = String(s.seq || 0);
    model.send({ ack: s.seq || 0 });
  };
  model.on("change:state", draw);
  draw();
}
export default { render };
"""

_CSS = """
.wb-state .wb-runline { display: flex; align-items: center; gap: 14px; margin: 4px 0; }
.wb-state .wb-progress { position: relative; width: 340px; height: 20px;
  background: #e8e8e8; border-radius: 3px; overflow: hidden; }
.wb-state .wb-progress-fill { position: absolute; left: 0; top: 0; bottom: 0;
  background: #2f7ed8; }
.wb-state .wb-progress-label { position: relative; padding-left: 8px; line-height: 20px;
  font-size: 12px; }
.wb-state .wb-eta, .wb-state .wb-best { font-size: 12px; }
"""


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


class PanelStateView(anywidget.AnyWidget):
    """Header, status, progress, ETA and best time as one synced ``state`` dict."""

    _esm = _ESM
    _css = _CSS
    state = traitlets.Dict().tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._seq = 0
        self._acked = 0
        self._seen_browser = False
        self._drawn = threading.Condition()
        self.on_msg(self._on_message)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and isinstance(content.get("ack"), int):
            with self._drawn:
                self._seen_browser = True
                self._acked = max(self._acked, content["ack"])
                self._drawn.notify_all()

    def show(self, **fields: Any) -> None:
        """Send a new state (one message); fields not given keep their last value."""
        self._seq += 1
        self.state = {**self.state, **fields, "seq": self._seq}

    @property
    def seq(self) -> int:
        return self._seq

    def wait_drawn(self, timeout_s: float) -> bool:
        """Wait until the browser drew the last state sent (True), or ``timeout_s`` passed.

        Returns at once when no browser has ever acknowledged a state.
        """
        with self._drawn:
            if not self._seen_browser:
                return True
            return self._drawn.wait_for(lambda: self._acked >= self._seq, timeout_s)
