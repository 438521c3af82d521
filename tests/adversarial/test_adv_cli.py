"""Command-line boundaries: bad options, bad stores and bad endpoints end cleanly, with the
reason, before any measurement."""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from adv_endpoint import ok_step, raw_step

import workbench.cli as cli
import workbench.cli.tune as cli_tune
from workbench.core.errors import StoreCorruptError, StoreError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.store.sqlite import SQLiteStore
from workbench.testing.openai_server import OpenAITranscriptServer
from workbench.testing.store_contract import PROVENANCE, sample_result

ROOT = Path(__file__).resolve().parents[2]
SILU = str(ROOT / "sample_kernels" / "silu_and_mul")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(list(argv), stdout=out)
    return code, out.getvalue()


BAD_OPTIONS = [
    (["tune", SILU, "--shape", "decode", "--top", "-2"], "--top", "below the minimum of 1"),
    (["tune", SILU, "--shape", "decode", "--top", "0"], "--top", "below the minimum of 1"),
    (["tune", SILU, "--shape", "decode", "--confirm", "-3"], "--confirm", "minimum of 0"),
    (["tune", SILU, "--shape", "decode", "--budget", "0"], "--budget", "minimum of 1"),
    (["tune", SILU, "--shape", "decode", "--budget", "1e9"], "--budget", "not an integer"),
    (["tune", SILU, "--shape", "decode", "--batch", "0"], "--batch", "minimum of 1"),
    (["tune", SILU, "--shape", "decode", "--patience", "-1"], "--patience", "minimum of 1"),
    (["tune", SILU, "--shape", "decode", "--max-time", "-1"], "--max-time", "positive"),
    (["tune", SILU, "--shape", "decode", "--max-time", "nan"], "--max-time", "positive"),
    (["tune", SILU, "--shape", "decode", "--max-time", "inf"], "--max-time", "positive"),
    (["space", SILU, "--shape", "decode", "--jobs", "-4"], "--jobs", "minimum of 1"),
    (["space", SILU, "--shape", "decode", "--jobs", "0"], "--jobs", "minimum of 1"),
    (["agent", SILU, "--iterations", "0"], "--iterations", "minimum of 1"),
    (["agent", SILU, "--llm-calls", "-1"], "--llm-calls", "minimum of 0"),
    (["agent", SILU, "--budget", "-5"], "--budget", "minimum of 1"),
    (["propose", SILU, "--llm-timeout", "0"], "--llm-timeout", "positive"),
    (["propose", SILU, "--llm-timeout", "-5"], "--llm-timeout", "positive"),
    (["propose", SILU, "--llm-timeout", "nan"], "--llm-timeout", "positive"),
    (["propose", SILU, "--llm-timeout", "abc"], "--llm-timeout", "not a number"),
    (["agent", SILU, "--llm-stage-timeout", "inf"], "--llm-stage-timeout", "positive"),
]


@pytest.mark.parametrize(("argv", "option", "words"), BAD_OPTIONS,
                         ids=[" ".join(a[0:1] + a[-2:]) for a, _, _ in BAD_OPTIONS])
