"""Pure figure builders: chart data from trial records, one figure with every subplot."""

from __future__ import annotations

import math

import numpy as np

from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.figures import (
    MAX_PARCOORDS,
    MAX_POINTS,
    AxisSpec,
    TrialTable,
    apply_updates,
    axes_for,
    build_figure,
    figure_layout,
    layout_updates,
    runtime_scale,
    static_figure,
    thin,
    trace_updates,
)

AXES = [AxisSpec("BLOCK", "log"), AxisSpec("VEC"), AxisSpec("MODE", "category")]


def _timing(us: float) -> Timing:
    return Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=10,
                  rse_median_pct=0.5, l2_flushed=True)


def _trial(block: int, vec: int, mode: str, us: float | None,
           status: Status = Status.OK, reason: str = "") -> TrialResult:
    return TrialResult(config=Config(BLOCK=block, VEC=vec, MODE=mode), shape="s", dtype="bf16",
                       status=status, reason=reason, timing=_timing(us) if us else None)


def _table() -> TrialTable:
    t = TrialTable([a.name for a in AXES])
    t.add(_trial(64, 2, "a", 9.0))
    t.add(_trial(128, 4, "b", None, Status.COMPILE_ERROR, "ptxas: too many registers"))
    t.add(_trial(256, 8, "a", 7.0))
    t.add(_trial(512, 8, "b", 8.0))
    t.add(_trial(1024, 8, "b", None, Status.PRUNED, "block of 2048 threads exceeds"))
    t.baseline_us = 10.0
    return t


def test_best_so_far_is_running_minimum_with_nan_before_first_valid() -> None:
    t = TrialTable(["BLOCK", "VEC", "MODE"])
    t.add(_trial(64, 2, "a", None, Status.CRASHED, "x"))
    t.extend(_table().results)
    best = t.snapshot().best_so_far_us
    assert math.isnan(best[0])
    assert list(best[1:]) == [9.0, 9.0, 7.0, 7.0, 7.0]


def test_trace_updates_split_ok_and_failed_and_fill_every_chart() -> None:
    data = _table().snapshot()
    layout = figure_layout(AXES)
    up = trace_updates(data, layout)
    ok = up[layout.ok_trace["BLOCK"]]
    assert list(ok["x"]) == [64, 256, 512] and list(ok["y"]) == [9.0, 7.0, 8.0]
    failed = up[layout.failed_trace["VEC"]]
    assert list(failed["x"]) == [4, 8]
    assert failed["text"][0].startswith("compile_error: ptxas")
    assert np.all(failed["y"] > 9.0)  # drawn above every measured runtime
    assert list(up[layout.baseline_trace]["y"]) == [10.0, 10.0]
    dims = up[layout.parcoords_trace]["dimensions"]
    assert [d["label"] for d in dims] == ["BLOCK", "VEC", "MODE", "µs"]
    assert dims[2]["ticktext"] == ["a", "b"]  # strings become categories
    assert list(dims[3]["values"]) == [7.0, 8.0, 9.0]  # fastest first


def test_one_figure_holds_every_subplot_and_accepts_updates() -> None:
    fig = build_figure(AXES, title="k")
    layout = figure_layout(AXES)
    assert len(fig.data) == layout.parcoords_trace + 1
    assert fig.data[layout.parcoords_trace].type == "parcoords"
    assert fig.layout.xaxis.type == "log"
    apply_updates(fig, trace_updates(_table().snapshot(), layout))
    assert list(fig.data[layout.best_trace].y)[-1] == 7.0


def test_static_figure_with_no_trials_is_valid() -> None:
    fig = static_figure(TrialTable(["BLOCK", "VEC", "MODE"]).snapshot(), AXES)
    assert fig.to_html(full_html=False, include_plotlyjs=False)


def test_axes_for_uses_parameter_kinds() -> None:
    from workbench.core.params import parameter_from_dict

    params = [parameter_from_dict("B", {"kind": "pow2", "min": 32, "max": 256}),
              parameter_from_dict("V", {"kind": "choice", "values": [1, 2]}),
              parameter_from_dict("M", {"kind": "choice", "values": ["x", "y"]}),
              parameter_from_dict("U", {"kind": "int", "min": 1, "max": 3})]
    assert [a.scale for a in axes_for(params)] == ["log", "linear", "category", "linear"]


def test_runtime_axis_goes_log_when_the_spread_exceeds_ten() -> None:
    assert runtime_scale(np.array([5.0, 7.0, 49.0, np.nan])) == "linear"
    assert runtime_scale(np.array([5.0, 51.0])) == "log"
    assert runtime_scale(np.array([np.nan])) == "linear"
    layout = figure_layout(AXES)
    fig = build_figure(AXES)
    apply_updates(fig, {}, layout_updates(layout, "log"))
    assert [fig.layout[key].type for key in layout.runtime_axes] == ["log"] * 4
    assert fig.layout.yaxis4.title.text == "runtime (µs)"  # best so far shares the scale


def test_no_chart_waits_for_data_that_never_comes() -> None:
    fig = build_figure(AXES)
    titles = [a.text for a in fig.layout.annotations]
    assert not any("agent" in t for t in titles)  # speedups live in the Agent tab
    assert {t.type for t in fig.data} == {"scatter", "parcoords"}  # SVG: no WebGL context


def test_many_trials_are_thinned_keeping_the_fastest() -> None:
    t = TrialTable(["BLOCK", "VEC", "MODE"])
    for i in range(MAX_POINTS * 3):
        t.add(_trial(64 << (i % 4), 2, "a", 5.0 + (i * 7919 % 1000) / 10))
    data = t.snapshot()
    layout = figure_layout(AXES)
    up = trace_updates(data, layout)
    ys = np.asarray(up[layout.ok_trace["BLOCK"]]["y"])
    assert ys.size == MAX_POINTS
    fastest = np.sort(data.median_us)[:MAX_POINTS // 2]
    assert set(fastest) <= set(ys)  # every one of the fastest half is drawn
    best = up[layout.best_trace]
    assert best["y"][-1] == data.median_us.min() and len(best["x"]) < 50  # steps only
    dims = up[layout.parcoords_trace]["dimensions"]
    assert len(dims[-1]["values"]) == MAX_PARCOORDS
    assert dims[0]["ticktext"][:2] == ["64", "128"]  # powers of two on a log2 scale


def test_thin_keeps_order_and_small_inputs() -> None:
    idx = np.arange(10)
    assert thin(idx, idx.astype(float), 20) is idx
    kept = thin(np.arange(100), np.arange(100, 0, -1).astype(float), 10)
    assert list(kept) == sorted(kept) and {95, 96, 97, 98, 99} <= set(kept)
