"""Code from data: ``workbench dispatch`` copies names and values from a recording, a store
row, kernel.toml or the command line into a C++ header, JSON and a Python module. A hostile
name or an out-of-range value is refused before anything is built or written: exit 2, one
line per problem naming the key, the value and where it came from, no traceback, no file.

Inputs are real: a trimmed copy of the committed fused_add_rmsnorm recording with one trial
rewritten, a real SQLite store with one row's config_key rewritten in SQL, a copied kernel
folder with one kernel.toml key planted; the CLI runs in process (and once as a subprocess).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench.cli import main
from workbench.core.records import Config, TrialResult
from workbench.store.base import Provenance
from workbench.store.sqlite import SQLiteStore

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "sample_kernels" / "fused_add_rmsnorm"
RECORDING = next((KERNEL / "recordings").glob("*.json"))
SHAPES = ("small", "decode")
PROV = Provenance("d" * 64, "nvcc 13.0", "-O3", "sm_90a", "planted", "0")

INJECTIONS = ['; static int x = std::system("id");', "a b", "a\n", "VEC\n", "/*", "*/", "//",
              "é", "ключ", "VEC\u202e", "", "x" * 300, "a-b", "1abc", "a\x00b", "__x", "_X",
              "a__b", 'a"', "a'", "NAN", "M_PI", "INT_MAX", "linux", "errno"]
KEYWORDS = ["class", "new", "def", "None", "True", "int", "math", "and", "not", "or", "xor",
            "return", "lambda", "match", "struct", "template", "operator", "delete",
            "static", "const", "wb_want", "wb_best", "dispatch", "CONFIGS", "SIZES", "max",
            "fused_add_rmsnorm_configs", "dispatch_fused_add_rmsnorm"]
VALUES: list[Any] = [10**30, -(10**30), 2**31, -(2**31) - 1, 1.5, "12", float("nan"),
                     float("inf"), True, None, "=hidden"]
SIZE_NAMES = ["class", "new", "def", "None", "int", "math", "and", "not", "return", "lambda",
              "max", "wb_best", "dispatch_fused_add_rmsnorm", "tokens2\n"]


@pytest.fixture(scope="module")
def trimmed() -> dict[str, Any]:
    """The committed recording cut to a few ok bf16 trials of two shapes."""
    data = json.loads(RECORDING.read_text())
    keep: list[dict[str, Any]] = []
    for shape in SHAPES:
        keep += [t for t in data["trials"] if t["shape"] == shape and t["dtype"] == "bf16"
                 and t["status"] == "ok"][:4]
    return {**data, "trials": keep, "confirmed": [],
            "baseline": [b for b in data["baseline"] if b["shape"] in SHAPES]}


def write_recording(tmp_path: Path, data: dict[str, Any],
                    plant: Callable[[dict[str, Any]], None] | None = None) -> Path:
    copy = json.loads(json.dumps(data))
    if plant is not None:
        plant(copy["trials"][1])  # a small-shape trial
    path = tmp_path / "planted.json"
    path.write_text(json.dumps(copy))  # NaN / Infinity written as JSON's extensions
    return path


def dispatch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["dispatch", *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def assert_refused(code: int, text: str, out_dir: Path, *needles: str) -> None:
    assert code == 2, text
    assert "Traceback" not in text
    assert "dispatch refused" in text, text
    for needle in needles:
        assert needle in text, (needle, text)
    assert not out_dir.exists() or not any(out_dir.iterdir())


def replace_key(key: str) -> Callable[[dict[str, Any]], None]:
    def plant(trial: dict[str, Any]) -> None:
        trial["config"][key] = trial["config"].pop("VEC_BYTES")
    return plant


@pytest.mark.parametrize("key", INJECTIONS + KEYWORDS)
def test_hostile_config_key_in_a_recording_is_refused(
        key: str, trimmed: dict[str, Any], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    rec = write_recording(tmp_path, trimmed, replace_key(key))
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(KERNEL), "--shapes", ",".join(SHAPES), "--dtype",
                          "bf16", "--replay", str(rec), "--out", str(out))
    assert_refused(code, text, out, f"recording {rec}: trials[1].config", repr(key)[:60])


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_out_of_range_config_value_in_a_recording_is_refused(
        value: Any, trimmed: dict[str, Any], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    def plant(trial: dict[str, Any]) -> None:
        trial["config"]["BLOCK_THREADS"] = value
    rec = write_recording(tmp_path, trimmed, plant)
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(KERNEL), "--shapes", ",".join(SHAPES), "--dtype",
                          "bf16", "--replay", str(rec), "--out", str(out))
    assert_refused(code, text, out, "trials[1].config", "parameter 'BLOCK_THREADS'",
                   repr(value), "a C++ int")


def planted_store(tmp_path: Path, trimmed: dict[str, Any], config: dict[str, Any]) -> Path:
    """A real store holding the trimmed trials, one row's config rewritten in SQL."""
    path = tmp_path / "planted.sqlite"
    store = SQLiteStore(path)
    session = store.create_session("fused_add_rmsnorm", notes="tune")
    for t in trimmed["trials"]:
        store.record_trial(TrialResult.from_dict(t), PROV, session.id)
    del store
    with sqlite3.connect(path) as db:
        rowid, text = db.execute("SELECT id, result_json FROM trials WHERE shape = 'small' "
                                 "ORDER BY id LIMIT 1").fetchone()
        result = {**json.loads(text), "config": config}
        db.execute("UPDATE trials SET config_key = ?, result_json = ? WHERE id = ?",
                   (json.dumps(config, sort_keys=True), json.dumps(result), rowid))
    return path


