"""The interior copy of a register window's walk (LANE_WINDOW of :mod:`.const_window`).

The window reads a slot through ``wb_once(have[slot], ...)``: the first output whose bounds
checks pass loads it. Where those checks (the kernel's ``if (xx < 0 || xx >= w)
continue;``, the items' early exit, the rows past the image) are runtime values, so is every
``have`` flag: ptxas keeps a predicate and a branch per read (dwconv3_nhwc at 2 channels x
4 x 4 outputs, sm_90 SASS: 144 guarded loads, 305 branches, 3688 instructions; the expert's
window: 36 loads, 11 branches). Known practice for padded stencils and convolutions is the
interior/boundary split: the few threads whose window crosses the image's edge run the
checks, every other thread runs the walk without them, where the flags are constants and the
window is straight-line code (the same dwconv3_nhwc walk: 36 loads).

The rule, legal on the parse: every ``if`` inside the items that skips (its only statement a
``continue``, ``break`` or the items' early exit) or guards a windowed read (no ``else``) has
a condition that is pure (no memory read, assignment or impure call) and reads only loop
counters of enclosing constant-trip ``for`` loops, locals declared inside the items once
with a pure value (never assigned), locals declared before the items and never assigned,
and scalar parameters. Before the items the thread evaluates each such condition at every
counter value of the loops around it (the items, the rows, the taps: a superset of the
iterations that reach it) and ANDs the values the interior copy assumes (a skip false, a
guard true); the rows' own skip (``y >= h``) is one of them. Where all hold, the interior
copy runs the same statements on the same values in the same order, those conditions
written ``(false && (c))`` / ``(true || (c))``: bit for bit the general copy's result. The
branch is taken by a warp's vote on the device (a lane whose own test holds but whose
warp's does not runs the general copy, as correct); the host simulation tests the lane.
Only with ``LANE_WINDOW == 1`` (the window's flags are what the copy resolves).

Refused (noted with the line; the window keeps its single, general copy) where an ``if`` on
the way fails the rule.

LOADS_FIRST, the checked copy's loads ahead of its sums: in that copy every load sits behind
its own checks and its sum reads it at once, so a thread at the image's edge has one load
in flight at a time (dwconv3_nhwc at the expert's pick, sm_90 SASS: each LDG.E.64 followed
by its two FFMAs before the next branch); those threads are the grid's first and last block
rows and columns, and the last row is the last the device schedules. Under the interior
copy's own register test the checked copy is preceded by a pass that walks the same items,
rows and taps with the same checks and the window's load-once reads, its stores to the
kernel's pointer parameters ``if (false)`` (dead code, and with them the sums): it loads
exactly the slots the checked copy reads, all before the first sum. The checked copy then
reads the slots alone (``#undef``/``#define`` of the window's read). Legal on the parse:
every call in the walk is pure, every assignment is to a local declared in the walk (an
element of a local array of the walk) or a store statement to a pointer parameter that the
walk reads nowhere else, so the pass takes the checked copy's branches and touches no
memory but the window's (read-only) slots; refused with the line otherwise (the checked
copy keeps its first-use loads).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import declared_name, text, walk, write_target
from workbench.templater.item_state import assigned_names, trip_count
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.rewrite import Rewriter, warp_all
from workbench.templater.vector import Illegal

FLAG = "wb_inner"
FIRST_NOTE = "LOADS_FIRST"
_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_EXITS = ("continue_statement", "break_statement", "return_statement")


@dataclass
class Known:
    """Which copy is being rendered: the interior one (its conditions known) or not, and
    whether it is the checked copy's loads-first pass (its stores dead code)."""

    interior: bool = False
    loads_only: bool = False


@dataclass(frozen=True)
class Test:
    """One condition the interior copy knows: the ``if``'s condition, its value there."""

    cond: Node
    holds: bool  # True: a guard (known true); False: a skip (known false)
    need: frozenset[int]  # the declarations (start bytes) the test makes again for it


