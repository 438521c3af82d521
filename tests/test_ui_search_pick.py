"""The Search tab's copy button exports the stored pick (what the header and JSON exports
write), not the search's fastest trial; without a confirmed pick it exports the search's
best and says that no confirmation decided it. The panel's fake backend runs the tune on
the panel's worker thread (tests/test_ui_panel.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_ui_panel import FakeBackend, _wait

from workbench.core.picks import PickRecord
from workbench.core.records import Config
from workbench.ui.search_tab import pick_defines

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

pytestmark = pytest.mark.timeout(30)


def _pick(decided: str, reason: str = "") -> PickRecord:
    # BLOCK 64 VEC 2 is not the fake search's fastest trial (BLOCK 32 VEC 4)
    return PickRecord(id="p1", kernel="fake_kernel", template_version="fake_kernel-000000000000",
                      shape="s", dtype="bf16", config=Config(BLOCK=64, VEC=2),
                      decided=decided, rule="best geometric mean over conditions",
                      median_us=5.123, device="FAKE", fallback_reason=reason)


@pytest.fixture
def panel_and_backend() -> Iterator[tuple[Any, FakeBackend]]:
    from workbench.ui.panel import WorkbenchPanel

    backend = FakeBackend()
    panel = WorkbenchPanel(backend)  # type: ignore[arg-type]
    yield panel, backend
    panel.close()


def _run(panel: Any) -> str:
    panel.budget.value = 20
    panel.launch_button.click()
    _wait(lambda: "finished (budget)" in panel.header.value)
    panel.search.push()  # the push after the end: the run state the pick is read for
    return str(panel.copy_button.text)


def test_the_copy_button_exports_the_stored_confirmed_pick(
        panel_and_backend: tuple[Any, FakeBackend]) -> None:
    panel, backend = panel_and_backend
    backend.stored_pick = _pick("confirmed")
    text = _run(panel)
    assert "#define BLOCK 64" in text and "#define VEC 2" in text
    assert "#define BLOCK 32" not in text  # the search's fastest trial is not the answer
    assert "confirmed pick (best geometric mean over conditions)" in text
    assert "5.123 us" in text


def test_without_a_stored_pick_it_exports_the_search_best_and_says_so(
        panel_and_backend: tuple[Any, FakeBackend]) -> None:
    panel, _ = panel_and_backend
    text = _run(panel)
    assert "#define BLOCK 32" in text and "#define VEC 4" in text  # the fastest fake trial
    assert "the search's best, not confirmed: no tune stored a pick yet" in text


def test_a_stored_fallback_says_why_no_confirmation_ran(
        panel_and_backend: tuple[Any, FakeBackend]) -> None:
    panel, backend = panel_and_backend
    backend.stored_pick = _pick("search-best", "confirmation not asked for (confirm=0)")
    text = _run(panel)
    # the table's fastest trial (fresher than a fallback read once), with the stored reason
    assert "#define BLOCK 32" in text
    assert "not confirmed: confirmation not asked for (confirm=0)" in text


def test_the_pick_is_read_once_per_run_state(
        panel_and_backend: tuple[Any, FakeBackend]) -> None:
    panel, backend = panel_and_backend
    reads: list[tuple[str, str]] = []
    stored = _pick("confirmed")

    def pick(shape: str, dtype: str) -> PickRecord:
        reads.append((shape, dtype))
        return stored

    backend.pick = pick  # type: ignore[method-assign]
    _run(panel)
    before = len(reads)
    for _ in range(5):
        panel.search.push()
    assert len(reads) == before  # pushes of one run state read no store


def test_pick_defines_is_one_line_per_parameter() -> None:
    lines = pick_defines(_pick("confirmed")).splitlines()
    assert lines[0].startswith("// s bf16: 5.123 us, confirmed pick")
    assert lines[1:] == ["#define BLOCK 64", "#define VEC 2"]
