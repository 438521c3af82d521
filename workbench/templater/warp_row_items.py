"""Rows per warp (ROWS) for a warp family's item whose lanes stay a warp (a vote in the body).

The kernel as written gives each warp one item ``row = E`` (``E`` the block offset plus the
warp, or the global warp index: :mod:`.warp`); ``ROWS`` gives it ``ROWS`` consecutive items
``E * ROWS + r``, one after the other, the grid divided by ``ROWS`` more:

    const int wb_item = E;
    #pragma unroll 1
    for (int wb_r = 0; wb_r < ROWS; ++wb_r) {
      int row = wb_item * ROWS + wb_r;
      ... the rest of the body, as written ...
    }

Each row runs the body the kernel runs for it, on the same 32 lanes; the warp's lanes take
every row together (``ROWS`` is the same for all), so a vote meets the same lanes as
written. Legal where the item's declaration is a statement of the kernel's body, the item is
never assigned and ``blockIdx`` is read nowhere else (the rows of a warp come from ``E``
alone); every statement before it is a declaration whose value has no side effect (run once
for all the rows, it holds what it would hold for each); and every ``return`` after it is
the whole body of an ``if (row >= N)`` (``N <= row``, ``N`` a name the kernel never assigns):
a row past ``N`` has every later row of the warp past it too, so leaving skips only rows the
kernel as written skips; and nothing after the item writes (or takes the address of) a name
declared before it (``x += row * cols`` on a parameter: the next row would start from this
row's pointer). Items are independent (the family's assumption). Refused with the line
otherwise; ROWS 1 is the kernel as written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    declared_name,
    line,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.inline_bind import declared
from workbench.templater.plan import Plan
from workbench.templater.purity import side_effect_free
from workbench.templater.rewrite import Rewriter
from workbench.templater.rules import scale_divisor
from workbench.templater.vector import Illegal

NAME = "ROWS"


def apply_rows(plan: Plan, decl: Node, grid: str, f_value: int, per_block: str) -> None:
    """Give the item declared by ``decl`` ROWS consecutive rows (notes why not); ``grid``:
    the launch's grid rule as written, dividing by ``f_value`` items a block, which become
    ``per_block`` (``WARPS_PER_BLOCK``) times ROWS."""
    try:
        value = _check(plan, decl)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node or decl)
        return
    rule = scale_divisor(grid, str(f_value), f"{per_block} * {NAME}")
    if rule is None:
        plan.note(NAME, False, f"grid rule {grid!r} does not divide by the items per block "
                  f"({f_value})", decl)
        return
    plan.grid[0] = rule
    kind = text(decl.child_by_field_name("type"))

    def make(rw: Rewriter) -> str:
        head = rw.render(decl.start_byte, value.start_byte)
        tail = rw.render(value.end_byte, decl.end_byte)
        return (f"const {kind} wb_item = {rw.text(value)};\n#pragma unroll 1\n  for (int wb_r = 0; "
                f"wb_r < {NAME}; ++wb_r) {{  // ROWS consecutive rows a warp\n  {head}"
                f"wb_item * {NAME} + wb_r{tail}")

    plan.rw.replace_span(decl.start_byte, decl.end_byte, make=make)
    plan.rw.insert(plan.body.end_byte - 1, "  }  // ROWS\n")
    item = declared_name(decl)[0]
    plan.note(NAME, True, f"each warp walks ROWS consecutive items `{item}`", decl)
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                          "description": "consecutive rows a warp, one after the other (as "
                                         "written: 1)"}, f"{line(decl)}: {text(decl)[:60]}")


def _check(plan: Plan, decl: Node) -> Node:
    """The item's value ``E`` where the rows are legal (module doc), else Illegal."""
    item, _d, value = declared_name(decl)
    d = plan.facts.defs.get(item)
    if decl.parent != plan.body or value is None or d is None or d.assigned:
        raise Illegal(f"the item `{item}` is not declared once, unassigned, by a statement of "
                      "the kernel's body", decl)
    for n in walk(plan.body):
        if builtin(n, "blockIdx") is not None and \
                not (value.start_byte <= n.start_byte < value.end_byte):
            raise Illegal(f"`{text(n)}` is read beyond the item (a warp's rows come from the "
                          "item alone)", n)
    for s in plan.body.named_children:
        if s.start_byte >= decl.start_byte:
            break
        init = declared_name(s)[2] if s.type == "declaration" else None
        if s.type != "declaration" or (init is not None and
                                       not side_effect_free(plan.source, init)):
            raise Illegal(f"`{text(s)[:50]}` runs before the item (once for all its rows)", s)
    kernel = plan.body.parent
    before = {name for name, nodes in declared(kernel if kernel is not None else plan.body)
              .items() if any(d.start_byte < decl.start_byte for d in nodes)}
    for n in walk(plan.body):
        target = write_target(n) if n.start_byte > decl.start_byte else None
        if n.type == "pointer_expression" and n.start_byte > decl.start_byte and \
                text(n.child_by_field_name("operator")) == "&":
            target = strip(n.child_by_field_name("argument") or n)
        if target is not None and target.type == "identifier" and text(target) in before:
            raise Illegal(f"`{text(n)[:50]}` writes {text(target)}, declared before the item: "
                          "the warp's next row would start from this row's value", n)
        if n.type == "return_statement" and n.start_byte > decl.start_byte and \
                not _past_the_end(plan, n, item):
            raise Illegal(f"`{text(n.parent)[:50]}` leaves the kernel under a test other "
                          f"than `{item} >= N` (the warp's later rows would be skipped)", n)
    return value


def _past_the_end(plan: Plan, ret: Node, item: str) -> bool:
    """``ret`` is the whole body of ``if (item >= N)`` (or ``N <= item``), ``N`` naming only
    names the kernel never assigns."""
    up = ret.parent
    if up is not None and up.type == "compound_statement" and len(up.named_children) == 1:
        up = up.parent
    cond = up.child_by_field_name("condition") if up is not None and \
        up.type == "if_statement" and up.child_by_field_name("alternative") is None else None
    cond = cond.child_by_field_name("value") or cond if cond is not None else None
    parts = binary(strip(cond)) if cond is not None else None
    if parts is None:
        return False
    left, op, right = strip(parts[0]), parts[1], strip(parts[2])
    if (op, text(left)) == (">=", item):
        bound = right
    elif (op, text(right)) == ("<=", item):
        bound = left
    else:
        return False
    for n in walk(bound):
        if n.type in ("subscript_expression", "call_expression", "pointer_expression",
                      "field_expression", "assignment_expression", "update_expression"):
            return False
        d = plan.facts.defs.get(text(n)) if n.type == "identifier" else None
        if d is not None and d.assigned:
            return False
    return True
