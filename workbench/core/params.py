"""Tunable template parameters that validate and describe themselves.

Three kinds, each with one dict form (``to_dict`` / :func:`parameter_from_dict`) that feeds
kernel.toml, the prompt, the store and the UI:

* :class:`IntRange`  ``{"kind": "int", "min": 1, "max": 8, "step": 1}``
* :class:`Pow2Range` ``{"kind": "pow2", "min": 32, "max": 1024}``
* :class:`Choice`    ``{"kind": "choice", "values": [1, 2, 4, 8]}`` (ints, strings or bools)

A parameter's name becomes a ``#define`` in the rendered kernel and a name in constraint
expressions, so it must be a C identifier, not a C/C++ or Python keyword, not start with
``_`` or ``WB_`` and not clash with the names the renderer defines itself.
"""

from __future__ import annotations

import keyword
import numbers
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from workbench.core.errors import ParameterError
from workbench.core.expr import FUNCTIONS
from workbench.core.records import Value

__all__ = [
    "PARAMETER_KINDS",
    "Choice",
    "IntRange",
    "Parameter",
    "Pow2Range",
    "parameter_from_dict",
    "validate_parameter_name",
]

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_STRING_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_STRING_VALUE_CHARS = 64
MAX_VALUES_PER_PARAMETER = 1_000_000

C_KEYWORDS = frozenset((
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Bool", "_Complex", "_Imaginary",
    "bool", "true", "false", "class", "template", "typename", "namespace", "new", "delete",
    "this", "operator", "private", "public", "protected", "virtual", "friend", "using",
    "nullptr", "constexpr", "decltype", "static_assert", "alignas", "alignof", "noexcept",
    "thread_local", "__global__", "__device__", "__host__", "__shared__", "__constant__",
))
# Names the renderer (#define block) and the expression language already use.
RESERVED_NAMES = frozenset({"SCALAR_T", "ELEM_BYTES", "scalar_t", *FUNCTIONS})


def validate_parameter_name(name: object) -> str:
    """Return ``name`` if it can be a parameter name, else raise ParameterError saying why."""
    expected = ("a C identifier (letters, digits, '_'; starting with a letter), not a C or "
                "Python keyword, not starting with WB_, not one of "
                + ", ".join(sorted(RESERVED_NAMES)))
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ParameterError(f"invalid parameter name {name!r}; expected {expected}",
                             name=name, key="name", value=name, expected=expected)
    if (name.startswith("WB_") or name in C_KEYWORDS or keyword.iskeyword(name)
            or name in RESERVED_NAMES or name in ("True", "False", "None")):
        raise ParameterError(f"parameter name {name!r} is reserved; expected {expected}",
                             name=name, key="name", value=name, expected=expected)
    return name


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _as_int(value: object) -> object:
    """numpy integers -> int; bools stay bools (a bool is never accepted as an int)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        return int(value)
    return value


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _error(name: str, key: str, value: object, expected: str, what: str = "") -> ParameterError:
    what = what or f"{key}={value!r}"
    return ParameterError(f"parameter {name}: {what}; expected {expected}",
                          name=name, key=key, value=value, expected=expected)


# `default` may be omitted: the first value then becomes the default.
_FIRST: Any = object()


class Parameter(ABC):
    """A named tunable value with a finite, ordered set of values.

    Subclasses are frozen dataclasses with ``name``, ``default`` and ``description``.
    """

    kind: ClassVar[str]
    name: str
    default: Value
    description: str

    @abstractmethod
    def values(self) -> tuple[Value, ...]:
        """Every allowed value, in the stable order the search space enumerates."""

    @property
    def size(self) -> int:
        """Number of values."""
        return len(self.values())

    @property
    @abstractmethod
    def is_numeric(self) -> bool:
        """True when values are ordered numbers (ints); False for strings and bools."""

    @abstractmethod
    def validate(self, value: object) -> Value:
        """Return ``value`` if it is one of :meth:`values`, else raise ParameterError."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The dict form (``{"kind": ..., ...}``); :func:`parameter_from_dict` inverts it."""

    @abstractmethod
    def describe_values(self) -> str:
        """Short human text for the allowed values, e.g. ``pow2 32..1024``."""

    def index(self, value: object) -> int:
        """Position of ``value`` in :meth:`values` (ParameterError if not a member)."""
        return self._positions[self.validate(value)]

    @cached_property
    def _positions(self) -> dict[Value, int]:
        # Keys are (type, value) safe because values are homogeneous within a parameter.
        return {v: i for i, v in enumerate(self.values())}

    def _finish(self) -> None:
        """Shared checks after the subclass validated its own definition."""
        if self.default is _FIRST:
            object.__setattr__(self, "default", self.values()[0])
        else:
            try:
                self.validate(self.default)
            except ParameterError:
                raise _error(self.name, "default", self.default,
                             f"one of its values ({self.describe_values()})") from None
        if not isinstance(self.description, str):
            raise _error(self.name, "description", self.description, "a string")