def test_bad_option_is_refused_by_name(argv: list[str], option: str, words: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run(*argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and option in err and words in err and "Traceback" not in err


@pytest.mark.parametrize(("variable", "value"), [
    ("WORKBENCH_LLM_TIMEOUT", "abc"), ("WORKBENCH_LLM_TIMEOUT", "-1"),
    ("WORKBENCH_LLM_TIMEOUT", "0"), ("WORKBENCH_LLM_STAGE_TIMEOUT", "nan")])
def test_bad_deadline_variable_is_a_clean_error(variable: str, value: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WORKBENCH_MODEL", "m")
    monkeypatch.setenv("OPENAI_API_KEY", "k-123")
    monkeypatch.setenv(variable, value)
    code, _ = run("propose", SILU, "--store", str(tmp_path / "wb.sqlite"))
    err = capsys.readouterr().err
    # the one settings module's words: the variable, the value and what was expected
    assert code == 2 and f"{variable} = {value!r}; expected a positive number of seconds" in err
    assert "Traceback" not in err


# -- stores: every problem is reported before any measurement ---------------------------------

def _foreign(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE trials (who TEXT, what TEXT)")


def _not_sqlite(path: Path) -> None:
    path.write_bytes(b"PK\x03\x04 this is a zip file, not a database" * 10)


def _newer(path: Path) -> None:
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")


STORES: list[tuple[str, Any, str]] = [
    ("a directory", lambda p: p.mkdir(), "is a directory"),
    ("a missing directory", None, "does not exist"),
    ("/dev/null", None, "not a regular file"),
    ("a foreign schema", _foreign, "foreign schema: table trials has columns ['who', 'what']"),
    ("not a database", _not_sqlite, "is not a readable SQLite database"),
    ("a newer schema", _newer, "schema version 99"),
    ("a fifo", lambda p: os.mkfifo(p), "not a regular file"),
]


@pytest.mark.parametrize(("case", "make", "words"), STORES, ids=[s[0] for s in STORES])
def test_bad_store_is_reported_before_any_measurement(case: str, make: Any, words: str,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wb.sqlite"
    if case == "a missing directory":
        path = tmp_path / "no" / "such" / "dir" / "wb.sqlite"
    elif case == "/dev/null":
        path = Path("/dev/null")
    else:
        make(path)

    def no_runner(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a runner was created before the store was checked")

    monkeypatch.setattr(cli_tune, "runner_for", no_runner)
    code, out = run("tune", SILU, "--shape", "decode", "--replay", "--store", str(path))
    err = capsys.readouterr().err
    assert code == 2 and words in err and out == "" and "Traceback" not in err


def test_tampered_row_names_the_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wb.sqlite"
    with SQLiteStore(path) as store:
        store.record_trial(sample_result(), PROVENANCE)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE trials SET result_json = '{\"config\": 5'")
    with SQLiteStore(path) as store, pytest.raises(StoreCorruptError) as info:
        store.trials()
    assert "row 1 of trials does not read back" in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files anyway")
@pytest.mark.parametrize("what", ["file", "directory"])
def test_read_only_store(what: str, tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    SQLiteStore(path).close()
    (path if what == "file" else tmp_path).chmod(0o555 if what == "directory" else 0o444)
    try:
        with pytest.raises(StoreError, match="writ"):
            SQLiteStore(path)
    finally:
        tmp_path.chmod(0o755)
        path.chmod(0o644)


@pytest.mark.parametrize(("message", "words"), [
    ("attempt to write a readonly database", "read-only file, directory or mount"),
    ("database or disk is full", "the disk (or the file-size limit) is full"),
    ("unable to open database file", "check that its directory exists"),
    ("disk I/O error", "I/O error"),
    ("table trials has no column named x", "foreign schema"),
])
def test_sqlite_failures_map_to_store_errors(message: str, words: str, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "wb.sqlite")
    error = store._unusable(sqlite3.OperationalError(message), "record trial")
    store.close()
    assert isinstance(error, StoreError) and words in str(error) and "record trial" in str(error)


DISK_FULL = """
import resource, signal, sys
sys.path.insert(0, sys.argv[2])
from workbench.core.errors import StoreError
from workbench.store.sqlite import SQLiteStore
from workbench.testing.store_contract import PROVENANCE, sample_result
store = SQLiteStore(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
try:
    for block in range(100_000):
        store.record_trial(sample_result(block), PROVENANCE)
except StoreError as exc:
    print("STORE-ERROR", exc)
"""


def test_disk_full_is_a_store_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", DISK_FULL, str(tmp_path / "wb.sqlite"),
                           str(ROOT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "STORE-ERROR" in done.stdout and "full" in done.stdout, done.stdout


# -- propose: every outcome is stored, said and reflected in the exit status -----------------

def _proposal(source_prefix: str = "", **changes: Any) -> dict[str, Any]:
    proposal = TemplateProposal.from_template(load_kernel_folder(SILU).template)
    data = json.loads(proposal.model_dump_json())
    data["source"] = source_prefix + data["source"]
    data.update(changes)
    return data


PROPOSE_FAILURES = [
    ("invalid JSON twice", [ok_step("not json"), ok_step("still not json")], "no JSON object"),
    ("a 5 MB body", [raw_step("x" * 5_000_000)], "larger than 2097152 bytes"),
    ("a 200 with no choices", [raw_step({"choices": []})] * 2, "no choices"),
    ("HTML in a 200", [raw_step("<html>login</html>")] * 2, "not JSON"),
    ("a truncated reply", [ok_step('{"source": "', finish_reason="length")] * 2,
     "cut off at the token limit"),
    ("unknown fields", [ok_step({**_proposal(), "run_after": "curl evil"})] * 2,
     "Extra inputs are not permitted"),
    ("macro-injected parameter name", [ok_step(_proposal(parameters=[{
        "name": 'X\n#include "/etc/passwd"', "kind": "choice", "values": [1], "default": 1}]))]
     * 2, "is not a C identifier"),
    ("a refused include", [ok_step(_proposal('#include "/etc/passwd"\n'))] * 2, "refused"),
    ("a refusal", [ok_step(refusal="no")], "the model refused"),
    ("an unauthorized key", [raw_step({"error": "bad key"}, status=401)], "HTTP 401"),
]


@needs_nvcc
@pytest.mark.parametrize(("case", "steps", "words"), PROPOSE_FAILURES,
                         ids=[c[0] for c in PROPOSE_FAILURES])
def test_propose_says_why_and_exits_non_zero(case: str, steps: list[Any], words: str,
                                            tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    key = "propose-key-0123456789"
    store_path = tmp_path / "wb.sqlite"
    with OpenAITranscriptServer(steps) as server:
        monkeypatch.setenv("OPENAI_API_KEY", key)
        code, out = run("propose", SILU, "--model", "m", "--base-url", server.base_url,
                        "--store", str(store_path))
        sent = len(server.requests)
    last = out.strip().splitlines()[-1]
    assert code == 1 and last.startswith("propose failed: ") and words in last, out
    with SQLiteStore(store_path) as store:
        calls = [c for s in store.sessions() for c in store.llm_calls(s.id)]
    assert len(calls) == sent >= 1  # every request and raw reply is kept
    assert key not in json.dumps([(c.request, c.reply_text) for c in calls])
