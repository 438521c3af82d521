"""ANY_BRANCH: a per-item ``if`` of a shared loop tested once for all the thread's items.

Under ITEMS_PER_THREAD (:mod:`.ilp`) a loop's ``if (C) { S }`` on the item's state (the
rescale of a recurrence, ``if (fabs(j) > 1e60) { j *= 1e-60; ... }``) runs in an item loop
of its own. nvcc if-converts it: every trip computes ``S`` for every item and selects (on
sm_90, at four items of besselj0_miller_f64, three double multiplies and six selects an
item a trip, for a branch rarely taken). With ``ANY_BRANCH = 1`` the items'
conditions are tested first, OR-ed into one flag, and the item loop runs only when the
flag holds: a trip where no item needs ``S`` costs the tests and one branch. The item loop
itself is the one as written (each item tests its own ``C`` again), so every value is
bit for bit the code's: the flag is false only when every item's ``C`` is false, and then
the item loop would have run no ``S``.

Legal only where testing the conditions before any ``S`` runs reads what the item loop's
tests read (each refusal names the line): no ``else`` (it would run when the flag is
false); ``C`` has no effect and cannot fault for any item's state, running or done (no
assignment, load or call other than a pure function); ``S`` leaves the item loop only at
its end (no ``break``, ``continue``, ``return``, ``goto``, barrier or warp collective),
calls only pure functions and assigns only the items' own locals (the per-item copies ilp
made, which ``C`` of another item does not read) or locals it declares. Only an ``if``
directly in the body of a loop the items share, where ilp renders it in an item loop, and
with no declaration before it in that body of a local the items share (the item loop cut
at the ``if`` would end its scope); at one item the knob would test ``C`` twice (the
constraint keeps it 0 there).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import line, mentions, text, walk, write_target
from workbench.templater.item_state import declarators, is_item_stmt, span
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls, why_not_pure
from workbench.templater.vector import Illegal

NAME = "ANY_BRANCH"
FLAG = "wb_any"
_LEAVES = {"break_statement": "`break`", "continue_statement": "`continue`",
           "return_statement": "`return`", "goto_statement": "`goto`",
           "labeled_statement": "a label"}
_COLLECTIVE = ("__syncthreads", "__syncwarp", "__shfl", "__ballot", "__any", "__all",
               "__activemask", "__reduce", "__match")


def find_any_ifs(plan: Plan, loops: list[Node], items: set[str], arrays: set[str],
                 taken: set[tuple[int, int]], items_param: str) -> dict[tuple[int, int], Node]:
    """The ``if`` statements directly in the shared ``loops``' bodies that take the knob
    (their spans -> their conditions); the knob, its constraint and the notes added."""
    found: dict[tuple[int, int], Node] = {}
    for loop in loops:
        body = loop.child_by_field_name("body")
        if body is None or body.type != "compound_statement":
            continue
        shared = False
        for stmt in body.named_children:
            if stmt.type == "declaration" and not set(declarators([stmt])) <= arrays:
                shared = True  # its item loop would end its scope (any_parts): none after
            if stmt.type != "if_statement" or span(stmt) in taken or \
                    not is_item_stmt(stmt, items):
                continue
            if shared:
                plan.note(NAME, False, "the items' `if` tested once: a local every item "
                          "shares is declared before it in the loop", stmt)
                continue
            try:
                found[span(stmt)] = _condition(plan, stmt, arrays)
            except Illegal as exc:
                plan.note(NAME, False, f"the items' `if` tested once: {exc.reason}",
                          exc.node or stmt)
    if not found:
        return found
    first = min(found.values(), key=lambda n: n.start_byte)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: a loop's per-item `if` tested for all the "
                                         "thread's items first, its item loop skipped when "
                                         "it holds for none (a rarely taken `if`; as written: "
                                         "0)"},
                   f"{line(first)}: {text(first)[:60]}")
    plan.constrain(f"{items_param} > 1 or {NAME} == 0")
    for cond in found.values():
        plan.note(NAME, True, f"`if {text(cond)[:60]}` tested for every item before its item "
                  "loop, which runs only when one holds (bit for bit: the loop as written)",
                  cond)
    return found


def any_parts(run: list[Node], found: dict[tuple[int, int], Node]
              ) -> list[tuple[list[Node], Node | None]]:
    """``run`` (an item loop's statements) cut so each ``if`` of ``found`` has an item loop
    of its own (with its condition), the statements around it theirs (with None)."""
    parts: list[tuple[list[Node], Node | None]] = []
    rest: list[Node] = []
    for stmt in run:
        if span(stmt) in found:
            if rest:
                parts.append((rest, None))
                rest = []
            parts.append(([stmt], found[span(stmt)]))
        else:
            rest.append(stmt)
    if rest:
        parts.append((rest, None))
    return parts


def wrapped(loop: str, condition: str, item: str, items_param: str, indent: str) -> str:
    """``loop`` (the ``if``'s item loop, as rendered) behind the items' OR-ed conditions."""
    return (f"#if {NAME}\n{indent}{{\n{indent}bool {FLAG} = false;  // the items' test, once\n"
            f"{indent}#pragma unroll\n{indent}for (int {item} = 0; {item} < {items_param}; "
            f"++{item}) {FLAG} = {FLAG} | (bool){condition};\n"
            f"{indent}if ({FLAG}) {{\n#endif  // {NAME}\n{loop}"
            f"#if {NAME}\n{indent}}}\n{indent}}}\n#endif  // {NAME}\n")


def _condition(plan: Plan, stmt: Node, arrays: set[str]) -> Node:
    if stmt.child_by_field_name("alternative") is not None:
        raise Illegal("it has an `else` (the flag false would skip it)", stmt)
    clause = stmt.child_by_field_name("condition")
    values = [] if clause is None else [c for c in clause.named_children
                                        if c.type != "comment"]
    if clause is None or len(values) != 1 or values[0].type in ("declaration",
                                                                "init_statement"):
        raise Illegal("a condition it cannot read (a declaration or `constexpr`)", stmt)
    if not mentions(values[0], arrays):
        raise Illegal("the condition is the same for every item", clause)
    pure = pure_calls(plan.source)
    for n in walk(values[0]):
        if n.type in ("assignment_expression", "update_expression", "comma_expression"):
            raise Illegal(f"the condition has an effect (`{text(n)[:40]}`)", n)
        if n.type in ("subscript_expression", "field_expression") or (
                n.type == "pointer_expression" and text(n).lstrip().startswith("*")):
            raise Illegal(f"the condition loads `{text(n)[:40]}` (tested for an item that "
                          "is done, it could fault)", n)
        if n.type == "call_expression" and _callee(n) not in pure:
            raise Illegal(f"the condition calls {why_not_pure(plan.source, _callee(n))}", n)
    then = stmt.child_by_field_name("consequence")
    assert then is not None
    _check_side(plan, then, arrays, pure)
    return clause


def _check_side(plan: Plan, side: Node, arrays: set[str], pure: frozenset[str]) -> None:
    own = set(declarators([side]))  # the locals it declares
    for n in walk(side):
        if n.type in _LEAVES:
            raise Illegal(f"its body holds {_LEAVES[n.type]}", n)
        if n.type == "call_expression":
            name = _callee(n)
            if name.startswith(_COLLECTIVE):
                raise Illegal(f"its body calls `{name}` (a barrier or warp collective)", n)
            if name not in pure:
                raise Illegal(f"its body calls {why_not_pure(plan.source, name)}", n)
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is not None and target.type == "identifier" and \
                    text(target) not in arrays and text(target) not in own:
                raise Illegal(f"`{text(n)[:50]}` assigns `{text(target)}`, which every "
                              "item shares (another item's test could read it)", n)


def _callee(call: Node) -> str:
    fn = call.child_by_field_name("function")
    return text(fn) if fn is not None else ""