@dataclass(frozen=True)
class IntRange(Parameter):
    """Integers ``min, min + step, ..., max`` (``max - min`` must be a multiple of step)."""

    kind: ClassVar[str] = "int"
    name: str
    min: int
    max: int
    step: int = 1
    default: int = _FIRST
    description: str = ""

    def __post_init__(self) -> None:
        validate_parameter_name(self.name)
        for key in ("min", "max", "step"):
            if not _is_int(getattr(self, key)):
                raise _error(self.name, key, getattr(self, key), "an integer")
        if self.step < 1:
            raise _error(self.name, "step", self.step, "an integer >= 1")
        if self.min > self.max:
            raise _error(self.name, "max", self.max, f"max >= min ({self.min})")
        if (self.max - self.min) % self.step:
            raise _error(self.name, "max", self.max,
                         f"min + k * step (e.g. {self.min + (self.max - self.min) // self.step * self.step})")
        count = (self.max - self.min) // self.step + 1
        if count > MAX_VALUES_PER_PARAMETER:
            raise _error(self.name, "max", self.max,
                         f"at most {MAX_VALUES_PER_PARAMETER} values (got {count})")
        self._finish()

    def values(self) -> tuple[int, ...]:
        return self._values

    @cached_property
    def _values(self) -> tuple[int, ...]:
        return tuple(range(self.min, self.max + 1, self.step))

    @property
    def is_numeric(self) -> bool:
        return True

    def validate(self, value: object) -> int:
        value = _as_int(value)
        if (_is_int(value) and isinstance(value, int) and self.min <= value <= self.max
                and (value - self.min) % self.step == 0):
            return value
        raise _error(self.name, "value", value, self.describe_values(), f"value {value!r}")

    def index(self, value: object) -> int:
        return (self.validate(value) - self.min) // self.step

    def describe_values(self) -> str:
        step = f" step {self.step}" if self.step != 1 else ""
        return f"int {self.min}..{self.max}{step}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "min": self.min, "max": self.max, "step": self.step,
                "default": self.default, "description": self.description}


@dataclass(frozen=True)
class Pow2Range(Parameter):
    """Powers of two ``min, 2*min, ..., max`` (both ends powers of two)."""

    kind: ClassVar[str] = "pow2"
    name: str
    min: int
    max: int
    default: int = _FIRST
    description: str = ""

    def __post_init__(self) -> None:
        validate_parameter_name(self.name)
        for key in ("min", "max"):
            value = getattr(self, key)
            if not _is_int(value) or not _is_pow2(value):
                raise _error(self.name, key, value, "a power of two (1, 2, 4, ...)")
        if self.min > self.max:
            raise _error(self.name, "max", self.max, f"max >= min ({self.min})")
        self._finish()

    def values(self) -> tuple[int, ...]:
        return self._values

    @cached_property
    def _values(self) -> tuple[int, ...]:
        lo, hi = self.min.bit_length() - 1, self.max.bit_length() - 1
        return tuple(1 << e for e in range(lo, hi + 1))

    @property
    def is_numeric(self) -> bool:
        return True

    def validate(self, value: object) -> int:
        value = _as_int(value)
        if (_is_int(value) and isinstance(value, int) and self.min <= value <= self.max
                and _is_pow2(value)):
            return value
        raise _error(self.name, "value", value, self.describe_values(), f"value {value!r}")

    def index(self, value: object) -> int:
        return self.validate(value).bit_length() - self.min.bit_length()

    def describe_values(self) -> str:
        return f"pow2 {self.min}..{self.max}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "min": self.min, "max": self.max,
                "default": self.default, "description": self.description}


