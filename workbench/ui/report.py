"""Report notebooks: a static record of a session that opens without a live kernel.

The notebook holds markdown (kernel, device, parameter ranges, approvals, a unified diff)
and display outputs (the side-by-side diff, the fastest trials as a table and the charts as
PNG images drawn by :mod:`workbench.ui.static_charts`). No code has to run to read it and
no script is embedded, so it reads the same untrusted, on GitHub or in nbviewer, and stays
well under 1 MB (a 10,000-trial report: see benchmarks/results/report_size.json). The full
results go to the CSV export. By default the notebook is signed in the writer's Jupyter
notary.
"""

from __future__ import annotations

import base64
import difflib
import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.defines import define_lines
from workbench.core.picks import PickRecord, search_best_pick
from workbench.core.records import Status, TrialResult


@dataclass(frozen=True)
class ReportContent:
    """Everything a report shows (already computed; no live objects)."""

    kernel: str
    device: str
    baseline_source: str
    template_source: str
    params: Sequence[Mapping[str, Any]]  # Parameter.to_dict() plus "name"
    constraints: Sequence[str]
    reviews: Sequence[Mapping[str, Any]]  # decision, reviewer, time, note, approved_text_sha256
    results: Sequence[TrialResult]
    baseline_us: Mapping[str, float] = field(default_factory=dict)  # "shape/dtype" -> µs
    title: str = ""
    # the stored pick per problem (Workbench.pick); a problem without one shows the
    # search's fastest trial, marked as a fallback
    picks: Sequence[PickRecord] = ()


TABLE_ROWS = 200  # trials listed in the report (the fastest, then failures); all in the CSV


def _code_cell_with_output(source: str, data: Mapping[str, str]) -> Any:
    import nbformat.v4 as nbf

    cell = nbf.new_code_cell(source=source)
    cell.outputs = [nbf.new_output("display_data", data=dict(data))]
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def results_frame(results: Sequence[TrialResult], baseline_us: Mapping[str, float]) -> Any:
    """One row per trial (pandas DataFrame), fastest valid first."""
    import pandas as pd

    rows = []
    for r in results:
        base = baseline_us.get(f"{r.shape}/{r.dtype}")
        rows.append({**dict(r.config), "shape": r.shape, "dtype": r.dtype,
                     "status": r.status.value, "median_us": r.median_us,
                     "rse_median_pct": r.timing.rse_median_pct if r.timing else None,
                     "speedup": (base / r.median_us) if base and r.median_us else None,
                     "reason": r.reason})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(["median_us"], na_position="last", kind="stable")
    return frame


def report_picks(content: ReportContent, ok: Sequence[TrialResult]) -> list[PickRecord]:
    """The pick of every problem the report holds: the stored one given in ``content``,
    else the search's fastest ok trial marked as a fallback."""
    given = {p.problem: p for p in content.picks}
    out: list[PickRecord] = []
    for shape, dtype in dict.fromkeys((r.shape, r.dtype) for r in ok):
        problem = f"{shape}/{dtype}"
        pick = given.get(problem) or search_best_pick(
            [r for r in ok if r.shape == shape and r.dtype == dtype], kernel=content.kernel,
            template_version="", baseline_us=content.baseline_us.get(problem))
        if pick is not None:
            out.append(pick)
    return out


def _ticks(param: Mapping[str, Any]) -> tuple[Any, ...]:
    """A parameter dict's values when few and numeric (one labelled tick each)."""
    from workbench.core.params import parameter_from_dict

    data = {k: v for k, v in param.items() if k != "name"}
    try:
        values = parameter_from_dict(str(param.get("name")), data).values()
    except Exception:  # a report still draws without ticks
        return ()
    numeric = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    return tuple(values) if numeric and 1 < len(values) <= 16 else ()


