"""The one #define renderer: one spelling, checked names and values, one home."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.core.defines import DefineError, define_lines, define_value
from workbench.core.errors import TemplateError

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1] / "workbench"


def test_values_are_spelt_one_way() -> None:
    assert define_lines([("BLOCK", 256), ("FAST", True), ("SLOW", False), ("HINT", "ldg")]) == [
        "#define BLOCK 256", "#define FAST 1", "#define SLOW 0", "#define HINT ldg"]
    assert define_lines([("N", -3)], guarded=True) == ["#ifndef N", "#define N -3", "#endif"]
    assert define_value(2**63 - 1) == str(2**63 - 1)


@pytest.mark.parametrize(("name", "value"), [
    ("BLOCK\n#include <x>", 1), ("__X", 1), ("class", 1), ("NAN", 1),
    ("BLOCK", "1; system()"), ("BLOCK", 2**63), ("BLOCK", 1.5), ("BLOCK", "__x"),
])
def test_hostile_names_and_values_are_refused(name: str, value: object) -> None:
    with pytest.raises(DefineError) as info:
        define_lines([(name, value)])  # type: ignore[list-item]
    assert isinstance(info.value, TemplateError) and info.value.expected


def test_the_renderer_has_one_home() -> None:
    """No other module spells a parameter's ``#define`` (the templater's rewrites of the
    user's own macros and the dispatch header's include guard are not parameter values)."""
    pattern = re.compile(r"""f["']#define \{(?:key|k|p\.name|name)\} """)
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted(ROOT.rglob("*.py"))
             if p.name != "defines.py"
             for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
