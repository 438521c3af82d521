"""Pure figure builders: trial records -> chart data -> one plotly figure with subplots.

Nothing here touches a widget. :class:`TrialTable` accumulates results; its
:meth:`TrialTable.snapshot` is a frozen :class:`ChartData`; :func:`trace_updates` turns that
into per-trace property dicts; :func:`build_figure` makes the empty figure (one cell per
parameter, best-so-far, speedup per agent iteration, parallel coordinates in a ``domain``
cell). The panel assigns the updates inside ``fig.batch_update()`` under its figure lock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.records import Status, TrialResult, Value

STATUS_COLOURS: Mapping[str, str] = {
    Status.OK.value: "#1f77b4",
    Status.PRUNED.value: "#9e9e9e",
    Status.COMPILE_ERROR.value: "#d62728",
    Status.LAUNCH_ERROR.value: "#ff7f0e",
    Status.WRONG_RESULT.value: "#9467bd",
    Status.TIMEOUT.value: "#8c564b",
    Status.CRASHED.value: "#e377c2",
}
MAX_PARAM_COLUMNS = 3  # keeps each small chart readable in a notebook-width panel


@dataclass(frozen=True)
class AxisSpec:
    """One parameter axis: ``scale`` is "log" (powers of two), "linear" or "category"."""

    name: str
    scale: str = "linear"
    ticks: tuple[Value, ...] = ()  # the parameter's values, when known: one tick each


@dataclass(frozen=True)
class FigureLayout:
    """Where each trace lives in ``fig.data`` (indices), for a given parameter list."""

    axes: tuple[AxisSpec, ...]
    param_rows: int
    columns: int
    ok_trace: Mapping[str, int]  # parameter -> trace of measured runtimes
    failed_trace: Mapping[str, int]  # parameter -> trace of failed/pruned trials
    best_trace: int
    all_trace: int
    baseline_trace: int
    speedup_trace: int
    parcoords_trace: int


@dataclass(frozen=True)
class ChartData:
    """A frozen snapshot of everything the charts show."""

    param_names: tuple[str, ...]
    values: Mapping[str, tuple[Value, ...]]  # per parameter, one value per trial
    median_us: np.ndarray  # float64 per trial; NaN where no timing
    statuses: tuple[str, ...]
    reasons: tuple[str, ...]
    baseline_us: float | None
    iterations: tuple[int, ...]
    iteration_speedups: tuple[float, ...]

    @property
    def count(self) -> int:
        return len(self.statuses)

    @property
    def best_so_far_us(self) -> np.ndarray:
        """Running minimum of valid runtimes (NaN until the first valid one)."""
        times = np.where(np.isnan(self.median_us), np.inf, self.median_us)
        best = np.minimum.accumulate(times) if times.size else times
        return np.where(np.isinf(best), np.nan, best)


class TrialTable:
    """Accumulates trial results for the charts (append-only; not thread-safe by itself)."""

    def __init__(self, param_names: Sequence[str]) -> None:
        self.param_names = tuple(param_names)
        self._values: dict[str, list[Value]] = {p: [] for p in self.param_names}
        self._median: list[float] = []
        self._status: list[str] = []
        self._reason: list[str] = []
        self.results: list[TrialResult] = []
        self.baseline_us: float | None = None
        self._iterations: list[int] = []
        self._speedups: list[float] = []

    def __len__(self) -> int:
        return len(self._status)

    def add(self, result: TrialResult) -> None:
        for p in self.param_names:
            self._values[p].append(result.config.get(p, ""))
        median = result.median_us if result.status is Status.OK else None
        self._median.append(float(median) if median is not None else math.nan)
        self._status.append(result.status.value)
        self._reason.append(result.reason)
        self.results.append(result)

    def extend(self, results: Iterable[TrialResult]) -> None:
        for r in results:
            self.add(r)

    def add_iteration(self, iteration: int, speedup: float | None) -> None:
        if speedup is not None:
            self._iterations.append(iteration)
            self._speedups.append(float(speedup))

    def clear(self) -> None:
        self.__init__(self.param_names)  # type: ignore[misc]

    def snapshot(self) -> ChartData:
        return ChartData(
            param_names=self.param_names,
            values={p: tuple(v) for p, v in self._values.items()},
            median_us=np.asarray(self._median, dtype=np.float64),
            statuses=tuple(self._status),
            reasons=tuple(self._reason),
            baseline_us=self.baseline_us,
            iterations=tuple(self._iterations),
            iteration_speedups=tuple(self._speedups),
        )


def figure_layout(axes: Sequence[AxisSpec]) -> FigureLayout:
    """Trace indices for :func:`build_figure` (two traces per parameter, then the rest)."""
    n = max(len(axes), 1)
    columns = min(n, MAX_PARAM_COLUMNS)
    param_rows = math.ceil(len(axes) / columns) if axes else 0
    ok_trace = {a.name: 2 * i for i, a in enumerate(axes)}
    failed_trace = {a.name: 2 * i + 1 for i, a in enumerate(axes)}
    base = 2 * len(axes)
    return FigureLayout(axes=tuple(axes), param_rows=param_rows, columns=columns,
                        ok_trace=ok_trace, failed_trace=failed_trace, best_trace=base,
                        all_trace=base + 1, baseline_trace=base + 2, speedup_trace=base + 3,
                        parcoords_trace=base + 4)


def build_figure(axes: Sequence[AxisSpec], *, title: str = "") -> Any:
    """An empty ``plotly.graph_objects.Figure`` with every subplot and trace in place."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lay = figure_layout(axes)
    cols = lay.columns
    left = math.ceil(cols / 2) if cols > 1 else 1
    specs: list[list[dict[str, Any] | None]] = []
    titles: list[str] = []
    for r in range(lay.param_rows):
        row: list[dict[str, Any] | None] = []
        for c in range(cols):
            i = r * cols + c
            row.append({"type": "xy"} if i < len(axes) else None)
            if i < len(axes):
                titles.append("")  # the x-axis title names the parameter
        specs.append(row)
    if cols == 1:
        specs.append([{"type": "xy"}])
        specs.append([{"type": "xy"}])
        titles += ["best so far vs evaluations", "speedup per agent iteration"]
    else:
        specs.append([{"type": "xy", "colspan": left}] + [None] * (left - 1)
                     + [{"type": "xy", "colspan": cols - left}] + [None] * (cols - left - 1))
        titles += ["best so far vs evaluations", "speedup per agent iteration"]
    specs.append([{"type": "domain", "colspan": cols}] + [None] * (cols - 1))
    titles.append("parallel coordinates (valid trials)")
    rows = len(specs)
    heights = [1.0] * rows
    fig = make_subplots(rows=rows, cols=cols, specs=specs, subplot_titles=titles,
                        vertical_spacing=min(0.12, 0.3 / rows), horizontal_spacing=0.06,
                        row_heights=heights)
    for i, axis in enumerate(axes):
        r, c = divmod(i, cols)
        fig.add_trace(go.Scattergl(x=[], y=[], mode="markers", name="ok", legendgroup="ok",
                                   showlegend=i == 0, marker={"color": STATUS_COLOURS["ok"],
                                                              "size": 6, "opacity": 0.6},
                                   hovertemplate=f"{axis.name}=%{{x}}<br>%{{y:.2f}} µs<extra></extra>"),
                      row=r + 1, col=c + 1)
        fig.add_trace(go.Scattergl(x=[], y=[], mode="markers", name="no runtime (drawn at top)",
                                   legendgroup="failed", showlegend=i == 0,
                                   marker={"symbol": "x", "size": 7, "color": []},
                                   hovertemplate="%{text}<extra></extra>", text=[]),
                      row=r + 1, col=c + 1)
        xaxis: dict[str, Any] = {"title_text": axis.name, "title_standoff": 2}
        if axis.scale == "log":
            xaxis["type"] = "log"
        elif axis.scale == "category":
            xaxis["type"] = "category"
        if axis.ticks and axis.scale != "category":
            xaxis["tickvals"] = list(axis.ticks)
            xaxis["ticktext"] = [str(v) for v in axis.ticks]
            lo, hi = float(min(axis.ticks)), float(max(axis.ticks))
            if axis.scale == "log" and lo > 0 and hi > lo:
                pad = 0.15 * (math.log10(hi) - math.log10(lo))
                xaxis["range"] = [math.log10(lo) - pad, math.log10(hi) + pad]
            elif axis.scale == "linear" and hi > lo:
                pad = 0.15 * (hi - lo)
                xaxis["range"] = [lo - pad, hi + pad]
        fig.update_xaxes(row=r + 1, col=c + 1, **xaxis)
        fig.update_yaxes(row=r + 1, col=c + 1,
                         title_text="runtime (µs)" if c == 0 else None)
    best_row = lay.param_rows + 1
    spd_row, spd_col = (best_row + 1, 1) if cols == 1 else (best_row, left + 1)
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name="best so far",
                             line={"color": "#2ca02c", "shape": "hv"}), row=best_row, col=1)
    fig.add_trace(go.Scattergl(x=[], y=[], mode="markers", name="each valid trial",
                               marker={"color": STATUS_COLOURS["ok"], "size": 4, "opacity": 0.3}),
                  row=best_row, col=1)
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name="baseline",
                             line={"color": "#000000", "dash": "dash"}), row=best_row, col=1)
    fig.update_xaxes(title_text="evaluations", row=best_row, col=1)
    fig.update_yaxes(title_text="µs", row=best_row, col=1)
    fig.add_trace(go.Bar(x=[], y=[], name="speedup vs baseline", marker={"color": "#17becf"}),
                  row=spd_row, col=spd_col)
    fig.update_xaxes(title_text="agent iteration", row=spd_row, col=spd_col, dtick=1)
    fig.update_yaxes(title_text="× baseline", row=spd_row, col=spd_col)
    fig.add_trace(go.Parcoords(dimensions=[{"label": a.name, "values": []} for a in axes]
                               + [{"label": "µs", "values": []}],
                               line={"color": [], "colorscale": "Viridis_r", "showscale": True,
                                     "colorbar": {"title": {"text": "µs"}, "len": 0.8 / rows,
                                                  "y": 0.4 / rows, "yanchor": "middle"}},
                               name="parallel coordinates"),
                  row=rows, col=1)
    height_px = 260 * rows + 80
    for trace in fig.data:  # parcoords labels sit above its cell: leave them room
        if trace.type == "parcoords" and trace.domain.y is not None:
            y0, y1 = trace.domain.y
            trace.domain.y = (y0, max(y0 + 0.05, y1 - 45 / height_px))
    # no fixed width: the figure fills the notebook column (a fixed one was clipped)
    fig.update_layout(title_text=title, height=height_px, autosize=True,
                      margin={"t": 70, "l": 50, "r": 30},
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0.5},
                      template="plotly_white")
    return fig