def build_report(content: ReportContent) -> Any:
    """The report as an ``nbformat`` notebook node (kernelspec python3, no live state)."""
    import nbformat.v4 as nbf
    import pandas as pd

    from workbench.ui.diff import side_by_side_diff_html
    from workbench.ui.figures import AxisSpec, TrialTable
    from workbench.ui.static_charts import runtime_charts_png

    nb = nbf.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    title = content.title or f"Kernel Workbench report: {content.kernel}"
    ok = [r for r in content.results if r.status is Status.OK and r.median_us is not None]
    counts: dict[str, int] = {}
    for r in content.results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no trials"
    cells = [nbf.new_markdown_cell(
        f"# {title}\n\n- **kernel**: `{content.kernel}`\n- **device**: {content.device}\n"
        f"- **trials**: {len(content.results)} ({summary})\n")]
    for pick in report_picks(content, ok):
        base = pick.baseline_us or content.baseline_us.get(pick.problem)
        ratio = pick.speedup if pick.speedup is not None else (
            base / pick.median_us if base else None)
        ci = (f" (95 % CI {pick.speedup_low:.2f}–{pick.speedup_high:.2f})"
              if pick.speedup_low is not None and pick.speedup_high is not None else "")
        beside = (f" — {ratio:.2f}× the baseline ({base:.3f} µs){ci}"
                  if ratio is not None and base else "")
        cells.append(nbf.new_markdown_cell(
            f"## Pick: `{pick.shape}` / `{pick.dtype}`\n\n**{pick.median_us:.3f} µs**{beside}"
            f"\n\n*{html.escape(pick.how())}*\n\n```c\n"
            + "\n".join(define_lines(pick.config)) + "\n```"))
    # Parameters and constraints.
    rows = ["| parameter | kind | values | default | description |", "|---|---|---|---|---|"]
    for p in content.params:
        if p.get("kind") == "choice":
            values = ", ".join(str(v) for v in p.get("values", ()))
        else:
            step = f" step {p['step']}" if p.get("step", 1) != 1 else ""
            values = f"{p.get('min')} .. {p.get('max')}{step}"
        rows.append(f"| `{p.get('name')}` | {p.get('kind')} | {values} | {p.get('default')} | "
                    f"{p.get('description', '')} |")
    constraints = "\n".join(f"- `{c}`" for c in content.constraints) or "- (none)"
    cells.append(nbf.new_markdown_cell("## Parameter ranges\n\n" + "\n".join(rows)
                                       + "\n\n**Constraints**\n\n" + constraints))
    # Reviews.
    if content.reviews:
        lines = ["| decision | reviewer | time | note | approved text sha256 |", "|---|---|---|---|---|"]
        for rv in content.reviews:
            lines.append(f"| {rv.get('decision')} | {rv.get('reviewer')} | {rv.get('time')} | "
                         f"{str(rv.get('note', '')).replace('|', '/')} | "
                         f"`{str(rv.get('approved_text_sha256', ''))[:16]}` |")
        cells.append(nbf.new_markdown_cell("## Approvals\n\n" + "\n".join(lines)))
    else:
        cells.append(nbf.new_markdown_cell("## Approvals\n\nNo review recorded."))
    # Diff: unified (readable anywhere) and side by side (HTML output).
    unified = "".join(difflib.unified_diff(content.baseline_source.splitlines(keepends=True),
                                           content.template_source.splitlines(keepends=True),
                                           "baseline.cu", "template.cu"))
    cells.append(nbf.new_markdown_cell("## Template vs baseline\n\n```diff\n" + unified + "\n```"))
    cells.append(_code_cell_with_output(
        "# side-by-side diff (static output)",
        {"text/html": side_by_side_diff_html(content.baseline_source, content.template_source),
         "text/plain": unified}))
    # Charts: one PNG per shape/dtype (no script: readable anywhere, small).
    if content.results:
        names = [str(p.get("name")) for p in content.params]
        scales = {str(p.get("name")): ("log" if p.get("kind") == "pow2" else "linear")
                  for p in content.params}
        ticks = {str(p.get("name")): _ticks(p) for p in content.params}
        groups: dict[tuple[str, str], list[TrialResult]] = {}
        for r in content.results:
            groups.setdefault((r.shape, r.dtype), []).append(r)
        for (shape, dtype), group in groups.items():
            table = TrialTable(names)
            table.extend(group)
            table.baseline_us = content.baseline_us.get(f"{shape}/{dtype}")
            axes = [AxisSpec(n, scales[n], ticks[n]) for n in names]
            png = runtime_charts_png(table.snapshot(), axes,
                                     title=f"{content.kernel} {shape} {dtype}")
            cells.append(nbf.new_markdown_cell(f"## Charts: `{shape}` / `{dtype}`"))
            cells.append(_code_cell_with_output(
                f"# charts for {shape} {dtype} (static output)",
                {"image/png": base64.b64encode(png).decode("ascii"),
                 "text/plain": f"<figure: {len(group)} trials>"}))
        frame = results_frame(content.results, content.baseline_us)
        shown = frame.head(TABLE_ROWS)
        failed = frame[frame["status"] != "ok"]
        if len(frame) > TABLE_ROWS and not failed.empty:  # keep the latest failures visible
            shown = pd.concat([frame.head(TABLE_ROWS - min(20, len(failed))),
                               failed.tail(min(20, len(failed)))])
        note = ("" if len(frame) <= len(shown) else
                f" — the {len(shown)} listed are the fastest and the latest failures; "
                "the Export tab's results CSV holds every trial")
        cells.append(nbf.new_markdown_cell(f"## Results ({len(frame)} trials{note})"))
        cells.append(_code_cell_with_output(
            "# results table (static output)",
            {"text/html": shown.to_html(index=False, border=0,
                                        float_format=lambda v: f"{v:.4g}"),
             "text/plain": html.unescape(shown.head(20).to_string(index=False))}))
    nb.cells = cells
    return nb


def write_report(path: str | Path, content: ReportContent, *, sign: bool = True,
                 overwrite: bool = False) -> Path:
    """Write the report notebook; ``sign`` trusts it in the local Jupyter notary.

    The file goes through the one write policy with the report's folder as the root
    (:func:`workbench.core.write_policy.write_beside`): a symlinked report path or folder is
    refused, the write is atomic, and an existing file is never replaced unless
    ``overwrite=True``. Of several reports written to one new path at once, one is written
    and each of the others raises :class:`~workbench.core.errors.WriteRefusedError` naming
    the path (nothing half-written, nothing replaced). Configured keys are scrubbed from the
    notebook's text (:mod:`workbench.core.secrets`).
    """
    import nbformat

    from workbench.core.errors import WorkbenchError, WriteRefusedError
    from workbench.core.secrets import scrub
    from workbench.core.write_policy import write_beside

    target = Path(path)
    if target.is_dir() and not target.is_symlink():
        raise WorkbenchError(f"report {target} is a directory; expected a .ipynb file path",
                             file=str(target), expected="a file path")
    if os.path.lexists(target) and not overwrite:
        raise WriteRefusedError(f"report {target} already exists; choose another path or pass "
                                "overwrite=True to replace it", path=str(target),
                                root=str(target.parent), reason="the file exists")
    nb = build_report(content)
    nbformat.validate(nb)
    if sign:
        try:
            from nbformat.sign import NotebookNotary

            NotebookNotary().sign(nb)
        except Exception:  # signing is a convenience; an unsigned report still opens
            pass
    return write_beside(target, scrub(nbformat.writes(nb)), overwrite=overwrite)
