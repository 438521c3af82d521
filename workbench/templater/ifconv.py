"""BRANCHLESS: an ``if`` inside a loop of a per-element kernel, both sides computed, then selected.

A compute-bound kernel whose loop body branches on a per-item value (``if (s > 0) acc +=
A; else acc += B;``) diverges inside a warp: the warp runs both sides one after the other,
each with part of its lanes masked, and an interleaved set of items (ITEMS_PER_THREAD)
cannot overlap across the branch. With ``BRANCHLESS = 1`` the condition is evaluated once,
each side runs on copies of the locals it assigns, and every assigned local then takes the
copy of the side the condition picked (``acc = c ? then_acc : else_acc``: a select, no
branch). ``BRANCHLESS = 0`` is the code as written (kept under ``#else``).

Legal only where running the untaken side changes nothing but registers (each refusal names
the line): both sides are straight-line code (no loop, nested ``if``/``switch``, ``return``,
``break``, ``continue``, ``goto`` or ``asm``); they assign only thread-local scalars (a
kernel local or a scalar parameter; never memory, an array element or a file-scope
variable); they call only pure functions (known math, or a ``__device__`` function of the file whose
body :mod:`.purity` proves pure); and every load they make (``a[j]``,
``*p``, ``p->f``) is also made, at the same address, unconditionally before the ``if`` in
the same block with nothing in the address reassigned since, or reads a file-scope device
array at an index :mod:`.bounds` shows inside it (so it cannot fault when the other side
was the one taken). Composes with ITEMS_PER_THREAD (:mod:`.ilp`): the rewrite is
a lazy edit rendered with ilp's per-item names, so it is applied after ilp; an ``if`` whose
condition is the same for every item while its sides are per item (ilp splits those sides
into item loops) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.identifiers import identifier_problem
from workbench.templater.analysis import LOOPS, inside_loop, line, text, walk, write_target
from workbench.templater.bounds import in_bounds
from workbench.templater.ilp import IT
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls, why_not_pure
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import Illegal

NAME = "BRANCHLESS"
_FORBIDDEN = {
    **{t: "a loop" for t in LOOPS},
    "if_statement": "a nested `if`", "switch_statement": "a `switch`",
    "return_statement": "`return`", "break_statement": "`break`",
    "continue_statement": "`continue`", "goto_statement": "`goto`",
    "labeled_statement": "a label", "gnu_asm_expression": "inline asm",
    "asm_statement": "inline asm", "new_expression": "`new`",
    "delete_expression": "`delete`", "lambda_expression": "a lambda",
}


@dataclass(frozen=True)
class _Candidate:
    """An ``if`` that converts: its condition, its sides and the locals they assign."""

    stmt: Node
    condition: Node  # the condition's expression (no parentheses)
    sides: tuple[Node, ...]  # then, and else when written
    assigned: tuple[tuple[str, ...], ...]  # per side: the outer locals it assigns, in order
    uses: dict[str, Node]  # an outer local -> one node naming it (renders its current value)


def apply_ifconv(plan: Plan) -> bool:
    """Give every convertible ``if`` inside a loop a BRANCHLESS form; True when one did."""
    if NAME in plan.params:
        return False
    found: list[_Candidate] = []
    for stmt in walk(plan.body):
        if stmt.type != "if_statement" or not inside_loop(stmt, plan.body):
            continue
        try:
            found.append(_candidate(plan, stmt))
        except Illegal as exc:
            plan.note(NAME, False, f"`if` both sides computed: {exc.reason}", exc.node or stmt)
    if not found:
        return False
    for k, cand in enumerate(found):
        _rewrite(plan, cand, k)
    first = found[0].stmt
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: both sides of the loop's `if` computed, then "
                                         "selected (no divergent branch; as written: 0)"},
                   f"{line(first)}: {text(first).splitlines()[0][:60]}")
    for cand in found:
        names = sorted({n for side in cand.assigned for n in side})
        plan.note(NAME, True, f"both sides computed, then {', '.join(names) or 'nothing'} "
                  "selected by the condition", cand.stmt)
    return True


def _candidate(plan: Plan, stmt: Node) -> _Candidate:
    clause = stmt.child_by_field_name("condition")
    if clause is None or any(c.type == "constexpr" or text(c) == "constexpr"
                             for c in stmt.children):
        raise Illegal("an `if constexpr` or a condition it cannot read", stmt)
    values = [c for c in clause.named_children if c.type != "comment"]
    if len(values) != 1 or values[0].type in ("declaration", "init_statement"):
        raise Illegal("the condition declares a variable", clause)
    then = stmt.child_by_field_name("consequence")
    alt = stmt.child_by_field_name("alternative")
    assert then is not None
    sides: list[Node] = [then]
    if alt is not None:
        inner = [c for c in alt.named_children if c.type != "comment"]
        if len(inner) != 1:
            raise Illegal("an else branch it cannot read", alt)
        sides.append(inner[0])
    assigned: list[tuple[str, ...]] = []
    uses: dict[str, Node] = {}
    for side in sides:
        names = _check_side(plan, stmt, side)
        assigned.append(tuple(names))
        for n in walk(side):
            if n.type == "identifier" and text(n) in names:
                uses.setdefault(text(n), n)
    _check_items(plan, values[0], sides)
    return _Candidate(stmt, values[0], tuple(sides), tuple(assigned), uses)


def _check_side(plan: Plan, stmt: Node, side: Node) -> list[str]:
    """The outer locals ``side`` assigns (in order), or Illegal naming what is not allowed."""
    declared = {_unwrap(d) for n in walk(side) if n.type == "declaration"
                for d in n.children_by_field_name("declarator")}
    out: list[str] = []
    for n in walk(side):
        if n.type in _FORBIDDEN:
            raise Illegal(f"a side holds {_FORBIDDEN[n.type]}", n)
        if n.type == "declaration" and any(text(c) in ("static", "__shared__", "extern")
                                           for c in n.children):
            raise Illegal("a side declares a static or shared variable", n)
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            name = text(fn) if fn is not None and fn.type == "identifier" else ""
            if name not in pure_calls(plan.source):
                raise Illegal(f"a side calls {why_not_pure(plan.source, text(fn))}", n)
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is None or target.type != "identifier":
                raise Illegal(f"`{text(n)[:60]}` writes memory (a side may assign only "
                              "thread-local scalars)", n)
            name = text(target)
            if name in declared:
                continue
            if not _thread_local(plan, name):
                raise Illegal(f"`{text(n)[:60]}` assigns `{name}`, not a thread-local "
                              "variable", n)
            if identifier_problem(name) is not None:
                raise Illegal(f"`{name}` cannot name a copy", n)
            if name not in out:
                out.append(name)
        if _is_load(n) and not in_bounds(plan, n):
            _check_load(stmt, n, side)
    return out


def _unwrap(d: Node) -> str:
    while d.type in ("init_declarator", "pointer_declarator", "array_declarator",
                     "reference_declarator"):
        inner = d.child_by_field_name("declarator")
        if inner is None:
            break
        d = inner
    return text(d)


def _thread_local(plan: Plan, name: str) -> bool:
    """A local of the kernel (any declarator of a declaration in its body, not static or
    shared) or one of its parameters."""
    for decl in walk(plan.body):
        if decl.type != "declaration" or name not in {
                _unwrap(d) for d in decl.children_by_field_name("declarator")}:
            continue
        return not any(text(c) in ("static", "__shared__", "extern") for c in decl.children)
    try:
        plan.kernel.param(name)
    except KeyError:
        return False
    return True


def _is_load(n: Node) -> bool:
    """A read of memory: ``a[j]``, ``*p``, ``p->f`` (not under ``&``, not a write target)."""
    load = n.type == "subscript_expression" or (
        n.type == "pointer_expression" and text(n).lstrip().startswith("*")) or (
        n.type == "field_expression" and any(text(c) == "->" for c in n.children))
    if not load:
        return False
    up = n.parent
    return not (up is not None and up.type == "pointer_expression" and
                text(up).lstrip().startswith("&"))


def _check_load(stmt: Node, load: Node, side: Node) -> None:
    """The load is made unconditionally earlier in the ``if``'s block, its address unchanged."""
    want = _squash(text(load))
    address = {text(n) for n in walk(load) if n.type == "identifier"}
    block = stmt.parent
    earlier: list[Node] = []
    if block is not None and block.type == "compound_statement":
        earlier = [c for c in block.named_children if c.end_byte <= stmt.start_byte]
    for k, prev in enumerate(earlier):
        if any(_is_load(n) and _squash(text(n)) == want and not _conditional(n, prev)
               for n in walk(prev)):
            since = [*earlier[k:], side]
            if not any(_assigns(s) & address for s in since):
                return
    raise Illegal(f"a side loads `{text(load)[:40]}`, which is not loaded unconditionally "
                  "before the `if` (the side not taken could fault)", load)


