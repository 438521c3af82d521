"""Static charts for report notebooks: one PNG per (shape, dtype), drawn with matplotlib.

An interactive plotly figure in a notebook costs its ~4.6 MB script; a PNG of the same
charts costs ~100 KB and reads the same in any viewer (GitHub, nbviewer, an untrusted
notebook). Runtime axes go on a log scale when the runtimes spread over more than 10x
(:func:`workbench.ui.figures.runtime_scale`), labelled with plain numbers (``2``, ``5``,
``10``, ``20`` µs), never powers of ten in exponent form; powers-of-two parameters sit on a
log2 axis labelled with their values.
"""

from __future__ import annotations

import hashlib
import io
import math
import threading
from collections.abc import Sequence

import numpy as np

from workbench.ui.figures import MAX_POINTS, AxisSpec, ChartData, runtime_scale, thin

COLUMNS = 3
DPI = 80

#: PNGs drawn in this process, by a digest of everything they show: a report or export of
#: unchanged results (again, or from several threads at once) reuses the image instead of
#: drawing it again (about a second of matplotlib each). Bounded; one lock per digest.
_DRAWN: dict[str, bytes] = {}
_DRAWN_MAX = 32
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _plain(value: float, _pos: int = 0) -> str:
    return f"{value:g}"


def _runtime_axis(ax: object, scale: str) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if scale == "log":
        ax.set_yscale("log")  # type: ignore[attr-defined]
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # type: ignore[attr-defined]
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))  # type: ignore[attr-defined]
        ax.yaxis.set_minor_formatter(NullFormatter())  # type: ignore[attr-defined]


def _digest(data: ChartData, axes: Sequence[AxisSpec], title: str) -> str:
    h = hashlib.sha256()
    h.update(repr((data.param_names, sorted((k, tuple(v)) for k, v in data.values.items()),
                   data.statuses, data.reasons, data.baseline_us, tuple(axes), title,
                   COLUMNS, DPI)).encode())
    h.update(np.ascontiguousarray(data.median_us, dtype=np.float64).tobytes())
    return h.hexdigest()


def runtime_charts_png(data: ChartData, axes: Sequence[AxisSpec], *, title: str = "") -> bytes:
    """Runtime per parameter (one panel each) and best-so-far vs evaluations, as PNG bytes
    (drawn once per process for the same data: see ``_DRAWN``)."""
    key = _digest(data, axes, title)
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        png = _DRAWN.get(key)
        if png is None:
            png = _draw(data, axes, title)
            with _LOCKS_GUARD:
                if len(_DRAWN) >= _DRAWN_MAX:
                    gone = next(iter(_DRAWN))
                    _DRAWN.pop(gone)
                    _LOCKS.pop(gone, None)
                _DRAWN[key] = png
    return png


def _draw(data: ChartData, axes: Sequence[AxisSpec], title: str) -> bytes:
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter

    cols = max(1, min(COLUMNS, len(axes)))
    param_rows = math.ceil(len(axes) / cols) if axes else 0
    fig = Figure(figsize=(4.2 * cols, 2.6 * (param_rows + 1) + 0.6), dpi=DPI,
                 layout="constrained")
    grid = fig.add_gridspec(param_rows + 1, cols)
    scale = runtime_scale(data.median_us)
    ok_all = np.flatnonzero(~np.isnan(data.median_us))
    ok = thin(ok_all, data.median_us[ok_all], MAX_POINTS)
    times = data.median_us[ok]
    for i, axis in enumerate(axes):
        ax = fig.add_subplot(grid[i // cols, i % cols])
        values = data.values.get(axis.name, ())
        xs = [values[j] for j in ok]
        if axis.scale == "category" or not all(isinstance(v, int | float) for v in xs):
            labels = sorted({str(v) for v in xs})
            pos = {label: k for k, label in enumerate(labels)}
            ax.scatter([pos[str(v)] for v in xs], times, s=9, alpha=0.45, color="#1f77b4")
            ax.set_xticks(range(len(labels)), labels)
        else:
            ax.scatter(np.asarray(xs, dtype=np.float64), times, s=9, alpha=0.45, color="#1f77b4")
            if axis.scale == "log":
                ax.set_xscale("log", base=2)
            ticks = [float(t) for t in axis.ticks] or sorted({float(v) for v in xs})
            if len(ticks) <= 16:
                ax.xaxis.set_major_locator(FixedLocator(ticks))
                ax.xaxis.set_major_formatter(FuncFormatter(_plain))
                ax.xaxis.set_minor_locator(FixedLocator([]))
        ax.set_xlabel(axis.name)
        if i % cols == 0:
            ax.set_ylabel("runtime (µs)")
        _runtime_axis(ax, scale)
        ax.grid(True, alpha=0.3)
    ax = fig.add_subplot(grid[param_rows, :])
    evals = np.arange(1, data.count + 1)
    ax.scatter(evals[ok], times, s=5, alpha=0.3, color="#1f77b4", label="each valid trial")
    ax.step(evals, data.best_so_far_us, where="post", color="#2ca02c", label="best so far")
    if data.baseline_us is not None:
        ax.axhline(data.baseline_us, color="black", linestyle="--", label="baseline")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("runtime (µs)")
    _runtime_axis(ax, scale)
    ax.grid(True, alpha=0.3)
    if data.count:
        ax.legend(loc="upper right", fontsize="small")
    shown = f"; {len(ok)} of {ok_all.size} valid trials drawn" if len(ok) < ok_all.size else ""
    fig.suptitle(f"{title} ({data.count} trials{shown}; runtime axis {scale})")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return _palette_png(buffer.getvalue())


def _palette_png(png: bytes) -> bytes:
    """The same image with a 64-colour palette (about a third of the bytes; charts use few
    colours). Pillow comes with matplotlib."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()
