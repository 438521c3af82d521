"""Pure figure builders: trial records -> chart data -> one plotly figure with subplots.

Nothing here touches a widget. :class:`TrialTable` accumulates results; its
:meth:`TrialTable.snapshot` is a frozen :class:`ChartData`; :func:`trace_updates` turns that
into per-trace property dicts and :func:`layout_updates` into axis types (runtime axes on a
log scale when the runtimes spread over more than 10x, :func:`runtime_scale`);
:func:`build_figure` makes the empty figure (one cell per parameter, best-so-far, parallel
coordinates in a ``domain`` cell; the agent's speedups live in the Agent tab, so no chart
waits empty for them). The panel assigns the updates inside ``fig.batch_update()`` under its
figure lock. Beyond :data:`MAX_POINTS` trials a chart keeps the fastest half and an even
sample of the rest, so a push costs the same at 10,000 trials as at 3,000.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.errors import UsageError
from workbench.core.records import Status, TrialResult, Value
from workbench.core.trial_labels import NOT_IN_RECORDING, status_label

STATUS_COLOURS: Mapping[str, str] = {
    Status.OK.value: "#1f77b4",
    Status.PRUNED.value: "#9e9e9e",
    Status.COMPILE_ERROR.value: "#d62728",
    Status.LAUNCH_ERROR.value: "#ff7f0e",
    Status.WRONG_RESULT.value: "#9467bd",
    Status.TIMEOUT.value: "#8c564b",
    Status.CRASHED.value: "#e377c2",
    NOT_IN_RECORDING: "#c7c7c7",  # a replay never measured it: no verdict on the config
}
MAX_PARAM_COLUMNS = 3  # keeps each small chart readable in a notebook-width panel
# points per scatter trace: beyond this the browser, not the data, limits. The traces are
# SVG ``scatter`` (never ``scattergl``): a browser holds about 16 WebGL contexts for every
# page, and a few open panels' charts used them all up ("Too many active WebGL contexts.
# Oldest context will be lost": the oldest charts went blank). SVG draws 3,000 points fine.
MAX_POINTS = 3000
MAX_AXIS_TICKS = 6  # labelled ticks on a parameter's x axis: more overlap in a small chart
MAX_PARCOORDS = 300  # lines in the parallel coordinates: the fastest (more are unreadable)
LOG_SPREAD = 10.0  # runtimes spread wider than this (max / min) go on a log axis


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
    parcoords_trace: int

    @property
    def runtime_axes(self) -> tuple[str, ...]:
        """Layout keys of every y axis that shows a runtime (per parameter, best so far)."""
        count = len(self.axes) + 1
        return tuple("yaxis" if i == 0 else f"yaxis{i + 1}" for i in range(count))


@dataclass(frozen=True)
class ChartData:
    """A frozen snapshot of everything the charts show."""

    param_names: tuple[str, ...]
    values: Mapping[str, tuple[Value, ...]]  # per parameter, one value per trial
    median_us: np.ndarray  # float64 per trial; NaN where no timing
    statuses: tuple[str, ...]
    reasons: tuple[str, ...]
    baseline_us: float | None

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

    def __len__(self) -> int:
        return len(self._status)

    def add(self, result: TrialResult) -> None:
        for p in self.param_names:
            self._values[p].append(result.config.get(p, ""))
        median = result.median_us if result.status is Status.OK else None
        self._median.append(float(median) if median is not None else math.nan)
        self._status.append(status_label(result))
        self._reason.append(result.reason)
        self.results.append(result)

    def extend(self, results: Iterable[TrialResult]) -> None:
        for r in results:
            self.add(r)

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
                        all_trace=base + 1, baseline_trace=base + 2, parcoords_trace=base + 3)


def build_figure(axes: Sequence[AxisSpec], *, title: str = "", parcoords: bool = True) -> Any:
    """An empty ``plotly.graph_objects.Figure`` with every subplot and trace in place; with
    ``parcoords=False`` without the parallel coordinates (the panel draws them apart,
    :func:`build_parcoords_figure`: they are WebGL and cost most of a draw)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lay = figure_layout(axes)
    cols = lay.columns
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
    specs.append([{"type": "xy", "colspan": cols}] + [None] * (cols - 1))
    titles.append("best so far vs evaluations")
    if parcoords:
        specs.append([{"type": "domain", "colspan": cols}] + [None] * (cols - 1))
        titles.append("")  # the parallel coordinates carry their own title (see below)
    rows = len(specs)
    heights = [1.0] * (rows - 1) + [1.5 if parcoords else 1.0]  # parcoords need the room
    fig = make_subplots(rows=rows, cols=cols, specs=specs, subplot_titles=titles,
                        vertical_spacing=min(0.1, 0.3 / rows), horizontal_spacing=0.07,
                        row_heights=heights)
    for i, axis in enumerate(axes):
        r, c = divmod(i, cols)
        fig.add_trace(go.Scatter(x=[], y=[], mode="markers", name="ok", legendgroup="ok",
                                   showlegend=i == 0, marker={"color": STATUS_COLOURS["ok"],
                                                              "size": 6, "opacity": 0.6},
                                   hovertemplate=f"{axis.name}=%{{x}}<br>%{{y:.2f}} µs<extra></extra>"),
                      row=r + 1, col=c + 1)
        fig.add_trace(go.Scatter(x=[], y=[], mode="markers", name="no runtime (drawn at top)",
                                   legendgroup="failed", showlegend=i == 0,
                                   marker={"symbol": "x", "size": 7, "color": []},
                                   hovertemplate="%{text}<extra></extra>", text=[]),
                      row=r + 1, col=c + 1)
        fig.update_xaxes(row=r + 1, col=c + 1, **_x_axis(axis))
        fig.update_yaxes(row=r + 1, col=c + 1,
                         title_text="runtime (µs)" if c == 0 else None)
    best_row = lay.param_rows + 1
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name="best so far",
                             line={"color": "#2ca02c", "shape": "hv"}), row=best_row, col=1)
    fig.add_trace(go.Scatter(x=[], y=[], mode="markers", name="each valid trial",
                               marker={"color": STATUS_COLOURS["ok"], "size": 4, "opacity": 0.3}),
                  row=best_row, col=1)
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name="baseline",
                             line={"color": "#000000", "dash": "dash"}), row=best_row, col=1)
    fig.update_xaxes(title_text="evaluations", row=best_row, col=1)
    fig.update_yaxes(title_text="runtime (µs)", row=best_row, col=1)
    height_px = 250 * rows + 150
    if parcoords:
        fig.add_trace(_parcoords_trace(axes, rows), row=rows, col=1)
        for trace in fig.data:  # angled labels sit above the cell: leave them room
            if trace.type == "parcoords" and trace.domain.y is not None:
                y0, y1 = trace.domain.y
                trace.domain.y = (y0, max(y0 + 0.05, y1 - 110 / height_px))
                trace.domain.x = (0.04, 0.93)  # room for the first label and the colour bar
                fig.add_annotation(text=f"{PARCOORDS_TITLE}: {PARCOORDS_SUBTITLE}",
                                   showarrow=False, xref="paper",
                                   yref="paper", x=0.5, y=y1, yanchor="bottom",
                                   font={"size": 14})
    # No width: the figure fills its container (the panel's width; a fixed one was clipped).
    # The title has the top to itself; the legend sits in the bottom margin, below the last
    # axis title, and wraps upward into room kept for LEGEND_ROWS rows (above the charts, a
    # wrapped legend grew into the title at narrow widths).
    fig.update_layout(title={"text": title, "x": 0, "xref": "container", "xanchor": "left",
                             "y": 1, "yref": "container", "yanchor": "top",
                             "pad": {"t": 12, "l": 12}, "font": {"size": 14}},
                      height=height_px + LEGEND_ROWS * LEGEND_ROW_PX, autosize=True,
                      margin={"t": 50, "l": 60, "r": 30, "b": 45 + LEGEND_ROWS * LEGEND_ROW_PX},
                      legend={"orientation": "h", "x": 0.5, "xref": "container",
                              "xanchor": "center", "y": 0, "yref": "container",
                              "yanchor": "bottom"},
                      template="plotly_white")
    if not parcoords:
        # the panel's figure is resized in the browser, where plotly kept the margins it had
        # pushed out at the first width (every subplot squeezed after a resize)
        fig.update_layout(margin_autoexpand=False)
    return fig


