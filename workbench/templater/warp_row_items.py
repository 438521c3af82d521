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
kernel as written skips. A name declared before the item that the body writes after it (a
parameter stepped to the row, ``x += (size_t)row * cols``; a count ``int total = 0;``) would
start the warp's next row from this row's value: each such name is copied once before the
rows (``const auto wb_row0_x = x;``) and set back from the copy at the start of every row
(``x = wb_row0_x;``), so each row starts from the value the kernel as written has at the
item, derived from the original base, never stepped again. Such a name must be a kernel
parameter or a local declared with a value (the copy reads nothing unset), a scalar or a
pointer (an array is not assigned whole), and its address is taken nowhere after the item (a
pointer to it could carry a row's value past the restore). Items are independent (the
family's assumption). Refused with the line otherwise; ROWS 1 is the kernel as written.
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
        value, restored = _check(plan, decl)
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

    # one line each: the copies at the item, their restore at each row's start
    saved = " ".join(f"const auto wb_row0_{n} = {n};" for n in restored) + \
        "  // as at the item, for every row\n  " if restored else ""
    again = " ".join(f"{n} = wb_row0_{n};" for n in restored)

    def make(rw: Rewriter) -> str:
        head = rw.render(decl.start_byte, value.start_byte)
        tail = rw.render(value.end_byte, decl.end_byte)
        return (f"{saved}const {kind} wb_item = {rw.text(value)};\n#pragma unroll 1\n  for (int wb_r = 0; "
                f"wb_r < {NAME}; ++wb_r) {{  {again}{'  ' if again else ''}"
                f"// ROWS consecutive rows a warp\n  {head}"
                f"wb_item * {NAME} + wb_r{tail}")

    plan.rw.replace_span(decl.start_byte, decl.end_byte, make=make)
    plan.rw.insert(plan.body.end_byte - 1, "  }  // ROWS\n")
    item = declared_name(decl)[0]
    again_note = f"; {', '.join(restored)} set back at each row to the value at the item" \
        if restored else ""
    plan.note(NAME, True, f"each warp walks ROWS consecutive items `{item}`{again_note}", decl)
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                          "description": "consecutive rows a warp, one after the other (as "
                                         "written: 1)"}, f"{line(decl)}: {text(decl)[:60]}")


def _check(plan: Plan, decl: Node) -> tuple[Node, list[str]]:
    """The item's value ``E`` and the names declared before it that each row sets back
    (module doc) where the rows are legal, else Illegal."""
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
    before = {name: nodes for name, nodes in declared(kernel if kernel is not None else
                                                      plan.body).items()
              if any(d.start_byte < decl.start_byte for d in nodes)}
    restored: list[str] = []
    for n in walk(plan.body):
        target = write_target(n) if n.start_byte > decl.start_byte else None
        if n.type == "pointer_expression" and n.start_byte > decl.start_byte and \
                text(n.child_by_field_name("operator")) == "&":
            target = strip(n.child_by_field_name("argument") or n)
            if target.type == "identifier" and text(target) in before:
                raise Illegal(f"`{text(n)[:50]}` takes the address of {text(target)}, "
                              "declared before the item: a row's value could outlive the row",
                              n)
        if target is not None and target.type == "identifier" and text(target) in before:
            name = text(target)
            why = _not_restorable(plan, name, before[name])
            if why:
                raise Illegal(f"`{text(n)[:50]}` writes {name}, declared before the item, "
                              f"which {why}: the warp's next row would start from this row's "
                              "value", n)
            if name not in restored:
                restored.append(name)
        if n.type == "return_statement" and n.start_byte > decl.start_byte and \
                not _past_the_end(plan, n, item):
            raise Illegal(f"`{text(n.parent)[:50]}` leaves the kernel under a test other "
                          f"than `{item} >= N` (the warp's later rows would be skipped)", n)
    return value, restored


def _not_restorable(plan: Plan, name: str, nodes: list[Node]) -> str:
    """Why each row cannot set ``name`` (declared before the item by ``nodes``) back from a
    copy taken at the item (empty where it can): declared once, a kernel parameter or a
    local with a value, a scalar or pointer."""
    if len(nodes) != 1:
        return "is declared more than once"
    param = next((p for p in plan.kernel.params if p.name == name), None)
    d = plan.facts.defs.get(name)
    if param is not None and d is None:
        return ""
    if d is None or d.value is None:
        return "has no value at its declaration to copy"
    if d.is_shared or nodes[0].parent is None or nodes[0].parent.type == "array_declarator":
        return "is not a thread's own scalar or pointer"
    return ""


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
