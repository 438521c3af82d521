"""STAGE for :mod:`.table_items`: the block's input rows copied to shared memory before its
barrier (issue 28, set 14's dft64_batched: the expert's STAGE).

After ITEMS_X a thread reads its row of the input, ``P[idx]`` with ``P = base + row * R``,
once for its items from global memory; the x threads of a row all read the same elements.
STAGE 1 declares ``__shared__ T wb_st[BY * R]``, copies the block's ``BY`` rows into it with
block-stride (coalesced) loads before the barrier, rows past the kernel's bound left
unread, and reads ``wb_st[threadIdx.y * R + idx]`` for ``P[idx]``. STAGE 0 is the kernel
as written (a one-element array, no copy).

Legal only where the analysis shows (else a note with the line): one local pointer ``P``
declared after the barrier from a kernel argument ``base`` (``const`` and ``__restrict__``,
written nowhere in the kernel; through casts) plus ``row * c1 * ..`` with constant factors
(their product ``R``) and ``row`` a local never assigned whose value is ``blockIdx.x * S +
threadIdx.y`` (either order, ``S`` the y size as written); ``row`` bounded by a top-level
``if (row >= L) return;`` (or ``>``, ``<``, ``<=`` forms) or an ``if (row < L) {..}`` holding
``P``, ``L`` reading no local; ``P`` read only as ``P[idx]`` with every ``idx`` inside
``[0, R)`` over the constant loops around it (:func:`.bounds.interval`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    declared_name,
    factors,
    int_value,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.bounds import _counters, interval
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.rewrite import Rewriter

NAME = "STAGE"
ARRAY = "wb_st"


@dataclass(frozen=True)
class StagedRow:
    """The pointer ``P`` to a thread's input row: its declaration, pointee type, row local,
    row length, the guard's condition that keeps a row (text over ``row``) and its reads."""

    decl: Node
    pointer: str
    kind: str
    row: str
    length: int
    keep: str
    reads: list[Node]
    base: Node  # the initializer: base + row * R


def staged_row(plan: Plan, tail: list[Node], y_size: int) -> StagedRow:
    """The input row to stage, or Refused with the line."""
    found = []
    for stmt in tail:
        for n in walk(stmt):
            if n.type == "declaration" and _pointer_row(plan, n, y_size) is not None:
                found.append(n)
    if len(found) != 1:
        raise Refused("no single pointer to the thread's input row (base + row * R, row = "
                      "blockIdx.x * S + threadIdx.y) after the barrier", plan.body)
    decl = found[0]
    pointer, kind, row, length, init = _pointer_row(plan, decl, y_size)  # type: ignore[misc]
    reads = []
    for n in walk(plan.body):
        if n.type != "identifier" or text(n) != pointer or n.parent is None or \
                n.parent.type in ("init_declarator", "declaration", "pointer_declarator"):
            continue
        sub = n.parent
        if sub.type != "subscript_expression" or sub.child_by_field_name("argument") != n or \
                (sub.parent is not None and sub.parent.type in (
                    "assignment_expression", "update_expression", "pointer_expression") and
                 sub.parent.child_by_field_name("left") in (sub, None)):
            raise Refused(f"`{text(sub)[:50]}` uses the row pointer {pointer} other than as a "
                          "read of one element", sub)
        idx = _index(sub)
        span = interval(idx, _counters(sub)) if idx is not None else None
        if span is None or span[0] < 0 or span[1] >= length:
            raise Refused(f"`{text(sub)[:50]}` reads the row at an index not bounded inside "
                          f"[0, {length})", sub)
        reads.append(sub)
    keep = _guard(plan, tail, row, decl)
    return StagedRow(decl, pointer, kind, row, length, keep, reads, init)


def _index(sub: Node) -> Node | None:
    idx = sub.child_by_field_name("indices")
    if idx is not None and idx.type == "subscript_argument_list":
        return idx.named_children[0] if idx.named_child_count == 1 else None
    return idx


def _pointer_row(plan: Plan, decl: Node, y_size: int
                 ) -> tuple[str, str, str, int, Node] | None:
    name, _d, init = declared_name(decl)
    facts = plan.facts.defs.get(name)
    if init is None or facts is None or not facts.is_pointer or facts.assigned:
        return None
    parts = terms(init)
    if len(parts) != 2 or any(sign != 1 for sign, _ in parts):
        return None
    for (_s, base), (_s2, off) in ((parts[0], parts[1]), (parts[1], parts[0])):
        arg = _argument(plan, base)
        fs = factors(off)
        rows = [f for f in fs if int_value(f) is None]
        consts = [int_value(f) for f in fs if int_value(f) is not None]
        if arg is None or len(rows) != 1 or rows[0].type != "identifier" or \
                not _row_local(plan, text(rows[0]), y_size):
            continue
        length = 1
        for c in consts:
            assert c is not None
            length *= c
        kind = " ".join(text(c) for c in decl.children
                        if c.type in ("primitive_type", "type_identifier",
                                      "sized_type_specifier"))
        return name, kind, text(rows[0]), length, init
    return None


