"""The one ``#define`` renderer: a config's parameters as preprocessor lines.

Every place that writes ``#define NAME value`` for a parameter (the rendered kernel, the
exported header, the panel's and the report's header blocks, the guarded defaults that
the offline templater and ``import-kt`` put above a template) calls :func:`define_lines`,
so a value is spelt one way everywhere (a bool as ``1``/``0``) and data becomes code only
after it is checked: a name passes :func:`~workbench.core.identifiers.identifier_problem`,
a value is a bool, a 64-bit integer or a string that passes the same identifier check.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from workbench.core.errors import TemplateError
from workbench.core.identifiers import identifier_problem
from workbench.core.records import Value

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
VALUE_EXPECTED = "a bool, a 64-bit integer or a C identifier"


class DefineError(TemplateError):
    """A name or value may not enter a ``#define``: ``name``, ``value`` and ``expected``."""

    def __init__(self, message: str, *, name: str, value: str, expected: str) -> None:
        super().__init__(message, name=name, value=value, expected=expected)
        self.name = name
        self.value = value
        self.expected = expected


def define_value(value: object) -> str:
    """The text of ``value`` in a ``#define`` (``1``/``0`` for a bool), or DefineError."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
        return str(value)
    if isinstance(value, str) and identifier_problem(value) is None:
        return value
    shown = repr(value)[:80]
    raise DefineError(f"value {shown} cannot be a #define value; expected {VALUE_EXPECTED}",
                      name="", value=shown, expected=VALUE_EXPECTED)


def define_lines(values: Mapping[str, Value] | Iterable[tuple[str, Value]], *,
                 guarded: bool = False) -> list[str]:
    """``#define NAME value`` for each (name, value), in the given order; ``guarded`` wraps
    each in ``#ifndef NAME`` / ``#endif`` (a default the build may override). Raises
    DefineError naming the first name or value that fails the checks."""
    items = values.items() if isinstance(values, Mapping) else values
    lines: list[str] = []
    for name, value in items:
        problem = identifier_problem(name)
        if problem is not None:
            shown = repr(name)[:80]
            raise DefineError(f"{shown} cannot be a #define name: {problem}",
                              name=shown, value=repr(value)[:80], expected="a C identifier")
        try:
            text = define_value(value)
        except DefineError as exc:
            raise DefineError(f"#define {name}: {exc.message}", name=name, value=exc.value,
                              expected=exc.expected) from None
        define = f"#define {name} {text}"
        lines += [f"#ifndef {name}", define, "#endif"] if guarded else [define]
    return lines
