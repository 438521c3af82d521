"""benchmarks/README.md is generated entirely from benchmarks/results/ and benchmarks/notes/
(python3 benchmarks/readme.py), and any result file under the schema is picked up."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import readme  # noqa: E402
import results_schema  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def test_the_committed_readme_is_what_the_generator_writes_byte_for_byte() -> None:
    assert (ROOT / "benchmarks" / "README.md").read_text() == readme.render()


def test_every_json_result_is_in_the_readme_with_the_command_that_regenerates_it() -> None:
    text = readme.render()
    for path in results_schema.result_files():
        rel = path.relative_to(results_schema.RESULTS).as_posix()
        assert f"`{rel}`" in text, rel
        if path.suffix == ".json" and rel not in results_schema.LEGACY:
            command = json.loads(path.read_text())["run"]["command"]
            assert f"`{command}`" in text, (rel, command)


def test_a_dropped_in_file_is_drawn_by_the_renderer_its_kind_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lead adds stage 1 and lab-latency results by dropping files in: no code change."""
    monkeypatch.setattr(results_schema, "RESULTS", tmp_path)
    monkeypatch.setattr(readme, "NOTES", tmp_path / "no-notes")
    stage1 = results_schema.result_path("corpus", "h100", "stage1-compute", "2026-11-27")
    kernel = {"kernel": "gemm_smem", "memory_bound": False, "ratio_templater_to_expert": 0.8,
              "speedup_templater": 1.6, "speedup_expert": 2.0,
              "templater": {"knobs": ["TILE", "UNROLL"], "propose": {"gate": "ok"}},
              "expert": {"propose": {"gate": "ok"}}}
    results_schema.write_result(stage1, results_schema.run_block(
        "stage1_corpus", "python benchmarks/stage1_corpus.py --set compute",
        device="NVIDIA H100 80GB HBM3", driver="580.159.04", cuda="13.0", date="2026-11-27"),
        {"set": "compute", "environment": {}, "kernels": [kernel]})
    lab = results_schema.result_path("panel", "cpu", "lab-latency", "2026-11-27")
    results_schema.write_result(lab, results_schema.run_block(
        "lab_latency", "python benchmarks/lab_latency.py", device="cpu", driver=None,
        cuda=None, date="2026-11-27"),
        {"alone": {"GET kernels": {"n": 40, "p50_ms": 20.1, "p99_ms": 57.3, "max_ms": 57.3}}})
    other = results_schema.result_path("corpus", "h100", "something-new", "2026-11-27")
    results_schema.write_result(other, results_schema.run_block(
        "brand_new_kind", "python benchmarks/new.py", device="d", driver=None, cuda=None,
        date="2026-11-27"), {"x": 1})
    text = readme.render()
    assert "| gemm_smem | 2: TILE, UNROLL | ok | 1.60 | 2.00 | 0.80 | — |" in text
    assert "`python benchmarks/stage1_corpus.py --set compute`" in text
    assert "| alone | GET kernels | 40 | 20.10 | 57.30 | 57.30 |" in text
    assert "### `brand_new_kind` results" in text and "`python benchmarks/new.py`" in text


def test_a_result_off_the_schema_stops_the_generator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results_schema, "RESULTS", tmp_path)
    bad = tmp_path / "peers" / "h100" / "peers-2026-11-27.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match='no top-level "run" object'):
        readme.render()