def _value_type(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "str"
    return type(value).__name__


@dataclass(frozen=True)
class Choice(Parameter):
    """An explicit list of values: all ints, all strings (identifier-like) or all bools."""

    kind: ClassVar[str] = "choice"
    name: str
    values_: tuple[Value, ...]
    default: Value = _FIRST
    description: str = ""

    def __post_init__(self) -> None:
        validate_parameter_name(self.name)
        values = self.values_
        if isinstance(values, list):
            values = tuple(values)
            object.__setattr__(self, "values_", values)
        if not isinstance(values, tuple) or not values:
            raise _error(self.name, "values", values, "a non-empty list of ints, strings or bools")
        types = {_value_type(v) for v in values}
        if not types <= {"int", "str", "bool"}:
            bad = next(v for v in values if _value_type(v) not in ("int", "str", "bool"))
            raise _error(self.name, "values", bad, "ints, strings or bools",
                         f"value {bad!r} of type {_value_type(bad)}")
        if len(types) > 1:
            raise _error(self.name, "values", list(values),
                         "values of one type (all ints, all strings or all bools)",
                         f"mixed types {sorted(types)}")
        seen: set[Value] = set()
        for v in values:
            if v in seen:
                raise _error(self.name, "values", v, "no duplicates", f"duplicate value {v!r}")
            seen.add(v)
        if types == {"str"}:
            for v in values:
                assert isinstance(v, str)
                if len(v) > MAX_STRING_VALUE_CHARS or not _STRING_VALUE.match(v):
                    raise _error(self.name, "values", v,
                                 "identifier-like strings (letters, digits, '_'; at most "
                                 f"{MAX_STRING_VALUE_CHARS} characters): they become "
                                 "#define values", f"value {v!r}")
        if len(values) > MAX_VALUES_PER_PARAMETER:
            raise _error(self.name, "values", len(values),
                         f"at most {MAX_VALUES_PER_PARAMETER} values")
        self._finish()

    @property
    def value_type(self) -> str:
        """``"int"``, ``"str"`` or ``"bool"``."""
        return _value_type(self.values_[0])

    def values(self) -> tuple[Value, ...]:
        return self.values_

    @property
    def is_numeric(self) -> bool:
        return self.value_type == "int"

    def validate(self, value: object) -> Value:
        if self.value_type == "int":
            value = _as_int(value)
        elif isinstance(value, np.bool_ | np.str_):
            value = value.item()
        if _value_type(value) == self.value_type and value in self.values_:
            assert isinstance(value, int | str)
            return value
        raise _error(self.name, "value", value, self.describe_values(), f"value {value!r}")

    def describe_values(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values_)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "values": list(self.values_), "default": self.default,
                "description": self.description}


PARAMETER_KINDS: dict[str, type[Parameter]] = {"int": IntRange, "pow2": Pow2Range,
                                               "choice": Choice}
_KEYS: dict[str, dict[str, str]] = {
    # key -> expected type ("int", "values", "str", "default")
    "int": {"min": "int", "max": "int", "step": "int", "default": "default",
            "description": "str"},
    "pow2": {"min": "int", "max": "int", "default": "default", "description": "str"},
    "choice": {"values": "values", "default": "default", "description": "str"},
}
_REQUIRED = {"int": ("min", "max"), "pow2": ("min", "max"), "choice": ("values",)}


def parameter_from_dict(name: str, data: Mapping[str, Any]) -> Parameter:
    """Build a parameter from its dict form (e.g. a kernel.toml table).

    Unknown keys, missing keys, wrong types and bools where ints are expected are refused
    with a ParameterError naming the key.
    """
    validate_parameter_name(name)
    if not isinstance(data, Mapping):
        raise _error(name, "", data, "a table with a `kind` key", f"definition {data!r}")
    kind = data.get("kind")
    if kind not in PARAMETER_KINDS:
        raise _error(name, "kind", kind, "one of " + ", ".join(PARAMETER_KINDS))
    allowed = _KEYS[kind]
    for key in data:
        if key != "kind" and key not in allowed:
            raise _error(name, key, data[key],
                         f"only the keys kind, {', '.join(allowed)} for kind {kind!r}",
                         f"unknown key {key!r}")
    for key in _REQUIRED[kind]:
        if key not in data:
            raise _error(name, key, None, f"a `{key}` key for kind {kind!r}",
                         f"missing key {key!r}")
    kwargs: dict[str, Any] = {}
    for key, expected in allowed.items():
        if key not in data:
            continue
        value = data[key]
        if expected == "int" and not _is_int(value):
            raise _error(name, key, value, "an integer")
        if expected == "str" and not isinstance(value, str):
            raise _error(name, key, value, "a string")
        if expected == "values":
            if not isinstance(value, list | tuple):
                raise _error(name, key, value, "a list of ints, strings or bools")
            value = tuple(value)
            key = "values_"
        if expected == "default" and not isinstance(value, int | str):
            raise _error(name, key, value, "an int, string or bool")
        kwargs[key] = value
    cls: Any = PARAMETER_KINDS[kind]
    parameter: Parameter = cls(name=name, **kwargs)
    return parameter
