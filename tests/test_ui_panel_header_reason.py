"""The panel header's reason for no live GPU: :func:`workbench.engine.discovery.no_live_reason`
through :func:`workbench.api.choose_runner` (pure tier: the probes are replaced, the replay
runs over the committed H100 recording; no worker starts).

Before the fix the header said "pycuda is not installed" on a machine with no CUDA driver,
because choose_runner took the words of the first check LocalRunner makes (pycuda importable)
instead of the ordered probe.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench import api
from workbench.engine import discovery, runner
from workbench.engine.discovery import NoLive, NoLiveReason

ROOT = Path(__file__).resolve().parents[1]
SILU = ROOT / "sample_kernels" / "silu_and_mul"


@pytest.fixture
def no_pycuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """pycuda absent, as on this CPU machine and a fresh GPU-less laptop."""
    monkeypatch.setattr(runner, "_gpu_python_available", lambda: False)


@pytest.mark.parametrize("reason", [
    NoLiveReason(NoLive.NO_DRIVER, "libcuda.so.1: cannot open shared object file"),
    NoLiveReason(NoLive.NO_DEVICE, "cuInit: CUDA error 100, no CUDA-capable device"),
])
def test_choose_runner_states_the_driver_or_device_not_pycuda(
        monkeypatch: pytest.MonkeyPatch, no_pycuda: None, reason: NoLiveReason) -> None:
    monkeypatch.setattr(discovery, "no_live_reason", lambda: reason)
    folder = api.load_kernel_folder(SILU)
    chosen, mode = api.choose_runner(folder)
    with chosen:
        assert mode == f"replay because {reason.text}"
        assert "pycuda" not in mode


def test_choose_runner_names_pycuda_only_when_it_is_the_first_thing_missing(
        monkeypatch: pytest.MonkeyPatch, no_pycuda: None) -> None:
    reason = NoLiveReason(NoLive.NO_PYCUDA, "")
    monkeypatch.setattr(discovery, "no_live_reason", lambda: reason)
    chosen, mode = api.choose_runner(api.load_kernel_folder(SILU))
    with chosen:
        assert mode == "replay because pycuda (the GPU worker's CUDA binding) is not installed"


def test_panel_header_shows_the_one_reason(monkeypatch: pytest.MonkeyPatch, no_pycuda: None,
                                           tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    pytest.importorskip("pandas")
    from workbench.ui.panel import WorkbenchPanel

    reason = NoLiveReason(NoLive.NO_DRIVER, "libcuda.so.1: cannot open shared object file")
    monkeypatch.setattr(discovery, "no_live_reason", lambda: reason)
    wb = api.Workbench(SILU, store=tmp_path / "s.sqlite")
    panel = WorkbenchPanel(wb)
    panel._refresh_header()
    header = panel.header.value
    assert "no CUDA driver" in header and "libcuda.so.1" in header
    assert "pycuda" not in header
    assert "replay of NVIDIA H100" in wb.runner_description
