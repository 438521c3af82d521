"""Thread-dependent locals that walk along k in a tiled GEMM (:mod:`.regtile`).

Some authors set a pointer (or an index) per thread before the loop over tiles and move it
on by one slice after each step instead of recomputing the address::

    const __half* pa = A + (size_t)row * K + tx;   // per thread
    for (...) { sa[ty][tx] = ... *pa ...; __syncthreads(); ...; __syncthreads();
                pa += T; }                          // the same step for every thread

Such a local is its initial value (a function of the thread's position) plus the sum of the
steps taken so far; the steps are the same for every thread of the block (they read neither
a thread nor a block index), so one uniform offset, ``wb_walk_<name>``, stands for them. The
rewrite inlines ``(initial value at the virtual thread's position) + offset`` wherever the
local is read and steps the offset where the kernel as written steps the local: each
virtual thread reads the address the kernel as written reads at that step.

Recognised only where that holds: declared once before the loop with a value; every other
write is a step (``x += U``, ``x -= U``, ``++x`` / ``x++`` / ``--x`` / ``x--``,
``x = x + U``) with ``U`` free of thread and block indices, calls and ``x`` itself; each step
a statement of its own at the top level of the loop body (or in the loop header's update).
Where a step sits is checked against the kernel's parts by :func:`check_step_places`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import binary, builtin, strip, text, walk

#: the prefix of the uniform offset that stands for a walking local's steps
OFFSET_PREFIX = "wb_walk_"


@dataclass(frozen=True)
class Walk:
    """A walking local: its name, the declaration it is set by, the type of its offset and
    the expressions that step it (assignments and updates)."""

    name: str
    decl: Node
    offset_type: str
    steps: tuple[Node, ...]

    @property
    def offset(self) -> str:
        return OFFSET_PREFIX + self.name


class NotWalk(WorkbenchError):
    """The local is written otherwise than by uniform steps: ``reason`` and the node it is
    about (turned into a REGISTER_TILE refusal by the analysis)."""

    def __init__(self, reason: str, node: Node) -> None:
        super().__init__(reason, reason=reason)
        self.reason, self.node = reason, node


def _writes(body: Node, name: str) -> list[Node]:
    out = []
    for n in walk(body):
        if n.type not in ("assignment_expression", "update_expression"):
            continue
        target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        if target is not None and strip(target).type == "identifier" and \
                text(strip(target)) == name:
            out.append(n)
    return out


def step_value(step: Node, name: str) -> Node | None:
    """The stepped amount ``U`` of ``x += U`` / ``x -= U`` / ``x = x + U`` (None for
    ``++x`` and the like); NotWalk for a write that is not a step."""
    if step.type == "update_expression":
        return None
    op = text(step.child_by_field_name("operator"))
    right = step.child_by_field_name("right")
    if right is None:
        raise NotWalk(f"`{text(step)}` is not a step", step)
    if op in ("+=", "-="):
        return right
    parts = binary(right)
    if op == "=" and parts and parts[1] == "+" and strip(parts[0]).type == "identifier" \
            and text(strip(parts[0])) == name:
        return parts[2]
    raise NotWalk(f"`{text(step)}` sets `{name}` otherwise than by a step along k", step)


def _statement_of(step: Node) -> Node | None:
    """The expression statement ``step`` is the whole of, or the loop header update it is
    (one operand of) where it is that."""
    node = step
    while node.parent is not None and node.parent.type in ("parenthesized_expression",
                                                           "comma_expression"):
        node = node.parent
    parent = node.parent
    if parent is None:
        return None
    if parent.type == "expression_statement":
        return parent if node == step or node.type != "comma_expression" else None
    if parent.type == "for_statement" and parent.child_by_field_name("update") == node:
        return node
    return None


def walking_locals(candidates: Mapping[str, tuple[Node, Node | None, int, bool]], body: Node,
                   uniform: Callable[[Node], bool]) -> dict[str, Walk | NotWalk]:
    """Each candidate (name -> (declaration, declarator, times declared, is a pointer)) that
    is written after its declaration: its :class:`Walk`, or the NotWalk saying why not.
    ``uniform(node)``: whether ``node`` reads no thread or block index."""
    out: dict[str, Walk | NotWalk] = {}
    for name, (decl, declarator, count, pointer) in candidates.items():
        writes = _writes(body, name)
        if not writes:
            continue
        try:
            if count != 1 or declarator is None or declarator.type != "init_declarator":
                raise NotWalk(f"`{name}` is declared more than once or without a value", decl)
            for w in writes:
                value = step_value(w, name)
                if value is not None and (not uniform(value) or any(
                        n.type in ("call_expression", "assignment_expression",
                                   "update_expression") or
                        (n.type == "identifier" and text(n) == name) for n in walk(value))):
                    raise NotWalk(f"`{text(w)}` steps `{name}` by a value that depends on "
                                  "the thread or block, or has effects", w)
                if _statement_of(w) is None:
                    raise NotWalk(f"`{text(w)}` steps `{name}` inside another expression", w)
            typ = "long long" if pointer else " ".join(
                text(decl.child_by_field_name("type")).split())
            out[name] = Walk(name, decl, typ, tuple(writes))
        except NotWalk as exc:
            out[name] = exc
    return out


def is_step_statement(stmt: Node, walks: dict[str, Walk]) -> bool:
    """Whether ``stmt`` (a statement or a loop header's update) is made only of steps of
    walking locals (``pa += T;``, ``pa += T, pb += T * N``)."""
    steps = {(s.start_byte, s.end_byte) for w in walks.values() for s in w.steps}
    node = strip(stmt.named_children[0]) if stmt.type == "expression_statement" and \
        stmt.named_child_count == 1 else strip(stmt)
    parts = [node]
    while any(p.type == "comma_expression" for p in parts):
        parts = [strip(c) for p in parts for c in (
            p.named_children if p.type == "comma_expression" else [p])]
    return all((p.start_byte, p.end_byte) in steps for p in parts)


def header_steps_only(update: Node, walks: dict[str, Walk]) -> list[Node]:
    """The operands of a loop header's update that are not steps of walking locals
    (``kk += T`` of ``kk += T, pa += T``)."""
    steps = {(s.start_byte, s.end_byte) for w in walks.values() for s in w.steps}
    parts = [strip(update)]
    while any(p.type == "comma_expression" for p in parts):
        parts = [strip(c) for p in parts for c in (
            p.named_children if p.type == "comma_expression" else [p])]
    return [p for p in parts if (p.start_byte, p.end_byte) not in steps]


def check_step_places(walks: dict[str, Walk], allowed: list[Node]) -> NotWalk | None:
    """The first step that is not inside one of ``allowed`` (the statements run once per
    tile after the product, and the loop header's update), or None."""
    for w in walks.values():
        for s in w.steps:
            if not any(a.start_byte <= s.start_byte and s.end_byte <= a.end_byte
                       for a in allowed):
                return NotWalk(f"`{text(s)}` steps `{w.name}` other than after the product "
                               "of a tile (the step of the loop over tiles)", s)
    return None


def reads_block(node: Node, blocky: set[str]) -> bool:
    """Whether ``node`` reads a block index (directly or through a local in ``blocky``)."""
    return any(builtin(m, "blockIdx") is not None or
               (m.type == "identifier" and text(m) in blocky) for m in walk(node))
