"""Per-device progress of a search on a Dask cluster, and the link to Dask's dashboard.

Each live result measured by a Dask GPU worker names it in ``extra["worker"]`` (host, GPU,
worker address; see :mod:`workbench.engine.dask_tasks`). :func:`device_rows` counts them
per device and :func:`devices_html` draws the table the panel shows under its search tab,
with the cluster's dashboard link (in JupyterLab, the dask-labextension sidebar opens the
same dashboard's panes inside the lab: paste the link into its search box).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from workbench.core.records import Status, TrialResult


@runtime_checkable
class ClusterBackend(Protocol):
    """A panel backend that tunes on a Dask cluster ("" when it does not)."""

    @property
    def dashboard_link(self) -> str: ...


@dataclass(frozen=True)
class DeviceRow:
    """One device's share of a search so far."""

    label: str            # "host GPU n"
    measured: int         # results it returned (ok or failed)
    ok: int
    failed: int
    configs_per_min: float | None  # measured over the elapsed time of the search


def _label(result: TrialResult) -> str | None:
    where = result.extra.get("worker") if result.extra else None
    if not isinstance(where, dict):
        return None
    host, gpu = where.get("host") or "?", where.get("gpu")
    return f"{host} GPU {gpu}" if gpu not in (None, "") else str(where.get("address") or host)


def device_rows(results: Iterable[TrialResult], elapsed_s: float | None) -> list[DeviceRow]:
    """Results per measuring device, in label order (results without one are left out)."""
    counts: dict[str, list[int]] = {}
    for result in results:
        label = _label(result)
        if label is None or result.status is Status.PRUNED:
            continue
        row = counts.setdefault(label, [0, 0])
        row[0 if result.status is Status.OK else 1] += 1
    rate = (lambda n: 60.0 * n / elapsed_s) if elapsed_s and elapsed_s > 0 else (lambda n: None)
    return [DeviceRow(label, ok + failed, ok, failed, rate(ok + failed))
            for label, (ok, failed) in sorted(counts.items())]


def devices_html(rows: Sequence[DeviceRow], dashboard_link: str = "") -> str:
    """The per-device table and the dashboard link ("" when there is neither)."""
    if not rows and not dashboard_link:
        return ""
    parts = []
    if dashboard_link:
        link = html.escape(dashboard_link, quote=True)
        parts.append(f'<div class="wb-dask-dashboard">Dask dashboard: <a href="{link}" '
                     f'target="_blank">{link}</a></div>')
    if rows:
        body = "".join(
            f"<tr><td>{html.escape(r.label)}</td><td>{r.measured}</td><td>{r.ok}</td>"
            f"<td>{r.failed}</td><td>"
            f"{'' if r.configs_per_min is None else f'{r.configs_per_min:.1f}'}</td></tr>"
            for r in rows)
        parts.append('<table class="wb-devices"><tr><th>device</th><th>measured</th>'
                     "<th>ok</th><th>failed</th><th>configs/min</th></tr>" + body + "</table>")
    return "".join(parts)


class DeviceView:
    """The widget the panel places under its search tab; :meth:`update` redraws it."""

    def __init__(self, dashboard_link: str = "") -> None:
        import ipywidgets as w

        self.dashboard_link = dashboard_link
        self.widget: Any = w.HTML(devices_html([], dashboard_link))
        self.widget.add_class("wb-devices-view")

    @classmethod
    def for_backend(cls, backend: object) -> DeviceView:
        """A view with the backend's dashboard link when it tunes on a cluster."""
        link = backend.dashboard_link if isinstance(backend, ClusterBackend) else ""
        return cls(link or "")

    def update(self, results: Iterable[TrialResult], elapsed_s: float | None) -> None:
        self.widget.value = devices_html(device_rows(results, elapsed_s), self.dashboard_link)