def _argument(plan: Plan, base: Node) -> str | None:
    """The kernel argument ``base`` reads through casts (const, __restrict__, never
    written), else None."""
    node = strip(base)
    while node.type == "call_expression" and "_cast<" in text(
            node.child_by_field_name("function")):
        args = node.child_by_field_name("arguments")
        if args is None or args.named_child_count != 1:
            return None
        node = strip(args.named_children[0])
    if node.type != "identifier" or text(node) in plan.facts.defs:
        return None
    param = next((p for p in plan.kernel.params if p.name == text(node)), None)
    if param is None or not param.is_pointer or not param.is_const or \
            "__restrict__" not in param.type_text:
        return None
    for n in walk(plan.body):
        if n.type in ("assignment_expression", "update_expression"):
            t = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if t is not None and any(c.type == "identifier" and text(c) == text(node)
                                     for c in walk(t)):
                return None
    return text(node)


def _row_local(plan: Plan, name: str, y_size: int) -> bool:
    d = plan.facts.defs.get(name)
    if d is None or d.assigned or d.value is None:
        return False
    parts = terms(d.value)
    if len(parts) != 2 or any(sign != 1 for sign, _ in parts):
        return False
    ys = [t for _s, t in parts if builtin(t, "threadIdx") == "y"]
    rest = [t for _s, t in parts if builtin(t, "threadIdx") != "y"]
    if len(ys) != 1 or len(rest) != 1:
        return False
    fs = factors(rest[0])
    return len(fs) == 2 and any(builtin(f, "blockIdx") == "x" for f in fs) and \
        any(int_value(f) == y_size for f in fs)


def _guard(plan: Plan, tail: list[Node], row: str, decl: Node) -> str:
    """The condition (over ``row``) under which the kernel reads a row: a top-level ``if
    (row >= L) return;`` before ``decl`` or an ``if (row < L) {..}`` holding it."""
    flips = {">=": "<", ">": "<=", "<": ">=", "<=": ">"}
    for stmt in tail:
        if stmt.start_byte > decl.start_byte:
            break
        if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
            continue
        cond = stmt.child_by_field_name("condition")
        inner = cond.named_children[0] if cond is not None and \
            cond.named_child_count == 1 else None
        parts = binary(inner) if inner is not None else None
        if parts is None or text(strip(parts[0])) != row or parts[1] not in flips or \
                any(n.type == "identifier" and text(n) in plan.facts.defs
                    for n in walk(parts[2])):
            continue
        body = stmt.child_by_field_name("consequence")
        holds = body is not None and body.start_byte <= decl.start_byte < body.end_byte
        returns = body is not None and text(body).replace(" ", "").strip("{};") == "return"
        if returns:
            return f"{{r}} {flips[parts[1]]} ({text(parts[2])})"
        if holds:
            return f"{{r}} {parts[1]} ({text(parts[2])})"
    raise Refused(f"no guard on `{row}` before the row pointer (if ({row} >= n) return; or "
                  f"if ({row} < n) {{..}}): the copy would not know which rows exist", decl)


def apply_stage(plan: Plan, staged: StagedRow, barrier: Node, tx: str, rows: str) -> None:
    """Render STAGE (edits) and its parameter."""
    name = fresh_names(plan, [NAME])[NAME]
    length = staged.length
    init = staged.base
    row_uses = [n for n in walk(init) if n.type == "identifier" and text(n) == staged.row]
    source = text(init)
    for n in sorted(row_uses, key=lambda n: -n.start_byte):
        at = n.start_byte - init.start_byte
        source = source[:at] + "wb_r" + source[at + n.end_byte - n.start_byte:]
    keep = staged.keep.format(r="wb_r")
    plan.rw.insert(barrier.start_byte, (
        f"__shared__ {staged.kind} {ARRAY}[{name} ? {rows} * {length} : 1];  // the block's "
        f"rows of {staged.pointer} (STAGE)\n"
        f"  if ({name}) {{\n"
        f"    for (int wb_e = threadIdx.y * {tx} + threadIdx.x; wb_e < {rows} * {length}; "
        f"wb_e += {tx} * {rows}) {{\n"
        f"      const int wb_r = blockIdx.x * {rows} + wb_e / {length};\n"
        f"      if ({keep}) {ARRAY}[wb_e] = ({source})[wb_e % {length}];\n"
        f"    }}\n  }}\n  "))
    for sub in staged.reads:
        idx = _index(sub)
        assert idx is not None
        plan.rw.replace_span(sub.start_byte, sub.end_byte, make=_read(name, length, sub, idx))
    plan.add_param(name, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: the block's rows of {staged.pointer} ({length} "
                                         "elements each) copied to shared memory before the "
                                         "barrier, read from there (as written: 0)"},
                   f"{staged.decl.start_point.row + 1}: {text(staged.decl)[:60]}")
    plan.note(name, True, f"the rows of {staged.pointer} ({length} x {staged.kind}) staged "
              f"by the block; {len(staged.reads)} read(s) from shared memory", staged.decl)


def _read(name: str, length: int, sub: Node, idx: Node) -> Callable[[Rewriter], str]:
    """The staged read of ``sub`` (``P[idx]``) with its own edits, behind the knob."""
    def make(rw: Rewriter) -> str:
        return (f"({name} ? {ARRAY}[threadIdx.y * {length} + ({rw.text(idx)})] : "
                f"{rw.render(sub.start_byte, sub.end_byte)})")
    return make
