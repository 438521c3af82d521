"""Calls in a convolution's tap value: which ones the window lifts (:mod:`.conv`) may move.

The lifts read a tap's value at other points of the loop nest (once per input row for
several output rows, or into a shared tile before the bounds check), so every call in the
value or the weight must give the same result wherever it runs and change nothing: a pure
math call (:mod:`.purity`), ``__ldg``, or a ``__device__`` function of the same file that is
*read-only*. A read-only function may read memory through its pointer parameters (a
``pixel_or_zero(plane, y, x, h, w)`` helper) but writes nothing except its own parameters
and locals: no ``a[i] = ``, ``*p = ``, ``p->f = ``, no atomics, barriers or asm, no static
or shared locals, and it calls only such functions (a fixpoint; recursion and overloads are
never shown read-only). The pointers a read-only call receives are the inputs it reads.
"""

from __future__ import annotations

import weakref

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import line, strip, text, walk, write_target
from workbench.templater.purity import _defined_more_than_once, pure_calls

#: Read-only built-ins besides the pure math (a cached global load).
READ_CALLS = frozenset({"__ldg"})

_FORBIDDEN = {"gnu_asm_expression": "inline asm", "asm_statement": "inline asm",
              "new_expression": "`new`", "delete_expression": "`delete`",
              "throw_statement": "`throw`", "goto_statement": "`goto`"}

_cache: weakref.WeakKeyDictionary[CudaSource, dict[str, str | None]] = \
    weakref.WeakKeyDictionary()


def read_only_functions(source: CudaSource) -> dict[str, str | None]:
    """Every ``__device__`` function of ``source`` -> None when it is read-only (see the
    module doc), else why not, with the line."""
    if source in _cache:
        return _cache[source]
    functions = {name: fn for name, fn in source.function_definitions().items()
                 if any(c.type == "__device__" for c in fn.children) and
                 not any(c.type == "__global__" for c in fn.children) and
                 fn.child_by_field_name("body") is not None}
    overloads = _defined_more_than_once(source)
    verdict: dict[str, str | None] = {n: "not yet shown read-only" for n in functions}
    base = pure_calls(source) | READ_CALLS
    changed = True
    while changed:  # a helper is read-only once every function it calls is
        changed = False
        allowed = base | {n for n, why in verdict.items() if why is None}
        for name, fn in functions.items():
            if verdict[name] is None:
                continue
            why = f"defined more than once (line {line(fn)})" if name in overloads \
                else _writes(fn, name, allowed)
            if why != verdict[name]:
                verdict[name] = why
                changed = changed or why is None
    _cache[source] = verdict
    return verdict


def _writes(fn: Node, name: str, allowed: frozenset[str] | set[str]) -> str | None:
    """Why ``fn`` is not read-only, or None."""
    body = fn.child_by_field_name("body")
    assert body is not None
    for n in walk(body):
        if n.type in _FORBIDDEN:
            return f"{_FORBIDDEN[n.type]}: `{text(n)[:40]}` (line {line(n)})"
        if n.type == "declaration" and any(
                text(c) in ("static", "__shared__", "extern") for c in n.children):
            return f"a static or shared local (line {line(n)})"
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is None or (target.type != "identifier" and
                                  not _local_member(target, body)):
                return f"`{text(n)[:40]}` writes memory (line {line(n)})"
        if n.type == "call_expression":
            callee = n.child_by_field_name("function")
            if callee is None or callee.type != "identifier" or text(callee) == name or \
                    text(callee) not in allowed:
                return f"it calls `{text(callee)[:40]}`, not shown read-only (line {line(n)})"
    return None


def _local_member(target: Node, body: Node) -> bool:
    """``target`` is a member ``p.r`` (through ``.`` only) of a local the function declares
    by value (no pointer, reference or array declarator): a register, not memory."""
    root = target
    while root.type == "field_expression" and text(root.child_by_field_name("operator")) == ".":
        root = strip(root.child_by_field_name("argument") or root)
    if root is target or root.type != "identifier":
        return False
    for n in walk(body):
        if n.type != "declaration":
            continue
        for d in n.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if inner is not None and inner.type == "identifier" and text(inner) == text(root):
                return True
    return False


def unmovable_call(source: CudaSource, node: Node) -> Node | None:
    """The first call under ``node`` that is neither pure nor read-only (None: all are)."""
    verdict = read_only_functions(source)
    allowed = pure_calls(source) | READ_CALLS | {n for n, why in verdict.items() if why is None}
    for n in walk(node):
        if n.type != "call_expression":
            continue
        callee = n.child_by_field_name("function")
        if callee is None or callee.type != "identifier" or text(callee) not in allowed:
            return n
    return None


def why_unmovable(source: CudaSource, call: Node) -> str:
    """A refusal's reason for ``call`` (from :func:`unmovable_call`)."""
    callee = text(call.child_by_field_name("function"))
    why = read_only_functions(source).get(callee)
    if why is not None:
        return (f"the tap value calls `{callee}`, a __device__ function that is not "
                f"read-only: {why}")
    return (f"the tap value calls `{callee[:40]}`, neither a pure math function nor a "
            "read-only __device__ function of this file: moving the read could change what "
            "it does")


def call_arguments(source: CudaSource, node: Node) -> list[Node]:
    """The arguments of the read-only file functions ``node`` calls (the pointers among
    them are the arrays the call reads)."""
    verdict = read_only_functions(source)
    out: list[Node] = []
    for n in walk(node):
        if n.type != "call_expression":
            continue
        callee = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        if callee is not None and verdict.get(text(callee), "") is None and args is not None:
            out += [a for a in args.named_children if a.type != "comment"]
    return out
