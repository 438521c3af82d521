"""The range editor checks an edit the way tuning will: parse, constraints, launch limits and
a real nvcc compile of the corner configs an edit adds (skipped where nvcc is missing)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench.api import Workbench
from workbench.core.errors import CompilerNotFoundError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.engine.compiler import find_nvcc
from workbench.ui.edit_check import corner_configs, new_values
from workbench.ui.params_editor import ParamsEditor, edit_parameter

pytest.importorskip("ipywidgets")

ROOT = Path(__file__).resolve().parents[1]
SILU = ROOT / "sample_kernels" / "silu_and_mul"


def _sync(fn: Callable[[], None]) -> None:
    fn()


def _editor(wb: Workbench, applied: list[list[Any]]) -> ParamsEditor:
    """The editor as the panel builds it, with the compile check run on the caller's thread."""
    return ParamsEditor(wb.params, summarize=lambda ps: wb.summarize_space(ps, "decode", "bf16"),
                        on_change=lambda ps: (applied.append(list(ps)), wb.set_params(ps)),
                        check_compile=lambda b, a: wb.check_compile(b, a, "decode", "bf16"),
                        run_async=_sync)


@pytest.fixture
def wb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workbench:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cubins"))  # compile for real
    return Workbench(SILU, store=tmp_path / "s.sqlite")


def _needs_nvcc() -> None:
    try:
        find_nvcc()
    except CompilerNotFoundError:
        pytest.skip("nvcc is not installed")


def test_new_values_and_corners_are_the_added_values_only() -> None:
    folder = load_kernel_folder(SILU)
    params = list(folder.template.params)
    vec = next(p for p in params if p.name == "VEC_BYTES")
    edited = [edit_parameter(vec, {"values": "4, 8, 3"})[0] if p is vec else p for p in params]
    assert new_values(params, edited) == {"VEC_BYTES": (3,)}
    assert new_values(params, params) == {}
    corners, unreachable = corner_configs(folder.template.with_params(edited), edited,
                                          folder.env("decode", "bf16"), {"VEC_BYTES": (3,)})
    assert unreachable == [] and [(c.param, c.value) for c in corners] == [("VEC_BYTES", 3)]
    assert corners[0].config == {**folder.template.default_config(), "VEC_BYTES": 3}


@pytest.mark.timeout(60)
def test_vec_bytes_that_nvcc_rejects_is_refused_and_highlighted(wb: Workbench) -> None:
    _needs_nvcc()
    applied: list[list[Any]] = []
    editor = _editor(wb, applied)
    before = [p.to_dict() for p in wb.params]
    editor.set_text("VEC_BYTES", "values", "3, 5")
    # Constraints and launch limits let it through: only the compile can refuse it.
    assert "wb-space-error" not in editor.summary.value
    assert "static assertion" in editor.compile_status.value
    assert "VEC_BYTES = 3" in editor.compile_status.value and "not applied" in editor.compile_status.value
    assert editor.invalid_cells() == ["VEC_BYTES.values"]
    assert applied == [] and [p.to_dict() for p in wb.params] == before
    # Back to values that compile: the outline goes and the edit is applied.
    editor.set_text("VEC_BYTES", "values", "4, 8, 16, 2")
    assert editor.invalid_cells() == []
    assert "1 corner config with the new values compiled" in editor.compile_status.value
    assert next(p for p in applied[-1] if p.name == "VEC_BYTES").values() == (4, 8, 16, 2)


def test_bad_text_is_outlined_in_its_own_cell(wb: Workbench) -> None:
    applied: list[list[Any]] = []
    editor = _editor(wb, applied)
    editor.set_text("BLOCK_THREADS", "max", "100")
    assert editor.invalid_cells() == ["BLOCK_THREADS.max"]
    assert "power of two" in editor.summary.value
    box = editor.inputs["BLOCK_THREADS"]["max"]
    assert "power of two" in str(box.tooltip)
    editor.set_text("BLOCK_THREADS", "max", "256")
    assert editor.invalid_cells() == [] and applied  # shrinking needs no compile


def test_default_column_follows_the_edit(wb: Workbench) -> None:
    applied: list[list[Any]] = []
    editor = _editor(wb, applied)
    assert editor.defaults["BLOCK_THREADS"].value == "1024"
    editor.set_text("BLOCK_THREADS", "max", "256")
    assert "default is now 256" in editor.summary.value  # the nearest value still in range
    assert ">256<" in editor.defaults["BLOCK_THREADS"].value
    assert "wb-default-moved" in editor.defaults["BLOCK_THREADS"].value
    assert next(p for p in applied[-1] if p.name == "BLOCK_THREADS").default == 256
    editor.set_text("BLOCK_THREADS", "max", "1024")
    assert editor.defaults["BLOCK_THREADS"].value == "1024"


def test_an_edit_no_config_survives_is_refused_and_outlined(wb: Workbench) -> None:
    applied: list[list[Any]] = []
    editor = _editor(wb, applied)
    editor.set_text("VEC_BYTES", "values", "1")  # fails `VEC_BYTES >= elem_bytes` for bf16
    assert "wb-space-error" in editor.summary.value
    assert "VEC_BYTES &gt;= elem_bytes" in editor.summary.value
    assert editor.invalid_cells() == ["VEC_BYTES.values"] and applied == []


@pytest.mark.timeout(120)
def test_refused_edit_is_explained_beside_its_row_and_not_counted(wb: Workbench) -> None:
    """Issue 30 item 9: the refusal sits in the parameter's own row, says what was wrong in
    the compiler's words (not "(syntax)"), and the space count is the one still tuned."""
    _needs_nvcc()
    editor = _editor(wb, [])
    counted = editor.summary.value
    editor.set_text("VEC_BYTES", "values", "4, 8, 16, 3")
    beside = editor.row_messages["VEC_BYTES"].value
    assert "refused" in beside and "VEC_BYTES = 3" in beside and "static assertion" in beside
    assert "(syntax)" not in beside and "(syntax)" not in editor.compile_status.value
    assert all(m.value == "" for n, m in editor.row_messages.items() if n != "VEC_BYTES")
    size = re.search(r'class="wb-space-size"><b>([\d,]+)</b>', editor.summary.value)
    before = re.search(r'class="wb-space-size"><b>([\d,]+)</b>', counted)
    assert size and before and size.group(1) == before.group(1)  # 3 is not counted
    editor.set_text("VEC_BYTES", "values", "4, 8, 16")
    assert editor.row_messages["VEC_BYTES"].value == ""
