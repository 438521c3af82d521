"""``workbench tune`` says its budget in the panel's wording, "N more, M stored" (issue 30
item 8): the budget counts stored measurements, so a resumed tune names how many more."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from workbench.cli import main

SILU = str(Path(__file__).resolve().parents[1] / "sample_kernels" / "silu_and_mul")


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out)
    return code, out.getvalue()


@pytest.mark.replay
@pytest.mark.timeout(180)
def test_tune_budget_line_names_how_many_more_and_how_many_stored(tmp_path: Path) -> None:
    store = str(tmp_path / "wb.sqlite")
    code, text = _run("tune", SILU, "--shape", "decode", "--replay", "--budget", "12",
                      "--store", store)
    assert code == 0, text
    assert "budget 12: 12 more, 0 stored" in text, text
    code, text = _run("tune", SILU, "--shape", "decode", "--replay", "--budget", "20",
                      "--store", store)
    assert code == 0, text
    assert "budget 20: 8 more, 12 stored" in text, text