def _numeric_dimension(values: Sequence[Value]) -> dict[str, Any]:
    """A parcoords dimension; strings and bools become category indices with tick labels."""
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return {"values": np.asarray(values, dtype=np.float64)}
    labels = sorted({str(v) for v in values})
    index = {label: i for i, label in enumerate(labels)}
    return {"values": np.asarray([index[str(v)] for v in values], dtype=np.float64),
            "tickvals": list(range(len(labels))), "ticktext": labels}


def trace_updates(data: ChartData, layout: FigureLayout) -> dict[int, dict[str, Any]]:
    """Trace index -> properties to assign. Pure; compute this before ``batch_update``."""
    out: dict[int, dict[str, Any]] = {}
    ok = ~np.isnan(data.median_us)
    failed = ~ok
    fail_idx = np.flatnonzero(failed)
    top = float(np.nanmax(data.median_us)) * 1.1 if ok.any() else 1.0
    fail_text = [f"{data.statuses[i]}: {data.reasons[i][:120]}" for i in fail_idx]
    fail_colours = [STATUS_COLOURS.get(data.statuses[i], "#000000") for i in fail_idx]
    times_ok = data.median_us[ok]
    for axis in layout.axes:
        vals = data.values.get(axis.name, ())
        arr = np.asarray(vals, dtype=object)
        if axis.scale != "category":
            try:
                arr = np.asarray(vals, dtype=np.float64)
            except (TypeError, ValueError):
                arr = np.asarray([str(v) for v in vals], dtype=object)
        if arr.size == 0:
            arr = np.asarray([], dtype=np.float64)
        out[layout.ok_trace[axis.name]] = {"x": arr[ok] if arr.size else [], "y": times_ok}
        out[layout.failed_trace[axis.name]] = {
            "x": arr[failed] if arr.size else [], "y": np.full(fail_idx.size, top),
            "text": fail_text, "marker.color": fail_colours}
    evals = np.arange(1, data.count + 1)
    out[layout.best_trace] = {"x": evals, "y": data.best_so_far_us}
    out[layout.all_trace] = {"x": evals[ok], "y": times_ok}
    if data.baseline_us is not None and data.count:
        out[layout.baseline_trace] = {"x": [1, max(data.count, 2)],
                                      "y": [data.baseline_us, data.baseline_us]}
    else:
        out[layout.baseline_trace] = {"x": [], "y": []}
    out[layout.speedup_trace] = {"x": list(data.iterations), "y": list(data.iteration_speedups)}
    dims: list[dict[str, Any]] = []
    for axis in layout.axes:
        kept = [v for v, k in zip(data.values.get(axis.name, ()), ok, strict=False) if k]
        dims.append({"label": axis.name, **_numeric_dimension(kept)})
    dims.append({"label": "µs", "values": times_ok})
    out[layout.parcoords_trace] = {"dimensions": dims, "line.color": times_ok}
    return out


