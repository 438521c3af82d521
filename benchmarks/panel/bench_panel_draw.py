"""Browser-side cost of one panel chart update at 300 and 10,000 trials, in headless
Chromium without a GPU (software WebGL), with a CPU hog on every core.

The panel's two plots (the charts, and the WebGL parallel coordinates apart) are built by
the same functions the panel uses (``build_figure(parcoords=False)``,
``build_parcoords_figure``, ``trace_updates``: at most 3,000 points per trace, 300
parcoords lines) from recorded H100 trials cycled to the count, and drawn with
``Plotly.react`` the way ``workbench/ui/state_view.js`` does: set up first with invisible
points (as the panel does when it appears), then the empty figures, then the data, then the
data again (a later push). Times are milliseconds the page's main thread was busy: a click
pressed during a draw waits that long to be dispatched.

    python benchmarks/panel/bench_panel_draw.py [--out benchmarks/results/panel_draw.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import plotly
from bench_panel import KERNEL, _records  # run as a script: benchmarks/ is on sys.path

from workbench.api import Workbench
from workbench.ui.figures import (
    TrialTable,
    axes_for,
    build_figure,
    build_parcoords_figure,
    figure_layout,
    trace_updates,
)

ROOT = Path(__file__).resolve().parents[2]
COUNTS = (300, 10_000)
CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")

_DRAW = """async ([figs, repeats]) => {
  const F = {}; for (const k in figs) F[k] = JSON.parse(figs[k]);
  const out = {};
  const time = async (name, div, fig) => {
    const t0 = performance.now();
    await Plotly.react(div, fig.data, fig.layout);
    (out[name] = out[name] || []).push(Math.round(performance.now() - t0));
    await new Promise((r) => setTimeout(r, 0));
  };
  const warm = (fig) => ({ ...fig, data: fig.data.map((t) => t.type === "scattergl"
    ? { ...t, x: [1], y: [1], marker: { ...t.marker, opacity: 0 } }
    : t.type === "parcoords" ? { ...t, line: { ...t.line, color: [1] },
        dimensions: t.dimensions.map((d) => ({ ...d, values: [1] })) } : t) });
  await time("set_up_charts", "a", warm(F.empty_charts));
  await time("set_up_parcoords", "b", warm(F.empty_parcoords));
  await time("empty_charts", "a", F.empty_charts);
  await time("empty_parcoords", "b", F.empty_parcoords);
  for (let i = 0; i < repeats; i++) {
    // a new object per push, as the panel's updates are
    await time("charts", "a", { ...F.charts, data: F.charts.data.map((t) => ({ ...t })) });
    await time("parcoords", "b",
               { ...F.parcoords, data: F.parcoords.data.map((t) => ({ ...t })) });
  }
  return out;
}"""


def _figures(wb: Workbench, n: int) -> dict[str, str]:
    axes = axes_for(wb.params)
    layout = figure_layout(axes)
    table = TrialTable([p.name for p in wb.params])
    table.extend(_records(wb, n)[0])
    charts, parcoords = build_figure(axes, parcoords=False), build_parcoords_figure(axes)
    for index, props in trace_updates(table.snapshot(), layout).items():
        trace = parcoords.data[0] if index == layout.parcoords_trace else charts.data[index]
        for key, value in props.items():
            trace[key] = value
    return {"empty_charts": build_figure(axes, parcoords=False).to_json(),
            "empty_parcoords": build_parcoords_figure(axes).to_json(),
            "charts": charts.to_json(), "parcoords": parcoords.to_json()}


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "panel_draw.json"))
    args = ap.parse_args()
    plotly_js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()
    results = []
    hog = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
           for _ in range(os.cpu_count() or 2)]
    try:
        with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
            wb = Workbench(KERNEL, store=Path(tmp) / "bench.sqlite")
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            for n in COUNTS:
                page = browser.new_page(viewport={"width": 1400, "height": 2400})
                page.set_content("<div id=a style='width:1300px'></div>"
                                 "<div id=b style='width:1300px'></div>")
                page.add_script_tag(content=plotly_js)
                load = os.getloadavg()[0]
                times = page.evaluate(_DRAW, [_figures(wb, n), args.repeats])
                results.append({"trials": n, "load_1min": round(load, 2), "draw_ms": times})
                print(results[-1], flush=True)
                page.close()
            browser.close()
    finally:
        for proc in hog:
            proc.kill()
            proc.wait()
    doc = {"what": "page main-thread ms per Plotly.react of the panel's two plots (software "
                   "WebGL, headless Chromium, a CPU hog on every core)",
           "browser": CHROMIUM, "plotly_js": plotly.__version__, "date": time.strftime("%Y-%m-%d"),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "results": results}
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
