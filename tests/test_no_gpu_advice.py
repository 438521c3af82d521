"""One stated reason for no live measurement, and advice that never sends a kernel without
a recording to ``--replay`` (issue 30): ``no_live_reason`` over injected driver, pycuda and
nvcc probes; ``workbench tune`` / ``agent`` on a kernel with and without a recording;
``doctor`` and ``lab`` stating the same reason the CLI states."""

from __future__ import annotations

import ctypes
import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from workbench.cli import main
from workbench.engine import discovery, doctor
from workbench.engine.discovery import NoLive, NoLiveReason, no_live_reason, tuning_mode_line

ROOT = Path(__file__).resolve().parents[1]
SILU = ROOT / "sample_kernels" / "silu_and_mul"
NO_DRIVER = NoLiveReason(NoLive.NO_DRIVER, "libcuda.so.1: cannot open shared object file")

pytestmark = pytest.mark.timeout(120)


class FakeLibcuda:
    """The few driver API calls the probe makes, answering with ``names`` devices."""

    def __init__(self, init_code: int = 0, names: tuple[str, ...] = ("NVIDIA H100 80GB HBM3",)
                 ) -> None:
        self.init_code, self.names = init_code, names

    def cuInit(self, flags: int) -> int:
        return self.init_code

    def cuDriverGetVersion(self, ref: Any) -> int:
        ref._obj.value = 13000
        return 0

    def cuDeviceGetCount(self, ref: Any) -> int:
        ref._obj.value = len(self.names)
        return 0

    def cuDeviceGet(self, ref: Any, index: int) -> int:
        ref._obj.value = index
        return 0

    def cuDeviceGetName(self, buffer: Any, size: int, device: ctypes.c_int) -> int:
        buffer.value = self.names[device.value].encode()
        return 0


def _no_library(name: str) -> Any:
    raise OSError(f"{name}: cannot open shared object file: No such file or directory")


def _found(name: str) -> object:
    return object()  # a module spec: pycuda "is installed"


def _absent(name: str) -> None:
    return None


def _nvcc_ok() -> NoLiveReason | None:
    return None


def _nvcc_missing() -> NoLiveReason | None:
    return NoLiveReason(NoLive.NO_NVCC, "nvcc not found in $PATH")


# --- the one reason, in its order -------------------------------------------------------


def test_no_driver_is_stated_before_a_missing_pycuda() -> None:
    reason = no_live_reason(load=_no_library, find_spec=_absent, nvcc=_nvcc_missing)
    assert reason is not None and reason.kind is NoLive.NO_DRIVER
    assert reason.text.startswith("no CUDA driver (libcuda.so.1") and "pycuda" not in reason.text


def test_a_driver_without_a_device_is_no_device() -> None:
    reason = no_live_reason(load=lambda _: FakeLibcuda(init_code=100), find_spec=_absent,
                            nvcc=_nvcc_ok)
    assert reason is not None and reason.kind is NoLive.NO_DEVICE and "no GPU" in reason.text
    empty = no_live_reason(load=lambda _: FakeLibcuda(names=()), find_spec=_found,
                           nvcc=_nvcc_ok)
    assert empty is not None and empty.kind is NoLive.NO_DEVICE and "0 devices" in empty.text


def test_an_unusable_driver_is_no_driver_with_its_code() -> None:
    reason = no_live_reason(load=lambda _: FakeLibcuda(init_code=35), find_spec=_found,
                            nvcc=_nvcc_ok)
    assert reason is not None and reason.kind is NoLive.NO_DRIVER and "error 35" in reason.text


def test_pycuda_then_nvcc_once_a_device_is_there() -> None:
    gpu = FakeLibcuda()
    pycuda = no_live_reason(load=lambda _: gpu, find_spec=_absent, nvcc=_nvcc_missing)
    assert pycuda is not None and pycuda.kind is NoLive.NO_PYCUDA
    nvcc = no_live_reason(load=lambda _: gpu, find_spec=_found, nvcc=_nvcc_missing)
    assert nvcc is not None and nvcc.kind is NoLive.NO_NVCC
    assert no_live_reason(load=lambda _: gpu, find_spec=_found, nvcc=_nvcc_ok) is None


def test_doctor_states_the_reason_no_live_reason_states() -> None:
    for load in (_no_library, lambda _: FakeLibcuda(init_code=100), lambda _: FakeLibcuda()):
        reason = no_live_reason(load=load, find_spec=_absent, nvcc=_nvcc_ok)
        checks = [doctor.Check("nvcc", True, "release 13.0", ""), doctor.check_gpu(load=load),
                  doctor.Check("pycuda", False, "not installed", "", doctor.PYCUDA_HINT,
                               discovery.pycuda_reason(_absent))]
        assert doctor.tuning_mode(checks) == tuning_mode_line(reason)