PARCOORDS_TITLE = "parallel coordinates"
PARCOORDS_SUBTITLE = f"the {MAX_PARCOORDS} fastest valid trials; drag along an axis to filter"
LEGEND_ROWS = 2  # a narrow panel wraps the legend's five entries onto two rows
LEGEND_ROW_PX = 22


def _parcoords_trace(axes: Sequence[AxisSpec], rows: int) -> Any:
    import plotly.graph_objects as go

    return go.Parcoords(dimensions=[{"label": a.name, "values": []} for a in axes]
                        + [{"label": "µs", "values": []}],
                        line={"color": [], "colorscale": "Viridis_r", "showscale": True,
                              "colorbar": {"title": {"text": "µs"}, "len": 0.9 / rows,
                                           "y": 0.5 / rows, "yanchor": "middle",
                                           "thickness": 12}},
                        # from -27 degrees on, plotly starts a label at its axis and runs it
                        # up and to the right: parallel labels clear each other from
                        # 2 * 14 px apart (the panel's browser code picks the angle by width)
                        labelangle=-30, labelside="top",
                        labelfont={"size": 11}, tickfont={"size": 10},
                        name="parallel coordinates")


def build_parcoords_figure(axes: Sequence[AxisSpec]) -> Any:
    """The parallel coordinates alone (trace 0 takes ``trace_updates``' parcoords entry)."""
    import plotly.graph_objects as go

    fig = go.Figure(_parcoords_trace(axes, 1))
    # the labels' room above the axes is the top 30 % of the plot area (the panel's browser
    # code sets it from the labels' measured length and angle at the plot's width)
    fig.update_traces(domain={"x": (0.04, 0.93), "y": (0.0, 0.7)},
                      line_colorbar={"len": 0.7, "y": 0.35})
    fig.update_layout(title={"text": PARCOORDS_TITLE, "font": {"size": 14}, "x": 0,
                             "xref": "container", "xanchor": "left", "y": 1,
                             "yref": "container", "yanchor": "top", "pad": {"t": 12, "l": 12},
                             "subtitle": {"text": PARCOORDS_SUBTITLE, "font": {"size": 11}}},
                      height=460, autosize=True, margin={"t": 55, "l": 60, "r": 30, "b": 30},
                      template="plotly_white")
    return fig