def apply_updates(fig: Any, updates: Mapping[int, Mapping[str, Any]]) -> None:
    """Assign precomputed properties to ``fig`` in one batch (one message to the browser)."""
    with fig.batch_update():
        for index, props in updates.items():
            trace = fig.data[index]
            for key, value in props.items():
                trace[key] = value


def axes_for(params: Sequence[Any]) -> list[AxisSpec]:
    """Axis scales from parameter dicts / objects (kind pow2 -> log, string choices -> category)."""
    axes: list[AxisSpec] = []
    for p in params:
        d = p.to_dict() if hasattr(p, "to_dict") else dict(p)
        name = p.name if hasattr(p, "name") else str(d.get("name"))
        kind = d.get("kind")
        if kind == "pow2":
            scale = "log"
        elif (kind == "choice" and any(not isinstance(v, int | float) or isinstance(v, bool)
                                      for v in d.get("values", ()))) or kind == "bool":
            scale = "category"
        else:
            scale = "linear"
        values = p.values() if callable(getattr(p, "values", None)) else ()
        ticks = tuple(values) if 1 < len(values) <= 16 and scale != "category" else ()
        axes.append(AxisSpec(name, scale, ticks))
    return axes


def static_figure(data: ChartData, axes: Sequence[AxisSpec], *, title: str = "") -> Any:
    """A plain (non-widget) figure filled with ``data``: for reports."""
    fig = build_figure(axes, title=title)
    apply_updates(fig, trace_updates(data, figure_layout(axes)))
    return fig