def test_this_machine_doctor_and_lab_state_the_same_reason_as_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reason = no_live_reason()
    if reason is None:
        pytest.skip("this machine measures live")
    from workbench.ui import lab

    out = io.StringIO()
    assert main(["doctor", "--no-llm"], stdout=out) == 0
    assert f"\ntuning: {tuning_mode_line(reason)}" in out.getvalue()
    if reason.kind is not NoLive.NO_PYCUDA:  # lab builds pycuda where only pycuda is missing
        assert lab.prepare_gpu(gpu_setup=False, say=lambda _: None) == tuning_mode_line(reason)
    folder = _user_kernel(tmp_path)
    assert main(["tune", str(folder), "--shape", "decode", "--store",
                 str(tmp_path / "wb.sqlite")], stdout=io.StringIO()) == 3
    assert reason.text in capsys.readouterr().err


# --- the advice: replay only what exists -------------------------------------------------


def _user_kernel(tmp_path: Path, *, recordings: bool = False) -> Path:
    """A copy of silu_and_mul as a user's own kernel: no recording unless asked."""
    folder = tmp_path / "mykernel"
    shutil.copytree(SILU, folder, ignore=None if recordings else
                    shutil.ignore_patterns("recordings"))
    return folder


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> NoLiveReason:
    """This machine as one with no CUDA driver, whatever it has."""
    monkeypatch.setattr(discovery, "no_live_reason", lambda **_: NO_DRIVER)
    return NO_DRIVER


def _run(*argv: str) -> tuple[int, str]:
    return main(list(argv), stdout=io.StringIO()), ""


def _what_works(err: str, folder: Path) -> None:
    for command in ("check", "space", "propose"):
        assert f"workbench {command} {folder}" in err, command
    assert "GPU machine" in err


def test_tune_without_gpu_or_recording_says_what_works_and_never_replay(
        tmp_path: Path, no_gpu: NoLiveReason, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _user_kernel(tmp_path)
    code, _ = _run("tune", str(folder), "--shape", "decode", "--store",
                   str(tmp_path / "wb.sqlite"))
    err = capsys.readouterr().err
    assert code == 3
    assert no_gpu.text in err and "pycuda" not in err
    assert "--replay" not in err and "has no recordings" in err
    _what_works(err, folder)
    assert f"workbench tune {folder} --shape decode" in err


def test_tune_replay_of_a_kernel_with_no_recording_is_not_a_loop(
        tmp_path: Path, no_gpu: NoLiveReason, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _user_kernel(tmp_path)
    code, _ = _run("tune", str(folder), "--shape", "decode", "--replay", "--store",
                   str(tmp_path / "wb.sqlite"))
    err = capsys.readouterr().err
    assert code == 3 and "has no recordings" in err and no_gpu.text in err
    assert "drop --replay" not in err
    _what_works(err, folder)


def test_tune_replay_without_a_recording_on_a_gpu_machine_says_drop_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(discovery, "no_live_reason", lambda **_: None)
    folder = _user_kernel(tmp_path)
    code, _ = _run("tune", str(folder), "--shape", "decode", "--replay", "--store",
                   str(tmp_path / "wb.sqlite"))
    err = capsys.readouterr().err
    assert code == 3 and f"drop --replay:\n  workbench tune {folder} --shape decode" in err


def test_tune_without_gpu_advises_replay_where_the_recording_holds_the_template(
        tmp_path: Path, no_gpu: NoLiveReason, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _user_kernel(tmp_path, recordings=True)
    code, _ = _run("tune", str(folder), "--shape", "decode", "--store",
                   str(tmp_path / "wb.sqlite"))
    err = capsys.readouterr().err
    assert code == 3 and no_gpu.text in err
    assert f"workbench tune {folder} --shape decode --replay" in err
    assert "What works" not in err


def test_a_recording_of_another_template_is_not_advised(
        tmp_path: Path, no_gpu: NoLiveReason, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _user_kernel(tmp_path, recordings=True)
    template = folder / "template.cu"
    template.write_text(template.read_text() + "\n// edited by the user\n")
    code, _ = _run("tune", str(folder), "--shape", "decode", "--store",
                   str(tmp_path / "wb.sqlite"))
    err = capsys.readouterr().err
    assert code == 3 and "--replay" not in err and "does not hold this template" in err
    _what_works(err, folder)


def test_agent_without_gpu_or_recording_says_what_works(
        tmp_path: Path, no_gpu: NoLiveReason, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _user_kernel(tmp_path)
    code, _ = _run("agent", str(folder), "--store", str(tmp_path / "wb.sqlite"))
    err = capsys.readouterr().err
    assert code == 2 and no_gpu.text in err and "pycuda" not in err
    assert "--replay" not in err
    _what_works(err, folder)