@dataclass(frozen=True)
class Walk:
    """The items' statements (``first`` .. ``last``, top level), the rendered headers of the
    items and rows loops around them, and the rows' declaration, skip and flag."""

    first: Node
    last: Node
    items: str  # `for (...)` header of the items loop
    rows: tuple[str, Node, str, list[bool]] | None  # rows loop header, `y` decl, skip, flag


def plan_interior(plan: Plan, walk_: Walk, reads: list[Node]) -> list[Test]:
    """The conditions the interior copy knows (Illegal where an ``if`` on the way to a
    windowed read or a skip fails the rule)."""
    start, end = walk_.first.start_byte, walk_.last.end_byte
    pure = pure_calls(plan.source)
    tests: list[Test] = []
    for n in _statements(plan, start, end):
        if n.type != "if_statement":
            continue
        guard = n.child_by_field_name("alternative") is None and \
            any(n.start_byte <= r.start_byte < n.end_byte for r in reads)
        if not _skips(n) and not guard:
            if any(n.start_byte <= r.start_byte < n.end_byte for r in reads):
                raise Illegal(f"`{text(n)[:50]}` (with an else) holds a windowed read: the "
                              "interior copy could not know its branch", n)
            continue
        cond = _condition(n)
        need = _check(plan, cond, pure, start)
        tests.append(Test(cond, guard and not _skips(n), frozenset(need)))
    return tests


def plan_loads_first(plan: Plan, walk_: Walk) -> list[Node]:
    """The statements the checked copy's loads-first pass makes dead code: each an
    expression statement that stores to a pointer parameter's memory (Illegal where the
    pass could do anything else than the window's loads: see the module doc)."""
    start, end = walk_.first.start_byte, walk_.last.end_byte
    region = _statements(plan, start, end)
    pure = pure_calls(plan.source)
    pointers = {p.name for p in plan.kernel.params if p.is_pointer}
    inside: dict[str, bool] = {}  # a local declared in the walk: whether it is an array
    for n in region:
        if n.type == "declaration":
            for d in n.children_by_field_name("declarator"):
                inner = d.child_by_field_name("declarator") if d.type == "init_declarator" \
                    else d
                if inner is not None and inner.type == "identifier":
                    inside[text(inner)] = False
                elif inner is not None and inner.type == "array_declarator":
                    name = next((text(x) for x in walk(inner) if x.type == "identifier"), "")
                    inside[name] = True
    stores: list[Node] = []
    stored: set[str] = set()
    for n in region:
        if n.type == "call_expression" and \
                text(n.child_by_field_name("function")) not in pure:
            raise Illegal(f"`{text(n)[:50]}` calls what is not pure: a loads-first pass "
                          "would call it twice", n)
        target = write_target(n)
        if target is None:
            continue
        root, memory = target, False
        while root.type in ("subscript_expression", "field_expression",
                            "pointer_expression"):
            memory = True
            nxt = root.child_by_field_name("argument")
            if nxt is None:
                break
            root = nxt
        name = text(root)
        if root.type == "identifier" and name in inside and inside[name] == memory:
            continue  # a local of the walk (an element of a local array)
        up = n.parent
        if memory and root.type == "identifier" and name in pointers and \
                up is not None and up.type == "expression_statement":
            stores.append(up)
            stored.add(name)
            continue
        raise Illegal(f"`{text(n)[:50]}` changes what the walk does not own (not a local "
                      "of the walk, nor a store statement to a pointer parameter): a "
                      "loads-first pass would change it", n)
    for n in region:
        if n.type == "identifier" and text(n) in stored and not any(
                s.start_byte <= n.start_byte and n.end_byte <= _target_end(s) for s in stores):
            raise Illegal(f"`{text(n)}` is read in the walk besides its stores: a "
                          "loads-first pass, its stores dead, could read other values", n)
    return stores


def _target_end(store: Node) -> int:
    """The end of the stored-to side of an expression statement's assignment."""
    expr = store.named_children[0]
    target = expr.child_by_field_name("left") or expr.child_by_field_name("argument")
    assert target is not None
    return target.end_byte