STORE_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "injected key": ({"BLOCK_THREADS": 32, '; static int x = std::system("id");': 1},
                     "std::system"),
    "keyword key": ({"BLOCK_THREADS": 32, "class": 1}, "'class'"),
    "newline key": ({"BLOCK_THREADS": 32, "VEC\n": 1}, "'VEC\\n'"),
    "huge value": ({"BLOCK_THREADS": 10**30}, str(10**30)),
    "float value": ({"BLOCK_THREADS": 1.5}, "1.5"),
    "string value": ({"BLOCK_THREADS": "12"}, "'12'"),
    "bool value": ({"BLOCK_THREADS": True}, "True"),
    "NaN value": ({"BLOCK_THREADS": float("nan")}, "nan"),
}


@pytest.mark.parametrize("case", list(STORE_CASES))
def test_hostile_store_row_is_refused_naming_the_store_and_session(
        case: str, trimmed: dict[str, Any], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    config, needle = STORE_CASES[case]
    store = planted_store(tmp_path, trimmed, config)
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(KERNEL), "--shapes", ",".join(SHAPES), "--dtype",
                          "bf16", "--store", str(store), "--out", str(out))
    assert_refused(code, text, out, f"store {store}", "session ", needle)


def kernel_with(tmp_path: Path, edit: Callable[[str], str]) -> Path:
    folder = tmp_path / "fused_add_rmsnorm"
    shutil.copytree(KERNEL, folder, ignore=shutil.ignore_patterns("recordings", "__pycache__"))
    toml = folder / "kernel.toml"
    toml.write_text(edit(toml.read_text()))
    return folder


def add_size(name: str, value: str = "1") -> Callable[[str], str]:
    quoted = json.dumps(name)  # a TOML basic string key
    return lambda text: re.sub(r"(hidden = \d+) \}", lambda m: f"{m[1]}, {quoted} = {value} }}",
                               text)


@pytest.mark.parametrize("name", SIZE_NAMES, ids=repr)
def test_hostile_size_name_in_kernel_toml_is_refused(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = kernel_with(tmp_path, add_size(name))
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(folder), "--shapes", ",".join(SHAPES), "--dtype", "bf16",
                          "--replay", str(RECORDING), "--out", str(out))
    if text.startswith("error: kernel folder"):
        # the kernel folder loader refuses it first (a name ending in a newline): a clean
        # error naming the file and the key, nothing written
        assert code == 2 and "Traceback" not in text, text
        assert "kernel.toml: shapes." in text and name.strip() in text, text
        assert not out.exists() or not any(out.iterdir())
        return
    assert_refused(code, text, out, f"{folder}/kernel.toml", "shapes.small.", repr(name))


def test_huge_size_in_kernel_toml_is_refused(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    folder = kernel_with(tmp_path, add_size("batch", str(10**30)))
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(folder), "--shapes", ",".join(SHAPES), "--dtype", "bf16",
                          "--replay", str(RECORDING), "--out", str(out))
    assert_refused(code, text, out, "shapes.small.batch", str(10**30), "long long")


