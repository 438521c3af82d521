"""What is an item's own in a per-element kernel given several items per thread
(:mod:`.ilp`): the locals that depend on the item, the statements an item past the end may
run unguarded, the escape-time loops items leave one by one, a loop's constant trip count.
Pure functions of the parse."""

from __future__ import annotations

from collections.abc import Sequence

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    declared_name,
    int_value,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.item_objects import called_object
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls

CONTROL = (*LOOPS, "if_statement")
MAX_FULL_UNROLL = 64  # trips of a loop the UNROLL knob may unroll whole


def statements(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def assigned_names(node: Node, local_arrays: frozenset[str] = frozenset()) -> set[str]:
    """Locals ``node`` assigns (a local array or object through its elements and fields, an
    object by a method called on it: :mod:`.item_objects`; a write through a pointer
    changes memory, not the pointer)."""
    out = set()
    for n in walk(node):
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            root = target
            while root is not None and (root.type == "subscript_expression" or (
                    root.type == "field_expression" and
                    text(root.child_by_field_name("operator")) == ".")):
                root = root.child_by_field_name("argument")
            if root is not None and root.type == "identifier" and text(root) in local_arrays:
                target = root
            if target is not None and target.type == "identifier":
                out.add(text(target))
        elif n.type == "declaration":
            for d in n.children_by_field_name("declarator"):
                out.add(declarator_name(d))
        elif n.type == "call_expression" and (obj := called_object(n)) is not None and \
                text(obj) in local_arrays:
            out.add(text(obj))  # a method changes the object it is called on
    return out


def declarator_name(d: Node) -> str:
    """The name ``d`` declares, through its value, pointers, arrays and references (``const
    Vec& v = a[i]`` declares ``v``: a reference's declarator is no field of the parse)."""
    while d.type in ("init_declarator", "pointer_declarator", "array_declarator",
                     "reference_declarator"):
        inner = d.child_by_field_name("declarator") if d.type != "reference_declarator" \
            else (d.named_children[-1] if d.named_child_count else None)
        if inner is None:
            break
        d = inner
    return text(d)


def mentions(node: Node, names: set[str]) -> bool:
    return any(n.type == "identifier" and text(n) in names for n in walk(node))


def header(stmt: Node) -> list[Node]:
    """The parts of a control statement that decide its control flow."""
    if stmt.type == "for_statement":
        return [c for c in (stmt.child_by_field_name(f) for f in
                            ("initializer", "condition", "update")) if c is not None]
    cond = stmt.child_by_field_name("condition")
    return [cond] if cond is not None else []


def item_names(region: list[Node], index: str, local_arrays: frozenset[str],
                seeds: frozenset[str] = frozenset()) -> set[str]:
    """The index, ``seeds`` and every local whose value depends on them (fixpoint over the
    region)."""
    items = {index, *seeds}
    changed = True
    while changed:
        changed = False
        for stmt in region:
            for n in walk(stmt):
                found: set[str] = set()
                if n.type == "declaration":
                    for d in n.children_by_field_name("declarator"):
                        value = d.child_by_field_name("value") if d.type == "init_declarator" \
                            else None
                        if value is not None and mentions(value, items):
                            found.add(declarator_name(d))
                elif n.type == "call_expression" and called_object(n) is not None:
                    # a method call: its object's value follows its arguments
                    if mentions(n, items) or under_item_control(n, stmt, items):
                        found |= assigned_names(n, local_arrays)
                elif n.type in ("assignment_expression", "update_expression"):
                    value = n.child_by_field_name("right")
                    if (value is not None and mentions(value, items)) or under_item_control(
                            n, stmt, items):
                        found |= assigned_names(n, local_arrays)
                elif n.type in CONTROL and any(
                        mentions(h, items) for h in header(n)):
                    found |= assigned_names(n, local_arrays)
                if found - items:
                    items |= found
                    changed = True
    return items


def declarators(stmts: Sequence[Node]) -> dict[str, Node]:
    """Each name a declaration among ``stmts`` (nested ones too) declares -> its declarator."""
    out: dict[str, Node] = {}
    for stmt in stmts:
        for n in walk(stmt):
            if n.type == "declaration":
                for d in n.children_by_field_name("declarator"):
                    out[declarator_name(d)] = d
    return out


def shared_holder(region: list[Node], items: set[str]) -> Node | None:
    """The first assignment in ``region`` of an item-dependent name declared outside it (a
    parameter advanced to the item's row, ``a += i * K``; a local declared before the index;
    a file-scope variable), else None. Only a name declared in the region gets one copy per
    item: such a name would be one variable the thread's items overwrite in turn."""
    declared = set(declarators(region))
    for stmt in region:
        for n in walk(stmt):
            if n.type in ("assignment_expression", "update_expression") and \
                    (assigned_names(n) & items) - declared:
                return n
    return None


def under_item_control(node: Node, top: Node, items: set[str]) -> bool:
    up = node.parent
    while up is not None and up != top.parent:
        if up.type in (*CONTROL, "switch_statement") and any(
                mentions(h, items) for h in header(up)):
            return True
        up = up.parent
    return False


def is_item_stmt(stmt: Node, items: set[str]) -> bool:
    """A statement that runs per item (it reads or writes an item-dependent name, or its
    control depends on one) rather than once per thread."""
    if stmt.type in CONTROL:
        return any(mentions(h, items) for h in header(stmt))
    return mentions(stmt, items)


def safe_when_done(stmt: Node, items: set[str], plan: Plan) -> bool:
    """``stmt`` may run for an item that is done (past the end: its locals keep their zero
    start) with no effect but on that item's own locals: it cannot fault, write memory,
    leave its loop or run forever. So it needs no ``live`` test, and the items' statements
    stay one straight-line block the compiler interleaves and shares table loads across
    (a test per item made each a branch: 255 registers and no sharing in percell_compute).
    Allowed: arithmetic; pure calls (known math, or a ``__device__`` function of the file
    proved pure by :mod:`.purity`); loads whose place does not
    depend on the item and that are not under item-dependent control (the loads every live
    item makes) or are in bounds of a device array (:mod:`.bounds`); float division. Not allowed: a memory write, a load at an item-dependent
    place (its index, or its base: an item pointer's ``p[k]``), an integer division or remainder by an item-dependent value, a loop with an
    item-dependent header, ``return``/``break``/``continue``, any other call."""
    from workbench.templater.bounds import in_bounds  # bounds reads this module

    pure = pure_calls(plan.source)
    for n in walk(stmt):
        t = n.type
        if t in (*LOOPS, "return_statement", "break_statement", "continue_statement",
                 "goto_statement", "gnu_asm_expression", "asm_statement"):
            if t not in LOOPS or any(mentions(h, items) for h in header(n)):
                return False
        elif t == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is None or fn.type != "identifier" or text(fn) not in pure:
                return False
        elif t in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is None or target.type != "identifier":
                return False
        elif t in ("subscript_expression", "pointer_expression") or (
                t == "field_expression" and text(n.child_by_field_name("operator")) == "->"):
            if t == "pointer_expression" and text(n.child_by_field_name("operator")) == "&":
                continue
            place = n.child_by_field_name("indices") if t == "subscript_expression" else n
            if mentions(place if place is not None else n, items):
                return False
            if t == "subscript_expression" and _through_item_pointer(plan, n, items):
                return False
            if (under_item_control(n, stmt, items) or _under_item_choice(n, stmt, items)) \
                    and not in_bounds(plan, n):
                return False
        elif t == "binary_expression" and text(n.child_by_field_name("operator")) in "/%":
            right = n.child_by_field_name("right")
            if right is not None and mentions(right, items) and (
                    text(n.child_by_field_name("operator")) == "%" or
                    not float_valued(plan, right, items)):
                return False
    return True


def _through_item_pointer(plan: Plan, load: Node, items: set[str]) -> bool:
    """``load`` (``p[k]``) reads memory through a base that depends on the item: an item
    pointer (``const float* p = a + i * K``), or any expression of the item, except the
    item's own local array (registers, ``acc[k]``). The place is the item's even when the
    index is shared: a done item's pointer holds its zero start (null), or the value of an
    item past the end, so the load would fault (issue 28: a naive product's shared k loop
    read ``pa[k]`` for items that had returned)."""
    base = n = load.child_by_field_name("argument")
    while base is not None and strip(base).type == "subscript_expression":
        base = strip(base).child_by_field_name("argument")  # x[a][b]: the array x
    if n is None or base is None or not mentions(n, items):
        return False
    if strip(base).type == "identifier":
        d = plan.facts.defs.get(text(strip(base)))
        if d is not None and not d.is_pointer and not d.is_shared and any(
                c.type == "array_declarator" for c in walk(d.decl)):
            return False  # the item's own registers: a shared index reads its own element
    return True


def _under_item_choice(node: Node, top: Node, items: set[str]) -> bool:
    """``node`` is evaluated only on a test of the item: a side of ``c ? a : b`` or the right
    of ``&&`` / ``||`` whose test mentions the item."""
    child, up = node, node.parent
    while up is not None and child != top:
        if up.type == "conditional_expression":
            cond = up.child_by_field_name("condition")
            if cond is not None and child != cond and mentions(cond, items):
                return True
        elif up.type == "binary_expression" and \
                text(up.child_by_field_name("operator")) in ("&&", "||"):
            left = up.child_by_field_name("left")
            if left is not None and child != left and mentions(left, items):
                return True
        child, up = up, up.parent
    return False


def float_valued(plan: Plan, node: Node, items: set[str]) -> bool:
    """Every item-dependent name in ``node`` is a float or double local (division by a
    dead item's zero is inf/nan there, not a trap)."""
    for n in walk(node):
        if n.type == "identifier" and text(n) in items:
            d = plan.facts.defs.get(text(n))
            typ = d.decl.child_by_field_name("type") if d is not None else None
            # (the facts hold a declaration's first declarator: the others looked up here)
            found = text(typ) if typ is not None else local_type(plan.body, text(n))
            if found not in ("float", "double"):
                return False
    return True


def local_type(body: Node, name: str) -> str | None:
    """The type ``name`` is declared with in ``body`` as a plain scalar (any declarator of a
    declaration: ``float lo = 0, hi = 1;`` declares two), or None when it is declared
    otherwise (a pointer, an array) or not exactly once."""
    found = [(decl, inner) for decl in walk(body) if decl.type == "declaration"
             for d in decl.children_by_field_name("declarator")
             if (inner := d.child_by_field_name("declarator") if d.type == "init_declarator"
                 else d) is not None and declarator_name(inner) == name]
    if len(found) != 1 or found[0][1].type != "identifier":
        return None
    typ = found[0][0].child_by_field_name("type")
    return text(typ) if typ is not None else None


def span(node: Node | None) -> tuple[int, int]:
    return (-1, -1) if node is None else (node.start_byte, node.end_byte)


def escape_if_of(brk: Node) -> Node | None:
    """The ``if (C) break;``, ``if (C) { break; }`` or ``if (C) { A...; break; }`` a
    ``break`` ends (no else; the actions ``A`` before it leave nothing: see
    :func:`exit_actions`)."""
    up = brk.parent
    if up is not None and up.type == "compound_statement":
        inner = statements(up)
        if not inner or inner[-1] != brk or not all(_stays(a) for a in inner[:-1]):
            return None
        up = up.parent
    if up is not None and up.type == "if_statement" and \
            up.child_by_field_name("alternative") is None:
        return up
    return None


def exit_actions(exit_if: Node) -> list[Node]:
    """The statements an exit ``if (C) { A...; break; }`` runs before its ``break`` (the
    item's last changes to its state as it leaves); none for ``if (C) break;``."""
    body = exit_if.child_by_field_name("consequence")
    if body is None or body.type != "compound_statement":
        return []
    return statements(body)[:-1]


def _stays(stmt: Node) -> bool:
    """``stmt`` neither leaves nor loops (an exit's action runs once, at the exit)."""
    return not any(n.type in (*LOOPS, "break_statement", "continue_statement",
                              "return_statement", "goto_statement", "labeled_statement")
                   for n in walk(stmt))


def escape_loops(region: list[Node], items: set[str]
                  ) -> dict[tuple[int, int], tuple[Node, list[Node]]]:
    """Top-level ``for`` loops of item-independent length (the counter declared in the
    header, nothing in the header assigned by the body) whose body leaves the loop for one
    item: statements ``if (C) break;`` directly in the loop body, C depending on the item
    (an escape-time loop). The items then share the loop until every item has left it."""
    out: dict[tuple[int, int], tuple[Node, list[Node]]] = {}
    for stmt in region:
        # a counter declared in the header: no one reads it after the loop (the items
        # share it past an item's exit)
        init = stmt.child_by_field_name("initializer")
        if stmt.type != "for_statement" or init is None or init.type != "declaration" or \
                any(mentions(h, items) for h in header(stmt)):
            continue
        body = stmt.child_by_field_name("body")
        if body is None or body.type != "compound_statement" or \
                assigned_in_body(stmt, frozenset()) & {text(n) for h in header(stmt)
                                                        for n in walk(h)
                                                        if n.type == "identifier"}:
            continue
        ifs = [c for c in statements(body) if c.type == "if_statement" and
               (cond := c.child_by_field_name("condition")) is not None and
               mentions(cond, items) and any(
                   b.type == "break_statement" and escape_if_of(b) == c for b in walk(c))]
        if ifs:
            out[span(stmt)] = (stmt, ifs)
    return out


def assigned_in_body(loop: Node, local_arrays: frozenset[str]) -> set[str]:
    """Locals an escape-time loop's body assigns (not declares): they hold the item's
    state when it leaves, so they are per item."""
    body = loop.child_by_field_name("body")
    out: set[str] = set()
    for n in walk(body) if body is not None else []:
        if n.type in ("assignment_expression", "update_expression"):
            out |= assigned_names(n, local_arrays)
    return out


def trip_count(loop: Node) -> int | None:
    """Trips of ``for (int v = A; v < B; ++v)`` (``<=``, ``B > v``, ``v++``, ``v += 1``
    too) with A and B integer constants (literals or integer macros), else None."""
    if loop.type != "for_statement":
        return None
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None:
        return None
    if init.type == "declaration":
        var, _d, start_node = declared_name(init)
    elif init.type == "assignment_expression" and text(
            init.child_by_field_name("operator")) == "=":
        var, start_node = text(init.child_by_field_name("left")), \
            init.child_by_field_name("right")
    else:
        return None
    start = int_value(start_node)
    bound = upper_bound(cond, var)
    end = int_value(bound[0]) if bound is not None else None
    if start is None or bound is None or end is None:
        return None
    step = text(update).replace(" ", "")
    if step not in (f"++{var}", f"{var}++", f"{var}+=1"):
        return None
    return max(0, end - start + bound[1])


def upper_bound(cond: Node, var: str) -> tuple[Node, bool] | None:
    """(B, whether B itself is a trip) of the loop test ``var < B``, ``var <= B``, ``B >
    var`` or ``B >= var``; None for any other test."""
    parts = binary(cond)
    if parts is None:
        return None
    left, op, right = parts
    if text(strip(right)) == var and op in (">", ">="):
        left, right, op = right, left, {">": "<", ">=": "<="}[op]
    if text(strip(left)) != var or op not in ("<", "<="):
        return None
    return right, op == "<="