def _squash(s: str) -> str:
    return "".join(s.split())


def _conditional(n: Node, top: Node) -> bool:
    up = n.parent
    while up is not None and up != top.parent:
        if up.type in (*LOOPS, "if_statement", "switch_statement", "conditional_expression") \
                or (up.type == "binary_expression" and
                    any(text(c) in ("&&", "||") for c in up.children)):
            return True
        up = up.parent
    return False


def _assigns(node: Node) -> set[str]:
    out = set()
    for n in walk(node):
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            out |= {text(i) for i in walk(target) if i.type == "identifier"} if target else set()
    return out


def _check_items(plan: Plan, condition: Node, sides: list[Node]) -> None:
    """Under ITEMS_PER_THREAD the ``if`` runs whole inside an item loop only when its
    condition is per item; otherwise ilp splits its sides into item loops of their own."""
    def per_item(node: Node) -> bool:
        return any(e.make is None and e.text.endswith(f"[{IT}]") and
                   node.start_byte <= e.start and e.end <= node.end_byte
                   for e in plan.rw.edits)
    if any(per_item(s) for s in sides) and not per_item(condition):
        raise Illegal("the condition is the same for every item while its sides are per item "
                      "(ITEMS_PER_THREAD runs the sides in item loops of their own)", condition)


