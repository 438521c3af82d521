"""Per-device progress of a search on a cluster (pure: the rows and their HTML)."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.records import Status
from workbench.testing.store_contract import sample_result
from workbench.ui.devices import ClusterBackend, device_rows, devices_html


def _on(gpu: str, status: Status = Status.OK, block: int = 128):  # type: ignore[no-untyped-def]
    result = sample_result(block, status=status)
    return replace(result, extra={"worker": {"host": "node1", "gpu": gpu,
                                             "address": f"tcp://10.0.0.1:{gpu}"}})


def test_rows_count_each_devices_results_and_rate() -> None:
    results = [_on("0"), _on("0", Status.CRASHED), _on("1"), _on("1"), _on("1"),
               _on("1", Status.PRUNED), sample_result()]  # pruned and unplaced are left out
    rows = device_rows(results, elapsed_s=30.0)
    assert [(r.label, r.measured, r.ok, r.failed) for r in rows] == [
        ("node1 GPU 0", 2, 1, 1), ("node1 GPU 1", 3, 3, 0)]
    assert rows[1].configs_per_min == 6.0
    assert device_rows(results, elapsed_s=None)[0].configs_per_min is None


def test_html_links_the_dashboard_and_escapes() -> None:
    rows = device_rows([_on("0")], 60.0)
    text = devices_html(rows, 'http://node1:8787/status"><script>')
    assert "node1 GPU 0" in text and "<script>" not in text and "Dask dashboard" in text
    assert devices_html([], "") == ""


def test_a_backend_is_a_cluster_backend_by_its_dashboard_link() -> None:
    class Plain:
        pass

    class OnCluster:
        dashboard_link = "http://x:8787/status"

    assert not isinstance(Plain(), ClusterBackend)
    assert isinstance(OnCluster(), ClusterBackend)
