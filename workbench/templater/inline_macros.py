"""Function-like macros the kernel calls, expanded before the analysis (issue 28: first
contact).

``#define AT(r, c, ld) ((r) * (ld) + (c))`` then ``A[AT(row, t + tx, K)]`` is the index
``A[((row) * (K) + (t + tx))]`` written by another hand; the families read an index through
its expression (a tile's load, the output's address), so the same kernel lifted or was
refused by the spelling of its index alone. The expansion is the preprocessor's own: each
parameter of the body replaced by the argument's text as written (no parentheses added:
``#define SQ(x) x * x`` then ``1 / SQ(2)`` reads ``1 / 2 * 2``, as the compiler reads it),
repeated while an expansion holds another call (nested macros), so the analysis reads the
program the compiler compiles.

Expanded only where that is plainly so: a file-scope ``#define NAME(p, ...)`` on one line
whose parameters are names (no ``...``), whose body has no ``#`` or ``##`` and does not name
the macro itself, defined once, called on one line with as many arguments as it has
parameters, in the kernel's body or any function of the file (a device helper the kernel
calls reads its macros as the compiler does). The definition
stays; every line keeps its number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import text, tree_root, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body

#: The body's tokens a parameter may be: names, with the preprocessing numbers (``1.0f``,
#: ``0x1Fu``, ``1e-3f``) and the character and string literals matched whole first, so a
#: parameter ``f`` is not the suffix of ``1.0f`` (as the preprocessor reads them).
_TOKEN = re.compile(r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|\.?\d(?:[eEpP][+-]|[\w.])*|[A-Za-z_]\w*""")

#: Rounds of expansion (a macro whose body calls another is expanded in the next round).
_ROUNDS = 8


@dataclass(frozen=True)
class FunctionMacro:
    """One expandable ``#define NAME(params) body``."""

    name: str
    params: tuple[str, ...]
    body: str

    def expand(self, args: list[str]) -> str:
        """The body with each parameter token replaced by its argument's text."""
        values = dict(zip(self.params, args, strict=True))
        return _TOKEN.sub(lambda m: values.get(m[0], m[0]), self.body)


def function_macros(root: Node) -> dict[str, FunctionMacro]:
    """The file-scope function-like macros that expand as the module doc says."""
    found: dict[str, list[FunctionMacro | None]] = {}
    for n in root.children:
        if n.type not in ("preproc_function_def", "preproc_def"):
            continue
        name = text(n.child_by_field_name("name"))
        found.setdefault(name, []).append(_macro(n, name))
    return {name: ms[0] for name, ms in found.items() if len(ms) == 1 and ms[0] is not None}


def _macro(n: Node, name: str) -> FunctionMacro | None:
    params = n.child_by_field_name("parameters")
    value = n.child_by_field_name("value")
    if n.type != "preproc_function_def" or params is None or value is None:
        return None
    names = [c for c in params.named_children]
    body = text(value).strip()
    if any(c.type != "identifier" for c in names) or "..." in text(params) or \
            "#" in body or "\n" in body or re.search(rf"\b{re.escape(name)}\b", body):
        return None
    return FunctionMacro(name, tuple(text(c) for c in names), body)


def expand_macros(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with the calls of function-like macros in ``entry``'s body and in every
    other function of the file (a ``__device__`` helper's ``IN(r, c)``: the kernel reads the
    helper as the compiler does) expanded (unchanged when there is none, or when the kernel
    cannot be found: the analysis reports that itself)."""
    for _ in range(_ROUNDS):
        body = entry_body(current, entry)
        if body is None:
            return current
        root = tree_root(body)
        macros = function_macros(root)
        functions = [n for n in walk(root) if n.type == "function_definition"]
        calls = [(n, macros[text(fn)]) for f in functions for n in walk(f)
                 if n.type == "call_expression"
                 and (fn := n.child_by_field_name("function")) is not None
                 and fn.type == "identifier" and text(fn) in macros
                 and n.start_point[0] == n.end_point[0]]
        calls = [(n, m) for n, m in calls if not any(
            o.start_byte <= n.start_byte and n.end_byte <= o.end_byte and o != n
            for o, _m in calls)]  # the outermost: an inner call expands in its argument
        edits = [(n, new) for n, m in calls if (new := _expanded(n, m)) is not None]
        if not edits:
            return current
        data = current.text.encode()
        for n, new in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
            data = data[:n.start_byte] + new.encode() + data[n.end_byte:]
        current = replace(current, text=data.decode())
    return current


def _expanded(call: Node, macro: FunctionMacro) -> str | None:
    args = call.child_by_field_name("arguments")
    if args is None:
        return None
    values = [text(a) for a in args.named_children if a.type != "comment"]
    if len(values) != len(macro.params):
        return None
    return macro.expand(values)
