"""``workbench lab`` (root, pass-through, live/replay line) and ``workbench doctor``."""

from __future__ import annotations

import ctypes
import io
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workbench import cli
from workbench.engine import doctor
from workbench.engine.discovery import NoLive, NoLiveReason
from workbench.testing.openai_server import OpenAITranscriptServer
from workbench.ui import lab

ROOT = Path(__file__).resolve().parents[1]


def test_lab_command_adds_allow_root_only_as_root(tmp_path: Path) -> None:
    as_root = lab.lab_command(tmp_path, open_browser=False, as_root=True)
    assert as_root[-1] == "--allow-root" and "--no-browser" in as_root
    assert "--allow-root" not in lab.lab_command(tmp_path, as_root=False)
    given = lab.lab_command(tmp_path, as_root=True, extra=["--allow-root", "--ip=0.0.0.0"])
    assert given.count("--allow-root") == 1 and given[-1] == "--ip=0.0.0.0"


def test_lab_forwards_arguments_after_double_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_launch(root: str, **kwargs: Any) -> int:
        seen.update(kwargs, root=root)
        return 0

    monkeypatch.setattr(lab, "launch", fake_launch)
    assert cli.main(["lab", "--no-browser", "--no-gpu-setup", "--", "--ip=0.0.0.0",
                     "--ServerApp.token=abc"]) == 0
    assert seen["extra"] == ["--ip=0.0.0.0", "--ServerApp.token=abc"]
    assert seen["open_browser"] is False and seen["gpu_setup"] is False


def test_lab_environment_points_the_sidebar_at_the_sample_kernels() -> None:
    env = lab.lab_environment(ROOT / "notebooks", environ={})
    assert env["WORKBENCH_KERNELS"] == str(ROOT / "sample_kernels")
    kept = lab.lab_environment(ROOT / "notebooks", environ={"WORKBENCH_KERNELS": "/k"})
    assert kept["WORKBENCH_KERNELS"] == "/k"


def test_gpu_check_reports_a_missing_driver_with_the_fix() -> None:
    def no_driver(name: str) -> ctypes.CDLL:
        raise OSError(f"{name}: cannot open shared object file")

    check = doctor.check_gpu(load=no_driver)
    assert not check.ok and "libcuda.so.1" in check.found and "NVIDIA GPU" in check.fix
    mode = doctor.tuning_mode([check, doctor.Check("pycuda", True, "2025.1", "")])
    assert mode.startswith("replay because no CUDA driver (libcuda.so.1")


def test_tuning_mode_names_the_gpu_when_everything_is_there() -> None:
    checks = [doctor.Check("nvcc", True, "release 13.0", ""),
              doctor.Check("GPU", True, "NVIDIA H100 80GB HBM3 (CUDA driver API 13.0)", ""),
              doctor.Check("pycuda", True, "2025.1", "")]
    assert doctor.tuning_mode(checks) == "live on NVIDIA H100 80GB HBM3"
    checks[2] = doctor.Check("pycuda", False, "not installed", "", doctor.PYCUDA_HINT,
                             NoLiveReason(NoLive.NO_PYCUDA, ""))
    assert doctor.tuning_mode(checks) == ("replay because pycuda (the GPU worker's CUDA "
                                          "binding) is not installed")


def test_llm_check_without_a_model_says_what_to_set() -> None:
    check = doctor.check_llm(environ={})
    assert not check.ok and "WORKBENCH_MODEL" in check.fix


def test_llm_check_reaches_a_real_loopback_endpoint() -> None:
    with OpenAITranscriptServer([]) as server:
        check = doctor.check_llm(environ={"WORKBENCH_MODEL": "m", "OPENAI_BASE_URL":
                                          server.base_url, "OPENAI_API_KEY": "sk-secret"})
        assert [r.path for r in server.requests] == []  # GET is not recorded; reply is 404
    assert check.ok and "reachable" in check.found
    assert "sk-secret" not in check.found + check.fix


def test_llm_check_reports_an_unreachable_endpoint() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the probe: nothing listens
    check = doctor.check_llm(environ={"WORKBENCH_MODEL": "m",
                                      "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"},
                             timeout_s=2.0)
    assert not check.ok and "unreachable" in check.found and check.fix


def test_install_pycuda_refuses_without_headers_and_never_runs_pip(tmp_path: Path) -> None:
    calls: list[Any] = []
    ok, what = doctor.install_pycuda(sys.executable, environ={"PATH": str(tmp_path),
                                                               "CUDA_ROOT": str(tmp_path)},
                                     run=lambda *a, **k: calls.append(a), fallback=())
    assert not ok and "cuda.h" in what and "conda" in what and calls == []


def test_install_pycuda_builds_against_the_headers_it_found(tmp_path: Path) -> None:
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "cuda.h").write_text("/* header */")
    seen: dict[str, Any] = {}

    def fake_pip(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.update(cmd=cmd, env=kwargs["env"])
        return subprocess.CompletedProcess(cmd, 0, "Successfully installed pycuda", "")

    ok, what = doctor.install_pycuda("python-x", environ={"CUDA_ROOT": str(tmp_path),
                                                          "PATH": ""}, run=fake_pip)
    assert ok and str(tmp_path) in what
    assert seen["cmd"][:4] == ["python-x", "-m", "pip", "install"]
    assert seen["env"]["CUDA_ROOT"] == str(tmp_path)
    assert seen["env"]["PATH"].startswith(str(tmp_path / "bin"))


def test_prepare_gpu_without_setup_says_why_it_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = [doctor.Check("nvcc", True, "release 13.0", ""),
              doctor.Check("GPU", True, "NVIDIA H100 80GB HBM3 (CUDA driver API 13.0)", ""),
              doctor.Check("pycuda", False, "not installed", "", doctor.PYCUDA_HINT)]
    monkeypatch.setattr(doctor, "run_checks", lambda llm=True: checks)
    mode = lab.prepare_gpu(gpu_setup=False, say=lambda _: None)
    assert mode.startswith("replay because pycuda is not installed (NVIDIA H100")


def test_doctor_prints_every_piece_and_the_mode() -> None:
    out = io.StringIO()
    assert cli.main(["doctor", "--no-llm"], stdout=out) == 0
    text = out.getvalue()
    for name in ("nvcc:", "GPU:", "pycuda:", "CUPTI:", "ncu:"):
        assert name in text
    assert "\ntuning: live on " in text or "\ntuning: replay because " in text
    for line in text.splitlines():
        if line.startswith("missing"):
            block = text.split(line, 1)[1].splitlines()[:3]
            assert any("install:" in b for b in block), line


def test_panel_header_says_replay_because_without_pycuda(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    if doctor.check_pycuda().ok:
        pytest.skip("pycuda is installed here: the runner may be live")
    from workbench import Workbench
    from workbench.engine.discovery import no_live_reason

    reason = no_live_reason()  # the one reason (a missing driver is named before pycuda)
    assert reason is not None
    wb = Workbench(ROOT / "sample_kernels" / "silu_and_mul", store=tmp_path / "s.sqlite")
    assert wb.runner_description.startswith(f"replay because {reason.text}")
    assert "replay of NVIDIA H100" in wb.runner_description
