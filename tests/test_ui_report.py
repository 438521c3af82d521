"""Report notebooks: static, valid, readable without a kernel; the Workbench wiring."""

from __future__ import annotations

import base64
from pathlib import Path
from types import ModuleType

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.report import ReportContent, build_report, write_report

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def nbformat() -> ModuleType:
    """nbformat, imported by the tests that read notebooks rather than at collection: its
    import costs ~2 CPU s (jsonschema builds its IRI grammar), which every pytest-xdist
    worker would pay although one runs these tests."""
    import nbformat as module
    return module


def _t(us: float | None, block: int) -> TrialResult:
    timing = (Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=9,
                     rse_median_pct=0.4, l2_flushed=True) if us else None)
    return TrialResult(config=Config(BLOCK=block), shape="decode", dtype="bf16",
                       status=Status.OK if us else Status.LAUNCH_ERROR,
                       reason="" if us else "too many resources requested", timing=timing)


def _content() -> ReportContent:
    return ReportContent(
        kernel="k", device="replay of X recording from 2026-01-01",
        baseline_source="int a = 1;\n", template_source="int a = BLOCK;\n",
        params=[{"name": "BLOCK", "kind": "pow2", "min": 32, "max": 256, "default": 64,
                 "description": "threads"}],
        constraints=["BLOCK <= 1024"],
        reviews=[{"decision": "approved", "reviewer": "ann", "time": "t", "note": "ok",
                  "approved_text_sha256": "ab" * 32}],
        results=[_t(5.0, 32), _t(4.0, 64), _t(None, 256)],
        baseline_us={"decode/bf16": 8.0})


def test_report_is_static_and_complete(tmp_path: Path, nbformat: ModuleType) -> None:
    path = write_report(tmp_path / "r.ipynb", _content(), sign=False)
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "**4.000 µs**" in md and "2.00× the baseline" in md
    assert "#define BLOCK 64" in md
    assert "| approved | ann |" in md
    assert "-int a = 1;" in md and "+int a = BLOCK;" in md
    outputs = [o["data"] for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    html = [d["text/html"] for d in outputs if "text/html" in d]
    assert any("wb-diff" in h for h in html)
    # Charts are PNG images: no script, nothing to trust, readable in any viewer.
    pngs = [base64.b64decode(d["image/png"]) for d in outputs if "image/png" in d]
    assert len(pngs) == 1 and pngs[0].startswith(b"\x89PNG")
    assert not any("<script" in h for h in html)
    assert any("too many resources" in h for h in html)  # results table keeps failures


@pytest.mark.replay
@pytest.mark.timeout(120)
def test_report_of_ten_thousand_recorded_trials_is_under_one_megabyte(
        tmp_path: Path, nbformat: ModuleType) -> None:
    from workbench.engine.recording import load_recording

    recs = sorted((ROOT / "sample_kernels" / "silu_and_mul" / "recordings").glob("*.json"))
    if not recs:
        pytest.skip("no recording of silu_and_mul committed")
    trials = [t for t in load_recording(recs[-1]).trials if (t.shape, t.dtype) == ("decode", "bf16")]
    results = [trials[i % len(trials)] for i in range(10_000)]
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    content = ReportContent(
        kernel="silu_and_mul", device="replay", baseline_source=folder.baseline.source,
        template_source=folder.template.source,
        params=[{"name": p.name, **p.to_dict()} for p in folder.template.params],
        constraints=[c.text for c in folder.template.constraints], reviews=[],
        results=results, baseline_us={"decode/bf16": 7.84})
    path = write_report(tmp_path / "big.ipynb", content, sign=False)
    assert path.stat().st_size < 1_000_000
    md = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    assert "Results (10000 trials — the 200 listed are the fastest" in md


def test_report_without_trials_is_still_valid(nbformat: ModuleType) -> None:
    content = _content()
    empty = ReportContent(**{**content.__dict__, "results": [], "reviews": []})
    nb = build_report(empty)
    nbformat.validate(nb)
    assert "No review recorded" in "\n".join(c.source for c in nb.cells)


@pytest.mark.timeout(60)
def test_workbench_review_and_report_use_the_store(tmp_path: Path, nbformat: ModuleType,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.api import Workbench
    from workbench.core.errors import ReviewError

    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jd"))
    wb = Workbench(ROOT / "sample_kernels" / "silu_and_mul", store=tmp_path / "s.sqlite",
                   reviewer="tester")
    with pytest.raises(ReviewError, match="needs a note"):
        wb.review("rejected", "")
    assert "approved" in wb.review("approved", "fine")
    assert "approved by tester" in wb.review_status()
    out = wb.report(tmp_path / "rep.ipynb", results=[])
    md = "\n".join(c.source for c in nbformat.read(out, as_version=4).cells)
    assert "| approved | tester |" in md and "silu_and_mul" in md