def _statements(plan: Plan, start: int, end: int) -> list[Node]:
    return [n for n in walk(plan.body) if start <= n.start_byte and n.end_byte <= end]


def _skips(n: Node) -> bool:
    """``if (c) continue;`` (or ``break;``, ``return;``, alone in braces), no ``else``."""
    if n.child_by_field_name("alternative") is not None:
        return False
    body = n.child_by_field_name("consequence")
    while body is not None and body.type == "compound_statement" and \
            len(body.named_children) == 1:
        body = body.named_children[0]
    return body is not None and body.type in _EXITS and not body.named_children


def _condition(n: Node) -> Node:
    clause = n.child_by_field_name("condition")
    value = clause.child_by_field_name("value") if clause is not None else None
    if value is None:
        raise Illegal(f"`{text(n)[:50]}` has no plain condition", n)
    return value


def _check(plan: Plan, cond: Node, pure: frozenset[str], start: int) -> set[int]:
    """``cond`` can be evaluated before the items at every counter value (the rule): the
    declarations (their start bytes) the test must make again for it."""
    if not _pure(plan, cond, pure):
        raise Illegal(f"`{text(cond)[:50]}` reads memory, assigns or calls what is not pure: "
                      "the interior test could not run first", cond)
    loops = _loops_around(cond, start)
    scopes = {plan.body.start_byte} | {_body(loop).start_byte for _c, loop in loops}
    need: set[int] = set()
    _names(plan, cond, {c for c, _ in loops}, scopes, start, pure, need, 0)
    return need


def _names(plan: Plan, node: Node, counters: set[str], scopes: set[int], start: int,
           pure: frozenset[str], need: set[int], depth: int) -> None:
    """Every name ``node`` reads is available to the test; the declarations it needs added
    to ``need`` (their values' names in turn)."""
    locals_ = _locals(plan)
    for n in walk(node):
        if n.type != "identifier" or n.parent is None or (
                n.parent.type == "call_expression" and
                n == n.parent.child_by_field_name("function")):
            continue
        name = text(n)
        if name in counters:
            continue
        local = locals_.get(name)
        if local is None:
            param = next((p for p in plan.kernel.params if p.name == name), None)
            if param is None or not param.is_pointer:
                continue  # a scalar parameter, a macro or a global constant
        elif local.once and local.decl.start_byte < start:
            continue  # the same value before the items
        elif local.once and depth < 8 and local.decl.parent is not None and \
                local.decl.parent.start_byte in scopes and \
                local.decl.start_byte < node.start_byte and \
                all(_pure(plan, v, pure) for v in local.values):
            need.add(local.decl.start_byte)
            for v in local.values:
                _names(plan, v, counters, scopes, start, pure, need, depth + 1)
            continue
        raise Illegal(f"`{text(node)[:50]}` reads `{name}`, which the interior test before "
                      "the items could not compute", node)


@dataclass(frozen=True)
class _Local:
    """A local's declaration (every declarator's value: the test renders it whole) and
    whether it is declared once with a value and never assigned nor its address taken."""

    decl: Node
    values: tuple[Node, ...]
    once: bool


def _locals(plan: Plan) -> dict[str, _Local]:
    """Every local of the kernel, each declarator of a declaration (``int a = .., b = ..``)
    its own name."""
    changed: set[str] = set()
    for n in walk(plan.body):
        target = None
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        elif n.type == "pointer_expression" and text(n).startswith("&"):
            target = n.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            changed.add(text(target))
    seen: dict[str, _Local] = {}
    for n in walk(plan.body):
        if n.type != "declaration":
            continue
        declarators = n.children_by_field_name("declarator")
        values = tuple(v for d in declarators if d.type == "init_declarator"
                       for v in [d.child_by_field_name("value")] if v is not None)
        for d in declarators:
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            name = text(inner) if inner is not None and inner.type == "identifier" else None
            if name is None:  # an array or a pointer: never a scalar the test may read
                name = next((text(x) for x in walk(d) if x.type == "identifier"), None)
                if name is not None:
                    seen[name] = _Local(n, values, False)
                continue
            once = name not in seen and name not in changed and d.type == "init_declarator"
            seen[name] = _Local(n, values, once)
    return seen


