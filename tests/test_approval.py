"""One approval: one key (source + ranges + constraints + launch), one review record, one
version id, and the gate on the one tune path (pure and replay tiers, a real SQLite file)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from workbench.api import Workbench
from workbench.core.errors import ReviewError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.params import parameter_from_dict
from workbench.core.template import KernelTemplate
from workbench.engine.replay import ReplayRunner
from workbench.store.approval import (
    CURATED_REVIEWER,
    approval_key,
    record_review,
    require_approved,
    version_id,
)
from workbench.store.sqlite import SQLiteStore

SILU = Path(__file__).resolve().parents[1] / "sample_kernels" / "silu_and_mul"


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(SILU)


def _narrowed(template: KernelTemplate, keep: int = 2) -> KernelTemplate:
    """The same source with one range narrowed (what the panel's editor makes)."""
    first = template.params[0]
    values = list(first.values())[:keep]
    narrowed = parameter_from_dict(first.name, {"kind": "choice", "values": values,
                                                "default": values[0]})
    return template.with_params([narrowed, *template.params[1:]])


def test_the_key_covers_source_and_ranges(folder: KernelFolder) -> None:
    template = folder.template
    assert approval_key(template) == approval_key(template.with_params(template.params))
    narrowed = _narrowed(template)
    assert narrowed.source == template.source
    assert approval_key(narrowed) != approval_key(template)  # a range edit: a new key
    one_char = replace(template, source=template.source + " ")
    assert approval_key(one_char) != approval_key(template)
    assert version_id(folder.name, narrowed) == f"silu_and_mul-{approval_key(narrowed)[:12]}"


def test_the_gate(folder: KernelFolder, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    # the folder's curated template as shipped is approved with the folder
    assert require_approved(store, folder, folder.template).by == CURATED_REVIEWER
    edited = _narrowed(folder.template)
    with pytest.raises(ReviewError, match="not approved") as info:
        require_approved(store, folder, edited)
    assert info.value.details["version_id"] == version_id(folder.name, edited)
    assert require_approved(store, folder, edited, auto_approve=True).by == "auto_approve"
    record_review(store, folder.name, edited, "proposed", "agent")
    with pytest.raises(ReviewError):
        require_approved(store, folder, edited)  # proposed is not approved
    approved = record_review(store, folder.name, edited, "approved", "ana", "looks right")
    got = require_approved(store, folder, edited)
    assert got.review == approved and got.by == "ana"
    [stored] = [v for v in store.template_versions(folder.name)
                if v.id == version_id(folder.name, edited)]
    assert stored.params[edited.params[0].name]["values"] == list(edited.params[0].values())
    # an approval of one version never covers another: widen again, and it is needed again
    with pytest.raises(ReviewError):
        require_approved(store, folder, _narrowed(edited, keep=1))
    with pytest.raises(ReviewError, match="needs a note"):
        record_review(store, folder.name, edited, "rejected", "ben")
    record_review(store, folder.name, edited, "rejected", "ben", "unsafe tail handling")
    with pytest.raises(ReviewError, match="rejected by ben"):
        require_approved(store, folder, edited, auto_approve=True)  # a rejection always stops
    with pytest.raises(ReviewError, match="reviewer"):
        record_review(store, folder.name, edited, "approved", " ")


@pytest.mark.replay
def test_the_tune_path_needs_an_approval_of_edited_ranges(folder: KernelFolder,
                                                           tmp_path: Path) -> None:
    wb = Workbench(folder, store=tmp_path / "s.sqlite", runner=ReplayRunner(folder),
                   reviewer="ana")
    assert "curated template" in wb.review_status()
    wb.set_params(list(_narrowed(folder.template).params))
    assert "not approved" in wb.review_status()
    with pytest.raises(ReviewError, match="not approved"):
        wb.tune("decode", "bf16", "random", budget=4, confirm=0)
    assert wb.store.count_trials() == 0  # refused before any measurement
    assert wb.tune("decode", "bf16", "random", budget=4, confirm=0,
                   auto_approve=True).evaluated == 4
    text = wb.review("approved", "narrowed on purpose")
    assert text.startswith(f"approved {version_id(folder.name, wb.template)} by ana")
    assert "approved by ana" in wb.review_status()
    assert wb.tune("decode", "bf16", "random", budget=6, confirm=0).evaluated == 6
