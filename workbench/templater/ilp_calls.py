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
pure math or such functions (a fixpoint); an element of a local array of arrays is its own
(``acc[i][j] = ..``). A method called on a local object (:mod:`.item_objects`) is read the
same way, the object's value and array members counting as its locals. Template functions
are read by their name (``kepler<24>`` is ``kepler``). Pure functions of the parse.
"""

from __future__ import annotations

import weakref

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import LOOPS, line, text, walk
from workbench.templater.item_objects import called_object, method_of
from workbench.templater.item_state import declarator_name
from workbench.templater.plan import Plan
from workbench.templater.purity import (
    PURE_CALLS,
    conversion,
    conversion_types,
    device_purity,
    value_root,
)

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
            why = _effects(source, fn, free)
            if why != verdict[name]:
                verdict[name] = why
                changed = changed or why is None
    _cache[source] = verdict
    return verdict


def method_effects(source: CudaSource, object_type: str, call: Node) -> str | None:
    """None when the method ``call`` reaches on an object of ``object_type`` changes nothing
    but that object's value and array members and its own locals (:mod:`.item_objects`),
    else why not, with the line."""
    found = method_of(source, object_type, call)
    if isinstance(found, str):
        return found
    method, members = found
    verdict = effect_free(source)
    free = (PURE_CALLS - verdict.keys()) | {n for n, why in verdict.items() if why is None}
    return _effects(source, method, free, members)


def method_call_refusal(plan: Plan, call: Node, declared: set[str]) -> str | None:
    """Why the method call ``call`` may not run once per item, in any order among the
    items (None for a call that is no method call): it must be made on a local object
    ``declared`` from the item's index on (each item's own), of a class of the file, and
    change nothing but that object (:func:`method_effects`)."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "field_expression":
        return None
    obj = called_object(call)
    d = plan.facts.defs.get(text(obj)) if obj is not None else None
    if obj is None or d is None or d.is_pointer or text(obj) not in declared:
        # (``T x(a, b);`` reads as a function's declaration: a constructor is not read)
        return f"`{text(call)[:50]}` calls a method on no local object declared, without " \
            "constructor arguments, from the item's index on"
    typ = d.decl.child_by_field_name("type")
    if typ is not None and typ.type in ("struct_specifier", "class_specifier"):
        typ = typ.child_by_field_name("name")
    why = method_effects(plan.source, text(typ) if typ is not None else "", call)
    return None if why is None else f"`{text(call)[:50]}`: {why}"


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


def _effects(source: CudaSource, fn: Node, free: frozenset[str] | set[str],
             members: frozenset[str] = frozenset()) -> str | None:
    """Why ``fn`` changes more than its own locals (and, for a method, ``members``: its
    object's data members that are values or arrays, not pointers), else None."""
    body = fn.child_by_field_name("body")
    if body is None:
        return "no body"
    for p in walk(fn.child_by_field_name("declarator") or fn):
        if p.type == "reference_declarator" and p.parent is not None and \
                p.parent.type == "parameter_declaration" and \
                not any(text(c) == "const" for c in p.parent.children):
            return f"a reference parameter `{text(p.parent)[:40]}` (line {line(p)})"
    local_arrays: set[str] = set(members)
    types = conversion_types(source, fn)
    own = {declarator_name(d) for p in walk(fn.child_by_field_name("declarator") or fn)
           if p.type == "parameter_declaration"
           for d in p.children_by_field_name("declarator")} | members
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
        if n.type == "call_expression" and callee_name(n) not in free and \
                not conversion(n, types):
            return f"it calls `{callee_name(n)[:40]}`, not shown free of effects " \
                f"(line {line(n)})"
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            while target is not None and target.type in ("parenthesized_expression",
                                                         "subscript_expression"):
                if target.type == "subscript_expression":
                    array = target.child_by_field_name("argument")
                    if array is None or (array.type != "subscript_expression" and
                                         text(array) not in local_arrays):  # x[i][j]: x
                        return f"`{text(n)[:40]}` writes memory (line {line(n)})"
                    target = array
                else:
                    target = target.named_children[0] if target.named_children else None
            # `g.x = ..`: a member of a local object (value_root: None through memory)
            if target is None or value_root(target) not in own:
                return f"`{text(n)[:40]}` writes memory (line {line(n)})"
    return None
