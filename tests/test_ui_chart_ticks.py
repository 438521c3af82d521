"""Charts that stay drawn and read well (issue 30): SVG scatter traces (no WebGL context per
chart), runtime log axes labelled at 1-2-5 of each decade, parameter ticks only at values a
knob takes, few enough not to overlap, and parallel coordinates without invented axes."""

from __future__ import annotations

import numpy as np

from workbench.core.params import parameter_from_dict
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.figures import (
    MAX_AXIS_TICKS,
    AxisSpec,
    TrialTable,
    axes_for,
    axis_ticks,
    build_figure,
    figure_layout,
    layout_updates,
    log_ticks,
    trace_updates,
)


def _ok(config: Config, us: float) -> TrialResult:
    t = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=5,
               rse_median_pct=1.0, l2_flushed=True)
    return TrialResult(config=config, shape="s", dtype="bf16", status=Status.OK, timing=t)


def test_no_trace_needs_a_webgl_context_but_the_parallel_coordinates() -> None:
    fig = build_figure([AxisSpec("BLOCK", "log"), AxisSpec("VEC")], parcoords=False)
    assert {t.type for t in fig.data} == {"scatter"}


def test_log_runtime_axis_reads_1_2_5_per_decade() -> None:
    vals, text = log_ticks(3.0, 240.0)
    assert text == ["5", "10", "20", "50", "100", "200"]
    assert vals == sorted(vals)
    # a narrow range still gets a tick on each side
    vals, text = log_ticks(31.0, 33.0)
    assert text == ["20", "50"]
    # five decades: the decades only
    assert log_ticks(0.5, 20_000.0)[1] == ["1", "10", "100", "1000", "10000"]


def test_runtime_axes_carry_the_ticks_on_log_and_drop_them_on_linear() -> None:
    lay = figure_layout([AxisSpec("BLOCK", "log")])
    times = np.array([3.0, np.nan, 240.0])
    log = layout_updates(lay, "log", times)
    assert set(log) == set(lay.runtime_axes)
    assert log["yaxis"]["ticktext"] == ["5", "10", "20", "50", "100", "200"]
    assert layout_updates(lay, "linear", times)["yaxis"] == {"type": "linear",
                                                            "tickmode": "auto"}


def test_compiled_size_knob_labels_few_ticks_at_values_it_takes() -> None:
    p = parameter_from_dict("TILE", {"kind": "pow2", "min": 1, "max": 32768})
    (axis,) = axes_for([p])
    assert len(axis.ticks) == 16
    shown = axis_ticks(axis.ticks)
    assert len(shown) <= MAX_AXIS_TICKS
    assert shown[0] == 1 and shown[-1] == 32768 and set(shown) <= set(axis.ticks)
    x = build_figure([axis], parcoords=False).layout.xaxis
    assert list(x.tickvals) == shown and x.tickangle == -45


def test_parcoords_ticks_only_at_choice_values_and_constants_get_their_value() -> None:
    params = [parameter_from_dict("VEC_BYTES", {"kind": "choice", "values": [4, 8, 16]}),
              parameter_from_dict("UNROLL", {"kind": "int", "min": 1, "max": 40}),
              parameter_from_dict("BLOCK", {"kind": "pow2", "min": 64, "max": 1024})]
    axes = axes_for(params)
    table = TrialTable([a.name for a in axes])
    for i, (vec, block) in enumerate([(4, 64), (8, 128), (16, 256), (16, 64)]):
        table.add(_ok(Config(VEC_BYTES=vec, UNROLL=2, BLOCK=block), 5.0 + i))
    lay = figure_layout(axes)
    dims = trace_updates(table.snapshot(), lay)[lay.parcoords_trace]["dimensions"]
    vec, unroll, block, _us = dims
    assert vec["tickvals"] == [4.0, 8.0, 16.0] and vec["ticktext"] == ["4", "8", "16"]
    assert unroll["tickvals"] == [2.0] and unroll["ticktext"] == ["2"]
    assert unroll["range"] == [1.0, 3.0]  # not the -1..1 plotly draws for a constant
    assert block["ticktext"][0] == "64"