def _rewrite(plan: Plan, cand: _Candidate, k: int) -> None:
    """``#if BRANCHLESS`` (both sides, then selects) ``#else`` (as written) ``#endif``:
    lazy, so edits inside the ``if`` (ilp's per-item names) appear in both forms."""
    def make(rw: Rewriter) -> str:
        c = f"wb_c{k}"
        out = [f"\n#if {NAME}\n{{  // both sides computed, then selected\n",
               f"const bool {c} = ({rw.text(cand.condition)});\n"]
        copies: dict[str, str] = {}
        bodies: list[str] = []
        for tag, side, names in zip("te", cand.sides, cand.assigned, strict=False):
            rename = {}
            for name in names:
                copy = f"wb_{tag}{k}_{name}"
                rename[name] = copy
                copies[f"{tag}:{name}"] = copy
                out.append(f"auto {copy} = {rw.text(cand.uses[name])};\n")
            bodies.append(_render_renamed(rw, side, rename))
        out += [(b if b.lstrip().startswith("{") else "{ " + b + " }") + "\n" for b in bodies]
        for name in dict.fromkeys(n for side in cand.assigned for n in side):
            current = rw.text(cand.uses[name])
            then = copies.get(f"t:{name}", current)
            other = copies.get(f"e:{name}", current)
            out.append(f"{current} = {c} ? {then} : {other};\n")
        out.append("}\n#else\n")
        return "".join(out)

    plan.rw.replace_span(cand.stmt.start_byte, cand.stmt.start_byte, make=make)
    plan.rw.insert(cand.stmt.end_byte, f"\n#endif  // {NAME}\n")


def _render_renamed(rw: Rewriter, side: Node, rename: dict[str, str]) -> str:
    """``side`` as rendered, with each outer local it assigns read and written as its copy
    (locals the side declares itself keep their names)."""
    declared = {_unwrap(d) for n in walk(side) if n.type == "declaration"
                for d in n.children_by_field_name("declarator")}
    targets = [n for n in walk(side) if n.type == "identifier" and text(n) in rename and
               text(n) not in declared]
    parts: list[str] = []
    pos = side.start_byte
    for n in sorted(targets, key=lambda n: n.start_byte):
        parts.append(rw.render(pos, n.start_byte))
        parts.append(rename[text(n)])
        pos = n.end_byte
    # the last byte (`}` or `;`) raw: the `#endif` inserted at the if's end is not the side's
    parts.append(rw.render(pos, side.end_byte - 1))
    parts.append(rw.data[side.end_byte - 1:side.end_byte].decode())
    return "".join(parts)