@pytest.mark.parametrize("name", ["class", "fused_add_rmsnorm\n"], ids=repr)
def test_hostile_kernel_name_is_refused(name: str, trimmed: dict[str, Any], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    toml_name = json.dumps(name)  # a TOML basic string
    folder = kernel_with(tmp_path, lambda t: t.replace('name = "fused_add_rmsnorm"',
                                                       f"name = {toml_name}", 1))
    rec = write_recording(tmp_path, {**trimmed, "kernel": name})
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(folder), "--shapes", ",".join(SHAPES), "--dtype", "bf16",
                          "--replay", str(rec), "--out", str(out))
    if text.startswith("error: kernel folder"):
        # the kernel folder loader refuses it first (a trailing newline): clean, names the key
        assert code == 2 and "Traceback" not in text and "kernel.toml: name" in text, text
        assert not out.exists() or not any(out.iterdir())
        return
    assert_refused(code, text, out, f"{folder}/kernel.toml: name", repr(name))


def test_huge_swept_size_is_refused_naming_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(KERNEL), "--shape", "decode", "--sweep",
                          f"tokens=1,{10**30}", "--dtype", "bf16", "--replay", str(RECORDING),
                          "--out", str(out))
    assert_refused(code, text, out, "the command line (--sweep)", str(10**30))


@pytest.mark.parametrize("tolerance", ["nan", "inf", "-1"])
def test_non_finite_tolerance_is_refused(tolerance: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code, text = dispatch(capsys, str(KERNEL), "--shapes", ",".join(SHAPES), "--dtype", "bf16",
                          "--replay", str(RECORDING), "--tolerance", tolerance,
                          "--out", str(out))
    assert_refused(code, text, out, "--tolerance")


def test_exports_are_not_replaced_without_force_nor_through_a_symlink(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = [str(KERNEL), "--shapes", ",".join(SHAPES), "--dtype", "bf16", "--replay",
            str(RECORDING), "--out", str(out)]
    assert dispatch(capsys, *argv)[0] == 0
    header = out / "fused_add_rmsnorm_bf16_dispatch.h"
    header.write_text("// mine\n")
    code, text = dispatch(capsys, *argv)
    assert code == 2 and "exists" in text and "Traceback" not in text, text
    assert header.read_text() == "// mine\n"
    assert dispatch(capsys, *argv, "--force")[0] == 0
    assert "dispatch_fused_add_rmsnorm" in header.read_text()
    outside = tmp_path / "victim.rc"
    outside.write_text("safe")
    (out / "fused_add_rmsnorm_bf16_dispatch.py").unlink()
    (out / "fused_add_rmsnorm_bf16_dispatch.py").symlink_to(outside)
    code, text = dispatch(capsys, *argv, "--force")
    assert code == 2 and "symlink" in text and "Traceback" not in text, text
    assert outside.read_text() == "safe"


def test_an_existing_file_as_out_is_a_clean_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.write_text("not a folder")
    code, text = dispatch(capsys, str(KERNEL), "--shapes", ",".join(SHAPES), "--dtype", "bf16",
                          "--replay", str(RECORDING), "--out", str(out / "sub"))
    assert code == 2 and "Traceback" not in text and "--out" in text, text
    assert out.read_text() == "not a folder"


def test_the_real_cli_refuses_an_injected_key_without_a_traceback(
        trimmed: dict[str, Any], tmp_path: Path) -> None:
    rec = write_recording(tmp_path, trimmed, replace_key('; static int x = std::system("id");'))
    out = tmp_path / "out"
    ran = subprocess.run([sys.executable, "-m", "workbench.cli", "dispatch", str(KERNEL), "--shapes",
                          ",".join(SHAPES), "--dtype", "bf16", "--replay", str(rec), "--out",
                          str(out)], capture_output=True, text=True, timeout=100,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr and "std::system" in ran.stderr
    assert not out.exists()


def test_a_bool_value_is_kept_for_a_bool_knob_only() -> None:
    from workbench.core.dispatch import config_problems

    assert config_problems(Config(FLAG=True), "x", bool_params={"FLAG"}) == []
    assert config_problems(Config(FLAG=True), "x", bool_params=set())
