"""Parameters validate their own definitions and values, and round-trip through dicts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.core.errors import ParameterError
from workbench.core.params import Choice, IntRange, Parameter, Pow2Range, parameter_from_dict
from workbench.core.records import Value


def test_int_range_values_and_validation() -> None:
    p = IntRange("ITEMS", 2, 10, step=4, description="items per thread")
    assert p.values() == (2, 6, 10)
    assert p.default == 2 and p.size == 3 and p.is_numeric
    assert p.validate(6) == 6 and p.validate(np.int64(10)) == 10
    assert p.index(10) == 2
    for bad in (4, 12, True, "6", 6.0):
        with pytest.raises(ParameterError) as info:
            p.validate(bad)
        assert info.value.details["name"] == "ITEMS"
        assert info.value.details["value"] == bad
        assert "int 2..10 step 4" in info.value.details["expected"]


def test_pow2_range_values() -> None:
    p = Pow2Range("BLOCK", 32, 1024, default=128)
    assert p.values() == (32, 64, 128, 256, 512, 1024)
    assert p.index(128) == 2 and p.default == 128
    with pytest.raises(ParameterError):
        p.validate(96)
    with pytest.raises(ParameterError):
        p.validate(2048)


def test_choice_kinds() -> None:
    ints = Choice("VEC", (1, 2, 4, 8), default=8)
    strings = Choice("LAYOUT", ["row", "col"])  # type: ignore[arg-type]  # lists accepted
    flags = Choice("USE_SMEM", (False, True))
    assert ints.is_numeric and not strings.is_numeric and not flags.is_numeric
    assert strings.values() == ("row", "col") and strings.default == "row"
    assert flags.validate(True) is True
    with pytest.raises(ParameterError):
        flags.validate(1)  # 1 == True in Python, but a bool parameter wants a bool
    with pytest.raises(ParameterError):
        ints.validate(True)
    assert ints.index(4) == 2 and strings.index("col") == 1


@pytest.mark.parametrize(("make", "key"), [
    (lambda: IntRange("X", 1, True), "max"),
    (lambda: IntRange("X", 1.0, 4), "min"),  # type: ignore[arg-type]
    (lambda: IntRange("X", 5, 4), "max"),
    (lambda: IntRange("X", 1, 4, step=0), "step"),
    (lambda: IntRange("X", 1, 4, step=2), "max"),
    (lambda: IntRange("X", 1, 4, default=9), "default"),
    (lambda: IntRange("X", 1, 4, default=True), "default"),
    (lambda: IntRange("X", 1, 4, description=3), "description"),  # type: ignore[arg-type]
    (lambda: Pow2Range("B", 3, 8), "min"),
    (lambda: Pow2Range("B", 0, 8), "min"),
    (lambda: Pow2Range("B", 16, 8), "max"),
    (lambda: Choice("V", ()), "values"),
    (lambda: Choice("V", (1, True)), "values"),
    (lambda: Choice("V", (1, "a")), "values"),
    (lambda: Choice("V", (1, 2, 1)), "values"),
    (lambda: Choice("V", (1.5, 2.5)), "values"),  # type: ignore[arg-type]
    (lambda: Choice("V", ("a b",)), "values"),
    (lambda: Choice("V", ('x"\n#define Y',)), "values"),
    (lambda: Choice("V", (1, 2), default=3), "default"),
])
def test_bad_definitions_name_the_key(make: Any, key: str) -> None:
    with pytest.raises(ParameterError) as info:
        make()
    assert info.value.details["key"] == key
    assert info.value.details["expected"]


@pytest.mark.parametrize("name", ["1X", "int", "while", "WB_BLOCK", "_X", "X-Y", "", "min",
                                  "SCALAR_T", "ELEM_BYTES", "lambda", "True", "B K", "__global__"])
def test_bad_names(name: str) -> None:
    with pytest.raises(ParameterError) as info:
        IntRange(name, 1, 2)
    assert info.value.details["key"] == "name"


def test_parameters_are_frozen_and_hashable() -> None:
    p = IntRange("X", 1, 4)
    with pytest.raises(AttributeError):
        p.min = 2  # type: ignore[misc]
    assert {p: 1}[IntRange("X", 1, 4)] == 1
    assert IntRange("X", 1, 4) != IntRange("X", 1, 4, default=2)


def test_from_dict_defaults_to_first_value() -> None:
    p = parameter_from_dict("VEC", {"kind": "choice", "values": [4, 8]})
    assert p == Choice("VEC", (4, 8), default=4)
    assert parameter_from_dict("B", {"kind": "pow2", "min": 32, "max": 64}).default == 32


@pytest.mark.parametrize(("data", "key"), [
    ({"min": 1, "max": 2}, "kind"),
    ({"kind": "float", "min": 1, "max": 2}, "kind"),
    ({"kind": "int", "min": 1, "max": 2, "maximum": 3}, "maximum"),
    ({"kind": "int", "min": 1}, "max"),
    ({"kind": "int", "min": True, "max": 2}, "min"),
    ({"kind": "int", "min": 1, "max": "2"}, "max"),
    ({"kind": "int", "min": 1, "max": 2, "step": 1.0}, "step"),
    ({"kind": "pow2", "min": 32, "max": 64, "step": 2}, "step"),
    ({"kind": "choice", "values": 4}, "values"),
    ({"kind": "choice"}, "values"),
    ({"kind": "choice", "values": [1, 2], "default": [1]}, "default"),
    ({"kind": "choice", "values": [1, 2], "description": 5}, "description"),
])
def test_from_dict_rejects_bad_data_naming_the_key(data: dict[str, Any], key: str) -> None:
    with pytest.raises(ParameterError) as info:
        parameter_from_dict("P", data)
    assert info.value.details["key"] == key
    assert key in info.value.message


def _choice_with_default(values: Sequence[Value]) -> st.SearchStrategy[Parameter]:
    return st.sampled_from(list(values)).map(
        lambda default: Choice("P", tuple(values), default=default))


def _parameters() -> st.SearchStrategy[Parameter]:
    ints = st.tuples(st.integers(-50, 50), st.integers(0, 20), st.integers(1, 5)).map(
        lambda t: IntRange("P", t[0], t[0] + t[1] * t[2], step=t[2], description="d"))
    pow2 = st.tuples(st.integers(0, 12), st.integers(0, 6)).map(
        lambda t: Pow2Range("P", 2 ** t[0], 2 ** (t[0] + t[1])))
    int_choice = st.lists(st.integers(-1000, 1000), min_size=1, max_size=8, unique=True)
    str_choice = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
                          min_size=1, max_size=5, unique=True)
    bool_choice = st.sampled_from([(False, True), (True, False), (True,)])
    choice = st.one_of(int_choice, str_choice, bool_choice).flatmap(_choice_with_default)
    return st.one_of(ints, pow2, choice)


@given(_parameters())
def test_dict_round_trip(p: Parameter) -> None:
    again = parameter_from_dict(p.name, p.to_dict())
    assert again == p
    assert again.values() == p.values()
    assert p.default in p.values()
    for i, value in enumerate(p.values()):
        assert p.validate(value) == value
        assert p.index(value) == i