def _body(loop: Node) -> Node:
    body = loop.child_by_field_name("body")
    if body is None:
        raise Illegal(f"`{text(loop)[:50]}` has no body", loop)
    return body


def _loops_around(node: Node, start: int) -> list[tuple[str, Node]]:
    """(counter, loop) of the ``for`` loops around ``node`` inside the items, outermost
    first; Illegal for any other loop (its iterations could not be enumerated first)."""
    out: list[tuple[str, Node]] = []
    up = node.parent
    while up is not None and up.start_byte >= start:
        if up.type in ("while_statement", "do_statement"):
            raise Illegal(f"`{text(node)[:50]}` is inside a {up.type.split('_')[0]} loop: "
                          "the interior test could not enumerate it", up)
        if up.type == "for_statement":
            init = up.child_by_field_name("initializer")
            body = up.child_by_field_name("body")
            names = [declared_name(init)[0]] if init is not None and \
                init.type == "declaration" else []
            if trip_count(up) is None or body is None or len(names) != 1 or \
                    names[0] in assigned_names(body):
                raise Illegal(f"the loop around `{text(node)[:50]}` has no constant trip "
                              "count (or assigns its counter)", up)
            out.insert(0, (names[0], up))
        up = up.parent
    return out


def _pure(plan: Plan, value: Node, pure: frozenset[str]) -> bool:
    """No memory read, assignment or call of what is not pure."""
    for n in walk(value):
        if n.type in ("assignment_expression", "update_expression", "subscript_expression") \
                or (n.type == "pointer_expression" and text(n).startswith("*")):
            return False
        if n.type == "call_expression" and \
                text(n.child_by_field_name("function")) not in pure:
            return False
    return True


def emit_interior(plan: Plan, walk_: Walk, tests: list[Test], knob: str,
                  fits: str = "1", first: tuple[list[Node], str] | None = None) -> None:
    """``#if knob == 1 && (fits)`` (``fits``: a preprocessor test of the copy's registers
    against the launch's cap): the test and the warp's vote set the flag, ``#else`` the flag
    is a constant false (the copy below is then dead code the compiler drops); then
    ``if (flag) { interior copy } else { items' walk }``; the known conditions rewritten in
    the interior copy only. ``first`` (None: none): the stores of :func:`plan_loads_first`
    and the lines that make the window's reads its slots alone; under the same test the
    checked copy is preceded by its loads-first pass (the same walk, those stores
    ``if (false)``), then reads the slots it loaded through those lines."""
    known = Known()
    start, end = walk_.first.start_byte, walk_.last.end_byte
    outer = [e for e in plan.rw.edits if e.make is not None and e.start <= start and
             e.end >= end and e.start < e.end]
    if not outer:
        raise Illegal("no items loop around the walk", walk_.first)
    loop = max(outer, key=lambda e: e.end - e.start)
    items = loop.make
    assert items is not None

    def both(rw: Rewriter) -> str:
        if known.interior:
            return items(rw)
        check = _test_text(plan, rw, walk_, tests)
        _set(known, walk_, True)
        try:
            fast = items(rw)
        finally:
            _set(known, walk_, False)
        loads = ""
        if first is not None:
            known.loads_only = True
            try:
                loads = (f"\n#if {knob} == 1 && ({fits})  // {FIRST_NOTE}: the window's loads "
                         f"of this thread first, no output written\n  {items(rw)}\n"
                         f"{first[1]}  // the walk below reads what that pass loaded\n"
                         "#endif\n")
            finally:
                known.loads_only = False
        return (f"\n#if {knob} == 1 && ({fits})  // the thread's window inside the image: "
                f"the walk without its checks\n  bool {FLAG} = true;\n{check}\n"
                f"{warp_all(FLAG)}#else\n  const bool {FLAG} = false;  // the walk with its "
                f"checks only (the copy below is dead code)\n#endif\n"
                f"  if ({FLAG}) {{\n  {fast}\n  }} else {{{loads}\n  {items(rw)}\n  }}")

    plan.rw.discard([loop])
    plan.rw.replace_span(loop.start, loop.end, make=both)
    for store in first[0] if first is not None else []:
        plan.rw.replace_span(store.start_byte, store.end_byte,
                             make=_loads_only(known, store.start_byte, store.end_byte))
    for t in tests:
        words = "(true || (" if t.holds else "(false && ("
        plan.rw.replace_span(t.cond.start_byte, t.cond.start_byte,
                             make=_interior_only(known, words))
        plan.rw.replace_span(t.cond.end_byte, t.cond.end_byte,
                             make=_interior_only(known, "))"))