def axis_ticks(values: Sequence[Value], limit: int = MAX_AXIS_TICKS) -> list[Value]:
    """At most ``limit`` of a parameter's ``values`` to label, evenly spread, the first and
    the last always among them: every value a knob can take labelled made the labels of a
    compiled-size knob (16 powers of two) run into each other in a third of a panel."""
    ticks = list(values)
    if len(ticks) <= limit:
        return ticks
    step = math.ceil((len(ticks) - 1) / (limit - 1))
    picked = ticks[::step]
    if picked[-1] != ticks[-1]:
        picked[-1] = ticks[-1]
    return picked


def _x_axis(axis: AxisSpec) -> dict[str, Any]:
    """A parameter's x axis: log for powers of two; labelled ticks only at values the
    parameter can take (at most :data:`MAX_AXIS_TICKS`, angled when their text is long)."""
    xaxis: dict[str, Any] = {"title_text": axis.name, "title_standoff": 2}
    if axis.scale == "log":
        xaxis["type"] = "log"
    elif axis.scale == "category":
        xaxis["type"] = "category"
    if axis.ticks and axis.scale != "category":
        shown = axis_ticks(axis.ticks)
        xaxis["tickvals"] = list(shown)
        xaxis["ticktext"] = [str(v) for v in shown]
        xaxis["tickangle"] = -45 if max(len(str(v)) for v in shown) > 4 else 0
        lo, hi = float(min(axis.ticks)), float(max(axis.ticks))
        if axis.scale == "log" and lo > 0 and hi > lo:
            pad = 0.15 * (math.log10(hi) - math.log10(lo))
            xaxis["range"] = [math.log10(lo) - pad, math.log10(hi) + pad]
        elif axis.scale == "linear" and hi > lo:
            pad = 0.15 * (hi - lo)
            xaxis["range"] = [lo - pad, hi + pad]
    return xaxis


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick values at 1, 2 and 5 of every decade from ``lo`` to ``hi`` (> 0), with their text
    ("1", "2", "5", "10", "20" ... "0.5"): plotly's own minor labels on a log axis read
    "5, 2, 100, 5, 2, 10, 5". Over more than three decades only the decades are labelled."""
    if not (lo > 0 and hi >= lo and math.isfinite(lo) and math.isfinite(hi)):
        return [], []
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mantissas = (1.0,) if last - first > 3 else (1.0, 2.0, 5.0)
    vals = [m * 10.0 ** e for e in range(first, last + 1) for m in mantissas]
    inside = [v for v in vals if lo / 1.0001 <= v <= hi * 1.0001]
    if len(inside) < 2:  # a narrow range: the 1-2-5 ticks around it
        below = [v for v in vals if v < lo]
        above = [v for v in vals if v > hi]
        inside = below[-1:] + inside + above[:1]
    return inside, [f"{v:g}" for v in inside]


def runtime_scale(median_us: np.ndarray) -> str:
    """``"log"`` when valid runtimes spread over more than :data:`LOG_SPREAD`x, else linear."""
    times = median_us[np.isfinite(median_us) & (median_us > 0)]
    if times.size < 2:
        return "linear"
    return "log" if float(times.max()) > LOG_SPREAD * float(times.min()) else "linear"


def layout_updates(layout: FigureLayout, scale: str,
                   median_us: np.ndarray | None = None) -> dict[str, dict[str, Any]]:
    """Axis properties for a runtime ``scale`` ("log" or "linear"); assign with the traces.
    On a log scale the ticks sit at 1-2-5 of each decade the runtimes (``median_us``) span,
    labelled with their values (:func:`log_ticks`)."""
    if scale not in ("log", "linear"):
        raise UsageError(f"runtime scale must be 'log' or 'linear', got {scale!r}",
                         key="scale", value=scale, expected="'log' or 'linear'")
    props: dict[str, Any] = {"type": scale}
    if scale == "log":
        times = (median_us[np.isfinite(median_us) & (median_us > 0)]
                 if median_us is not None else np.empty(0))
        vals, text = log_ticks(float(times.min()), float(times.max())) if times.size else ([], [])
        props.update({"tickmode": "array", "tickvals": vals, "ticktext": text} if vals
                     else {"tickmode": "auto", "dtick": 1})
    else:
        props.update({"tickmode": "auto"})
    return {key: dict(props) for key in layout.runtime_axes}


def thin(indices: np.ndarray, times: np.ndarray, limit: int = MAX_POINTS) -> np.ndarray:
    """At most ``limit`` of ``indices``: the fastest half by ``times``, an even sample of the rest.

    ``times`` is aligned with ``indices`` (NaN for trials without a runtime). Keeps order.
    """
    if indices.size <= limit:
        return indices
    keep_fast = limit // 2
    order = np.argsort(np.where(np.isnan(times), np.inf, times), kind="stable")
    fast = order[:keep_fast]
    rest = np.sort(order[keep_fast:])
    step = rest.size / (limit - keep_fast)
    sample = rest[(np.arange(limit - keep_fast) * step).astype(np.int64)]
    return np.sort(indices[np.concatenate([fast, sample])])


def _dimension(axis: AxisSpec, values: Sequence[Value]) -> dict[str, Any]:
    """A parcoords dimension, ticks only at values the parameter takes. Powers of two sit
    on a log2 scale labelled with their values; numbers take their own values as ticks
    (a choice of 4, 8, 16 showed 6, 10, 12, 14); strings and bools become category
    indices with tick labels. A parameter with one value gets that value as its only tick
    and a range around it (plotly drew a constant as a -1..1 axis)."""
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    dim: dict[str, Any]
    if numeric and axis.scale == "log" and all(float(v) > 0 for v in values):
        ticks = [float(t) for t in axis.ticks] or sorted({float(v) for v in values})
        dim = {"values": np.log2(np.asarray(values, dtype=np.float64)),
               "tickvals": [math.log2(t) for t in ticks],
               "ticktext": [f"{t:g}" for t in ticks]}
    elif numeric:
        taken = sorted({float(v) for v in values})
        ticks = ([float(t) for t in axis.ticks] if axis.ticks else taken)
        dim = {"values": np.asarray(values, dtype=np.float64)}
        if len(ticks) <= 16:
            dim["tickvals"] = ticks
            dim["ticktext"] = [f"{t:g}" for t in ticks]
    else:
        labels = sorted({str(v) for v in values})
        index = {label: i for i, label in enumerate(labels)}
        dim = {"values": np.asarray([index[str(v)] for v in values], dtype=np.float64),
               "tickvals": list(range(len(labels))), "ticktext": labels}
    shown = np.unique(dim["values"]) if len(values) else np.empty(0)
    if shown.size == 1:  # one value: its tick alone, in the middle of the axis
        only = float(shown[0])
        text = (dim["ticktext"][dim["tickvals"].index(only)]
                if only in dim.get("tickvals", []) else f"{values[0]}")
        dim.update({"tickvals": [only], "ticktext": [text], "range": [only - 1, only + 1]})
    return dim


def _param_array(axis: AxisSpec, vals: Sequence[Value]) -> np.ndarray:
    if axis.scale != "category":
        try:
            return np.asarray(vals, dtype=np.float64)
        except (TypeError, ValueError):
            pass
    return np.asarray([str(v) for v in vals], dtype=object)


def trace_updates(data: ChartData, layout: FigureLayout) -> dict[int, dict[str, Any]]:
    """Trace index -> properties to assign. Pure; compute this before ``batch_update``.

    Scatter traces hold at most :data:`MAX_POINTS` points each (:func:`thin`); the parallel
    coordinates the :data:`MAX_PARCOORDS` fastest valid trials.
    """
    out: dict[int, dict[str, Any]] = {}
    ok_all = np.flatnonzero(~np.isnan(data.median_us))
    fail_all = np.flatnonzero(np.isnan(data.median_us))
    ok_idx = thin(ok_all, data.median_us[ok_all])
    fail_idx = fail_all[-MAX_POINTS:]  # the most recent failures
    top = float(np.nanmax(data.median_us)) * 1.1 if ok_all.size else 1.0
    fail_text = [f"{data.statuses[i]}: {data.reasons[i][:120]}" for i in fail_idx]
    fail_colours = [STATUS_COLOURS.get(data.statuses[i], "#000000") for i in fail_idx]
    times_ok = data.median_us[ok_idx]
    for axis in layout.axes:
        arr = _param_array(axis, data.values.get(axis.name, ()))
        empty: list[Any] = []
        out[layout.ok_trace[axis.name]] = {"x": arr[ok_idx] if arr.size else empty,
                                           "y": times_ok}
        out[layout.failed_trace[axis.name]] = {
            "x": arr[fail_idx] if arr.size else empty, "y": np.full(fail_idx.size, top),
            "text": fail_text, "marker.color": fail_colours}
    evals = np.arange(1, data.count + 1)
    best = data.best_so_far_us
    # The running minimum changes at few evaluations: send those steps, not every point.
    steps = np.flatnonzero(np.r_[True, best[1:] != best[:-1]]) if best.size else evals[:0]
    steps = np.unique(np.r_[steps, best.size - 1]) if best.size else steps
    out[layout.best_trace] = {"x": evals[steps], "y": best[steps]}
    out[layout.all_trace] = {"x": evals[ok_idx], "y": times_ok}
    if data.baseline_us is not None and data.count:
        out[layout.baseline_trace] = {"x": [1, max(data.count, 2)],
                                      "y": [data.baseline_us, data.baseline_us]}
    else:
        out[layout.baseline_trace] = {"x": [], "y": []}
    fastest = ok_all[np.argsort(data.median_us[ok_all], kind="stable")[:MAX_PARCOORDS]]
    dims: list[dict[str, Any]] = []
    for axis in layout.axes:
        vals = data.values.get(axis.name, ())
        dims.append({"label": axis.name, **_dimension(axis, [vals[i] for i in fastest])})
    dims.append({"label": "µs", "values": data.median_us[fastest]})
    out[layout.parcoords_trace] = {"dimensions": dims, "line.color": data.median_us[fastest]}
    return out


def apply_updates(fig: Any, updates: Mapping[int, Mapping[str, Any]],
                  layout: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Assign precomputed properties to ``fig`` in one batch (one message to the browser)."""
    with fig.batch_update():
        for index, props in updates.items():
            trace = fig.data[index]
            for key, value in props.items():
                trace[key] = value
        for key, props in (layout or {}).items():
            for name, value in props.items():
                fig.layout[key][name] = value


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
    lay = figure_layout(axes)
    apply_updates(fig, trace_updates(data, lay),
                  layout_updates(lay, runtime_scale(data.median_us), data.median_us))
    return fig
