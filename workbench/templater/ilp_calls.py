"""Calls an item may make when a thread runs several items (:mod:`.ilp`): ``__device__``
functions of the file with no effect but their value, and those whose loops are the work.

:mod:`.purity` proves a function safe to run on any arguments (no loop, no memory read): what
an item past the end may run unguarded. Items with independent state need less of a call
that runs only for a live item (under its ``live`` test, as :func:`.item_state.safe_when_done`
decides for every call it cannot prove pure): that running it once per item, in any order
among the items of a thread, is what the threads as written did. That holds when the
function changes nothing but its own locals: it may loop and read memory (a table in
``__constant__``, an argument array), but writes no memory (its locals' elements excepted),
has no static or shared local, no asm, no non-const reference parameter, and calls only
pure math or such functions (a fixpoint). Template functions are read by their name
(``kepler<24>`` is ``kepler``). Pure functions of the parse.
"""

from __future__ import annotations

import weakref

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import LOOPS, line, text, walk
from workbench.templater.item_state import declarator_name
from workbench.templater.purity import PURE_CALLS, device_purity

_FORBIDDEN = {
    "gnu_asm_expression": "inline asm", "asm_statement": "inline asm",
    "new_expression": "`new`", "delete_expression": "`delete`", "throw_statement": "`throw`",
    "lambda_expression": "a lambda",
}
_cache: weakref.WeakKeyDictionary[CudaSource, dict[str, str | None]] = \
    weakref.WeakKeyDictionary()


def callee_name(call: Node) -> str:
    """The name a call reaches: ``f`` for ``f(x)`` and ``f<3>(x)``; the text otherwise."""
    function = call.child_by_field_name("function")
    if function is None:
        return ""
    if function.type == "template_function":
        name = function.child_by_field_name("name")
        return text(name) if name is not None else text(function)
    return text(function)


def effect_free(source: CudaSource) -> dict[str, str | None]:
    """Every ``__device__`` function of ``source`` -> None when it changes nothing but its
    own locals (the module doc), else why, with the line."""
    if source in _cache:
        return _cache[source]
    purity = device_purity(source)
    functions = {name: fn for name, fn in source.function_definitions().items()
                 if name in purity}
    verdict: dict[str, str | None] = {name: "not yet shown free of effects"
                                      for name in functions}
    changed = True
    while changed:
        changed = False
        free = (PURE_CALLS - verdict.keys()) | {n for n, why in verdict.items() if why is None}
        for name, fn in functions.items():
            if verdict[name] is None:
                continue
            why = _effects(fn, free)
            if why != verdict[name]:
                verdict[name] = why
                changed = changed or why is None
    _cache[source] = verdict
    return verdict


def loop_in_call(source: CudaSource, call: Node) -> Node | None:
    """The first loop of the file function ``call`` reaches (in its body or a function it
    calls), else None."""
    functions = source.function_definitions()
    seen: set[str] = set()
    todo = [callee_name(call)]
    while todo:
        name = todo.pop()
        fn = functions.get(name)
        if name in seen or fn is None:
            continue
        seen.add(name)
        for n in walk(fn):
            if n.type in LOOPS:
                return n
            if n.type == "call_expression":
                todo.append(callee_name(n))
    return None


def _effects(fn: Node, free: frozenset[str] | set[str]) -> str | None:
    body = fn.child_by_field_name("body")
    if body is None:
        return "no body"
    for p in walk(fn.child_by_field_name("declarator") or fn):
        if p.type == "reference_declarator" and p.parent is not None and \
                p.parent.type == "parameter_declaration" and \
                not any(text(c) == "const" for c in p.parent.children):
            return f"a reference parameter `{text(p.parent)[:40]}` (line {line(p)})"
    local_arrays: set[str] = set()
    own = {declarator_name(d) for p in walk(fn.child_by_field_name("declarator") or fn)
           if p.type == "parameter_declaration"
           for d in p.children_by_field_name("declarator")}
    for n in walk(body):
        if n.type == "declaration":
            own.update(declarator_name(d) for d in n.children_by_field_name("declarator"))
            if any(text(c) in ("static", "__shared__", "extern", "__constant__")
                   for c in n.children):
                return f"a static or shared local (line {line(n)})"
            for d in walk(n):
                if d.type == "array_declarator":
                    inner = d.child_by_field_name("declarator")
                    if inner is not None:
                        local_arrays.add(text(inner))
    for n in walk(body):
        if n.type in _FORBIDDEN:
            return f"{_FORBIDDEN[n.type]}: `{text(n)[:40]}` (line {line(n)})"
        if n.type == "call_expression" and callee_name(n) not in free:
            return f"it calls `{callee_name(n)[:40]}`, not shown free of effects " \
                f"(line {line(n)})"
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            while target is not None and target.type in ("parenthesized_expression",
                                                         "subscript_expression"):
                if target.type == "subscript_expression":
                    array = target.child_by_field_name("argument")
                    if array is None or text(array) not in local_arrays:
                        return f"`{text(n)[:40]}` writes memory (line {line(n)})"
                    target = array
                else:
                    target = target.named_children[0] if target.named_children else None
            if target is None or target.type != "identifier" or text(target) not in own:
                return f"`{text(n)[:40]}` writes memory (line {line(n)})"
    return None
