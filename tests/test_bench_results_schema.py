"""benchmarks/results follows one schema (benchmarks/results_schema.py) and nothing under
benchmarks/ or gpu_checks/ is named after a work session."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import results_schema  # noqa: E402

pytestmark = pytest.mark.timeout(60)

SESSION_NAME = re.compile(r"session[0-9]|s1[01]_|session 1[01]", re.IGNORECASE)


def test_every_result_file_sits_at_area_device_what_date() -> None:
    files = results_schema.result_files()
    assert len(files) > 100
    bad = {p.relative_to(ROOT).as_posix(): results_schema.path_problems(p) for p in files}
    assert {k: v for k, v in bad.items() if v} == {}


def test_every_json_result_opens_with_its_run_block() -> None:
    bad = {}
    for path in results_schema.result_files():
        if path.suffix == ".json":
            problems = results_schema.doc_problems(path, json.loads(path.read_text()))
            if problems:
                bad[path.relative_to(ROOT).as_posix()] = problems
    assert bad == {}


def test_the_schema_refuses_what_it_should() -> None:
    res = results_schema.RESULTS
    assert results_schema.path_problems(res / "h100" / "session11" / "peers.json")
    assert results_schema.path_problems(res / "peers" / "h100" / "peers_tune-2026-11-24.json")
    assert results_schema.path_problems(res / "peers" / "h100" / "peers-tune.json")
    good = res / "peers" / "h100" / "peers-tune-2026-11-24.json"
    assert results_schema.path_problems(good) == []
    run = results_schema.run_block("peers_tune", "python x.py", device="d", driver=None,
                                   cuda=None, date="2026-11-24")
    assert results_schema.doc_problems(good, {"run": run, "rows": []}) == []
    assert results_schema.doc_problems(good, {"run": {**run, "date": "2026-11-25"}})
    assert results_schema.doc_problems(good, {"run": {**run, "command": ""}})
    assert results_schema.doc_problems(good, {"rows": []}) == ['no top-level "run" object']
    with pytest.raises(ValueError, match="not <what>-<YYYY-MM-DD>"):
        results_schema.result_path("peers", "h100", "Peers Tune", "2026-11-24")


def test_nothing_in_benchmarks_or_gpu_checks_is_named_after_a_session() -> None:
    named = [p.relative_to(ROOT).as_posix() for top in ("benchmarks", "gpu_checks")
             for p in (ROOT / top).rglob("*")
             if SESSION_NAME.search(p.name) and "__pycache__" not in p.parts]
    assert named == []