def _set(known: Known, walk_: Walk, value: bool) -> None:
    known.interior = value
    if walk_.rows is not None:
        walk_.rows[3][0] = value


def _loads_only(known: Known, start: int, end: int) -> Callable[[Rewriter], str]:
    """The statement at ``[start, end)`` as rendered, dead code in the loads-first pass (a
    whole-statement edit: an insert at its first byte would repeat inside an edit of its
    target that starts there too)."""
    def make(rw: Rewriter) -> str:
        inner = rw.render(start, end)
        return f"if (false) {{ {inner} }}" if known.loads_only else inner
    return make


def _interior_only(known: Known, words: str) -> Callable[[Rewriter], str]:
    def make(_rw: Rewriter) -> str:
        return words if known.interior else ""
    return make


def _test_text(plan: Plan, rw: Rewriter, walk_: Walk, tests: list[Test]) -> str:
    """The items' and rows' loops; in them, per condition, the loops around it and the
    declarations it needs, the flag ANDed with the condition's known value."""
    start = walk_.first.start_byte
    need = set().union(*(t.need for t in tests)) if tests else set()
    split = walk_.rows[1].start_byte if walk_.rows is not None else start
    lines = ["  {  // every item, row and tap of this thread", "#pragma unroll",
             walk_.items + " {"]
    lines += _decls(plan, rw, need, start, split, plan.body)
    if walk_.rows is not None:
        header, decl, skip, _flag = walk_.rows
        lines += ["#pragma unroll", header + " {",
                  "  " + rw.render(decl.start_byte, decl.end_byte),
                  f"  {FLAG} = {FLAG} && !({skip});"]
    again = {walk_.rows[1].start_byte} if walk_.rows is not None else set()
    for t in tests:
        lines.append("  {")
        lines += _decls(plan, rw, set(t.need) - again, split, t.cond.start_byte, plan.body)
        loops = [loop for _c, loop in _loops_around(t.cond, start)]
        for loop in loops:
            head = _header(rw, loop)
            lines += ([] if head.startswith("#pragma unroll") else ["#pragma unroll"]) + \
                [head + " {"]
            lines += _decls(plan, rw, set(t.need), loop.start_byte, t.cond.start_byte,
                            _body(loop))
        value = rw.render(t.cond.start_byte, t.cond.end_byte)
        lines.append(f"  {FLAG} = {FLAG} && " + (f"({value});" if t.holds else
                                                   f"!({value});"))
        lines += ["  }"] * (len(loops) + 1)
    lines += ["  }"] * (2 if walk_.rows is not None else 1) + ["  }"]
    return "\n".join(lines)


def _header(rw: Rewriter, loop: Node) -> str:
    return rw.render(loop.start_byte, _body(loop).start_byte).rstrip()


def _decls(plan: Plan, rw: Rewriter, need: set[int], lo: int, hi: int,
           scope: Node) -> list[str]:
    """The needed declarations directly in ``scope`` within ``[lo, hi)``, rendered."""
    return ["  " + rw.render(n.start_byte, n.end_byte) for n in scope.named_children
            if n.type == "declaration" and n.start_byte in need and lo <= n.start_byte < hi]
