"""Loads ahead for a warp family's lane loop the vector lanes refuse (AHEAD).

A lane loop ``for (T j = lane; j < n; j += LANES) BODY`` whose reads are not the unit-stride
streams :mod:`.vector` widens (a column of a column-major matrix, ``x[j * rows + row]``, or
an index the counter alone computes) and whose body carries a chain from step to step
(Welford's ``mean += d / n``, a running maximum and its index) has one load in flight a lane:
each step's load waits on nothing, but the step before it waits on its own load. ``AHEAD``
loads the next ``AHEAD`` steps' elements first, each under the loop's bound, then runs the
body for those steps in the order as written on the loaded values: the same operations on
the same values in the same order, bit for bit. AHEAD 1 is the loop as written.

Legal where the body leaves the loop nowhere (no return, break, continue, goto), writes no
memory and calls only pure functions (:func:`.purity.pure_calls`), and every memory read in
it is a subscript ``A[I]`` outside any branch or inner loop of the body (it runs every step,
so reading it early reads nothing the loop as written does not) with ``A`` a kernel pointer
or a local fixed offset of one and ``A`` and ``I`` naming only the counter and names the
loop does not assign, no read nested in another; the bound names nothing the loop assigns.
Refused with the line otherwise. A ``do`` over chunks (read as ``for (int v = 0; v == 0 ||
(v < n); v += 32)``: :func:`.lane_bound.first_pass_bound`) runs its first step whatever the
bound: each step of a group is tested ``v == 0 || (v < n)`` (true on the first step only,
then ``v < n``, which turns false once along the growing counter), the group's loop alike. A loop of a warp whose lanes stay a warp (a vote in its
body, :func:`.warp._apply_whole_warps`) may also vote, store to another element type than it
reads and read under a guard (:func:`_step_loads`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import declared_name, line, text, walk, writer
from workbench.templater.item_state import assigned_names
from workbench.templater.lane_bound import LaneBound
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import Illegal
from workbench.templater.warp_global import step_of
from workbench.templater.warp_shuffles import WARP_COLLECTIVES

NAME = "AHEAD"
_EXITS = ("return_statement", "break_statement", "continue_statement", "goto_statement")
_CONTROL = ("if_statement", "for_statement", "while_statement", "do_statement",
            "switch_statement", "conditional_expression")


def apply_ahead(plan: Plan, loop: Node, found: LaneBound, whole_warp: bool = False) -> None:
    """Give ``loop`` (a lane loop bounded as ``found`` reads it) its loads ahead under
    ``#if AHEAD > 1``, or note why not. ``whole_warp``: a loop of a warp that keeps its 32 lanes
    (:func:`.warp._apply_whole_warps`), whose body may also store, vote and read under a
    guard (:func:`_step_loads`)."""
    init, body = loop.child_by_field_name("initializer"), loop.child_by_field_name("body")
    update = loop.child_by_field_name("update")
    assert init is not None and body is not None and update is not None
    var, _d, start = declared_name(init)
    step = step_of(update, var)
    assert start is not None and step is not None  # a lane loop (warp._lane_loops)
    try:
        loads = _step_loads(plan, loop, found) if whole_warp else _loads(plan, loop, found)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node or loop)
        return
    kind = text(init.child_by_field_name("type"))
    names: dict[str, str] = {}
    for ld in loads:
        names.setdefault(ld.key, f"wb_ahead{len(names)}")
    for ld in loads:
        plan.rw.replace(ld.sub, f"{names[ld.key]}[wb_u]")
    firsts = {names[ld.key]: ld for ld in reversed(loads)}
    types = {n: _elem_type(plan, ld.sub) for n, ld in firsts.items()}
    before = sorted({d.start_byte: d for ld in loads for d in ld.before}.items())

    def fill(rw: Rewriter, n: str, ld: _Load) -> str:
        read = _original(rw, ld.sub)
        if not ld.guards:
            return f"        {n}[wb_u] = {read};\n"
        test = " && ".join(f"({rw.text(g)})" for g in ld.guards)
        return f"        {n}[wb_u] = {test} ? {read} : {types[n]}();\n"

    def make(rw: Rewriter) -> str:
        bound, first = rw.text(found.bound), rw.text(start)
        guards = "".join(f"({rw.text(g)}) && " for g in found.guards)
        stride = rw.text(step)
        at = f"      const {kind} {var} = wb_{var}0 + wb_u * ({stride});\n"
        decls = "".join(f"    {types[n]} {n}[{NAME}];\n" for n in firsts)
        fills = "".join(f"        {rw.text(d)}\n" for _b, d in before) + \
            "".join(fill(rw, n, ld) for n, ld in firsts.items())
        test, runs = f"{guards}wb_{var}0 < {bound}", f"{var} < {bound}"
        if found.first is not None:
            # a do's first pass: the group's first step runs whatever the bound and guards
            # (the counter holds its start there only), every other as the test after it
            once = rw.text(found.first)
            test = f"wb_{var}0 == ({once}) || ({test})"
            runs = f"{var} == ({once}) || ({guards}{runs})"
        return (f"for ({kind} wb_{var}0 = {first}; {test}; "
                f"wb_{var}0 += ({stride}) * {NAME}) {{  // AHEAD steps' loads, then their bodies\n"
                f"{decls}#pragma unroll\n    for (int wb_u = 0; wb_u < {NAME}; ++wb_u) {{\n{at}"
                f"      if ({runs}) {{\n{fills}      }}\n    }}\n"
                f"#pragma unroll\n    for (int wb_u = 0; wb_u < {NAME}; ++wb_u) {{\n{at}"
                f"      if ({runs}) {rw.text(body)}\n    }}\n  }}")

    scalar = _as_written(plan, loop, set(names.values()))
    plan.rw.replace_span(loop.start_byte, loop.end_byte,
                         make=lambda rw: f"\n#if {NAME} > 1\n  {make(rw)}\n#else\n  "
                                         f"{scalar(rw)}\n#endif\n")
    what = "loop" if whole_warp else "lane loop"
    plan.note(NAME, True, f"{what} over {var}: {len(firsts)} read(s) a step loaded AHEAD "
              "steps ahead, the steps' bodies then in the order as written", loop)
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": "steps of a lane loop whose reads each lane loads "
                                         "before running any (as written: 1)"},
                   f"{line(loop)}: lane loop")


@dataclass(frozen=True)
class _Load:
    """A read ``A[I]`` loaded ahead: its subscript, the conjuncts ``G`` of ``G && A[I]``
    that guard it, and the body's declarations before it that ``G`` and ``I`` read."""

    sub: Node
    guards: tuple[Node, ...] = ()
    before: tuple[Node, ...] = ()

    @property
    def key(self) -> str:
        """One buffer per read and guard, however spaced."""
        return " ".join(" && ".join(text(n) for n in (*self.guards, self.sub)).split())


def _loads(plan: Plan, loop: Node, found: LaneBound) -> list[_Load]:
    """The body's memory reads (see the module doc), or Illegal."""
    body = loop.child_by_field_name("body")
    update = loop.child_by_field_name("update")
    assert body is not None
    written = assigned_names(body) | ({found.var} if update is None else
                                      assigned_names(update) | {found.var})
    if {text(n) for n in walk(found.bound) if n.type == "identifier"} & written:
        raise Illegal(f"the bound `{text(found.bound)}` names what the loop assigns", loop)
    pure = pure_calls(plan.source)
    loads: list[_Load] = []
    for n in walk(body):
        if n.type in _EXITS:
            raise Illegal(f"`{text(n)}` leaves the lane loop early", n)
        if n.type == "call_expression" and text(n.child_by_field_name("function")) not in pure:
            raise Illegal(f"`{text(n)[:50]}` calls what is not pure", n)
        if (n.type == "pointer_expression" and text(n).startswith("*")) or \
                (n.type == "field_expression" and "->" in text(n)):
            raise Illegal(f"`{text(n)[:50]}` reads memory other than a subscript", n)
        if n.type != "subscript_expression":
            continue
        if writer(n, address=True) is not None:
            raise Illegal(f"`{text(n.parent)[:50]}` writes memory in the lane loop", n)
        _check_load(plan, n, body, written - {found.var})
        loads.append(_Load(n))
    if not loads:
        raise Illegal("the lane loop reads no memory", body)
    return loads


def _step_loads(plan: Plan, loop: Node, found: LaneBound) -> list[_Load]:
    """The reads of a whole warp's loop (``for (b = 0; b < n; b += 32)``, its 32 lanes
    voting on each step): as :func:`_loads`, but the body may also call warp collectives
    (each thread still runs the same calls in the same order, one step after another), store
    through pointers to another element type than every read's (C++ forbids a store of an
    ``int`` to change what a ``float`` read reads, so no store of an earlier step changes a
    read ahead) and read under a guard ``G && A[I]`` (loaded only where ``G`` holds); ``G``
    and ``I`` may read the body's declarations before the read (``const int j = b + lane;``,
    copied before the load). Raises Illegal otherwise."""
    body = loop.child_by_field_name("body")
    update = loop.child_by_field_name("update")
    assert body is not None and update is not None
    written = assigned_names(body) | assigned_names(update) | {found.var}
    if {text(n) for n in walk(found.bound) if n.type == "identifier"} & written:
        raise Illegal(f"the bound `{text(found.bound)}` names what the loop assigns", loop)
    if found.var in assigned_names(body):
        raise Illegal(f"the body assigns the counter `{found.var}`", loop)
    pure = pure_calls(plan.source)
    stores: set[str] = set()
    reads: list[Node] = []
    for n in walk(body):
        if n.type in _EXITS and n.type != "continue_statement":  # continue: the next step
            raise Illegal(f"`{text(n)}` leaves the loop early", n)
        name = text(n.child_by_field_name("function")) if n.type == "call_expression" else ""
        if name and name not in pure and not name.startswith(WARP_COLLECTIVES):
            raise Illegal(f"`{text(n)[:50]}` calls what is neither pure nor a warp "
                          "collective", n)
        if (n.type == "pointer_expression" and text(n).startswith("*")) or \
                (n.type == "field_expression" and "->" in text(n)):
            raise Illegal(f"`{text(n)[:50]}` reaches memory other than by a subscript", n)
        if n.type == "subscript_expression":
            if writer(n, address=True) is not None:
                stores.add(_elem_type(plan, n))
            else:
                reads.append(n)
    local = {declared_name(d)[0] for d in walk(body) if d.type == "declaration"}
    loads = [_guarded(plan, sub, body, (written | local) - {found.var}) for sub in reads]
    for ld in loads:
        kind = _elem_type(plan, ld.sub)
        if kind in stores or kind in _ANY_TYPE or stores & set(_ANY_TYPE):
            raise Illegal(f"`{text(ld.sub)}` reads {kind}, which a store of the loop may "
                          "write (the same element type)", ld.sub)
    if not loads:
        raise Illegal("the loop reads no memory", body)
    return loads


#: Element types whose stores may change any object (C++'s character types).
_ANY_TYPE = ("char", "unsigned char", "signed char", "void")


def _guarded(plan: Plan, sub: Node, body: Node, written: set[str]) -> _Load:
    """``sub`` as a load of a whole warp's loop (:func:`_step_loads`): read by a top-level
    statement of the body, outside branches and loops, optionally as the right side of
    ``G && ..`` (any depth); ``G`` and the index read the counter, names the loop does not assign and
    the top-level declarations before the statement (never assigned, their values pure and
    memory-free), which the load copies. ``G ? A[I] : E`` is guarded by ``G`` alike."""
    guards: list[Node] = []
    node, up = sub, sub.parent
    while up is not None and up != body:
        op = up.child_by_field_name("operator") if up.type == "binary_expression" else None
        left = up.child_by_field_name("left")
        test = up.child_by_field_name("condition")
        if op is not None and text(op) == "&&" and up.child_by_field_name("right") == node \
                and left is not None:
            guards.insert(0, left)
        elif up.type == "conditional_expression" and test is not None and \
                up.child_by_field_name("consequence") == node:  # G ? A[I] : other
            guards.insert(0, test)
        elif up.type in _CONTROL or (op is not None and text(op) in ("&&", "||")):
            raise Illegal(f"`{text(sub)}` is read under a branch or inner loop of the body",
                          sub)
        node, up = up, up.parent
    statement = node
    tops = {declared_name(d)[0]: d for d in body.named_children
            if d.type == "declaration" and d.start_byte < statement.start_byte}
    needed: dict[int, Node] = {}

    def check(expr: Node) -> None:
        for n in walk(expr):
            if n.type in ("subscript_expression", "call_expression", "pointer_expression",
                          "field_expression", "assignment_expression", "update_expression"):
                if n.type == "call_expression" and \
                        text(n.child_by_field_name("function")) in pure_calls(plan.source):
                    continue
                raise Illegal(f"`{text(n)[:50]}` guards or indexes `{text(sub)}` with a read "
                              "or an assignment", sub)
            if n.type != "identifier" or text(n) not in written:
                continue
            d = tops.get(text(n))
            value = declared_name(d)[2] if d is not None else None
            if d is None or value is None or _assigned_after(body, d, text(n)):
                raise Illegal(f"`{text(sub)}` reads `{text(n)}`, which the loop assigns "
                              "(the load would not be known a step ahead)", sub)
            if d.start_byte not in needed:
                needed[d.start_byte] = d
                check(value)

    index = sub.child_by_field_name("indices")
    array = sub.child_by_field_name("argument")
    if array is None or index is None or array.type != "identifier" or \
            not _pointer(plan, text(array)) or text(array) in written:
        raise Illegal(f"`{text(sub)}` reads no kernel pointer or fixed offset of one", sub)
    for g in guards:
        check(g)
    check(index)
    return _Load(sub, tuple(guards), tuple(needed[b] for b in sorted(needed)))


def _assigned_after(body: Node, decl: Node, name: str) -> bool:
    """``name`` (declared by ``decl``) is assigned in ``body`` beyond its declaration."""
    return any(n.type in ("assignment_expression", "update_expression") and
               name in {text(t) for t in walk(n.child_by_field_name("left") or
                                              n.child_by_field_name("argument") or n)
                        if t.type == "identifier"}
               for n in walk(body) if not (decl.start_byte <= n.start_byte < decl.end_byte))


def _check_load(plan: Plan, sub: Node, body: Node, written: set[str]) -> None:
    """``sub`` reads a fixed pointer at an index of the counter and of names the loop does
    not assign (``written``, the counter left out), outside the body's branches and loops."""
    array, index = sub.child_by_field_name("argument"), sub.child_by_field_name("indices")
    if array is None or index is None or array.type != "identifier" or \
            not _pointer(plan, text(array)) or text(array) in written:
        raise Illegal(f"`{text(sub)}` reads no kernel pointer or fixed offset of one", sub)
    for n in walk(index):
        if n.type in ("subscript_expression", "call_expression", "pointer_expression",
                      "field_expression", "assignment_expression", "update_expression"):
            raise Illegal(f"the index of `{text(sub)}` reads memory or assigns", sub)
        if n.type == "identifier" and text(n) in written:
            raise Illegal(f"the index of `{text(sub)}` reads `{text(n)}`, which the loop "
                          "assigns (the load would not be known a step ahead)", sub)
    up = sub.parent
    while up is not None and up != body:
        if up.type in _CONTROL:
            raise Illegal(f"`{text(sub)}` is read under a branch or inner loop of the body",
                          sub)
        up = up.parent


def _pointer(plan: Plan, name: str) -> bool:
    """``name`` is a kernel pointer or a local pointer never assigned after its value."""
    if plan.pointer(name):
        return True
    d = plan.facts.defs.get(name)
    return d is not None and d.is_pointer and not d.assigned and not d.is_shared and \
        d.value is not None


def _root(plan: Plan, name: str) -> str | None:
    if plan.pointer(name):
        return name
    d = plan.facts.defs.get(name)
    if d is None or d.value is None:
        return None
    ptrs = [text(n) for n in walk(d.value) if n.type == "identifier" and plan.pointer(text(n))]
    return ptrs[0] if len(ptrs) == 1 else None


def _elem_type(plan: Plan, sub: Node) -> str:
    array = sub.child_by_field_name("argument")
    assert array is not None
    root = _root(plan, text(array))
    if root is None:
        raise Illegal(f"`{text(array)}` has no known element type", sub)
    return plan.kernel.param(root).base_type


def _original(rw: Rewriter, sub: Node) -> str:
    """``sub`` as the file renders it without the load's own replacement (the read itself,
    with another transform's wrapping of it: ``WB_RO(p[i])``)."""
    with rw.keeping(lambda e: (e.start, e.end) != (sub.start_byte, sub.end_byte) or
                    not e.text.startswith("wb_ahead") or e.make is not None):
        return rw.text(sub)


def _as_written(plan: Plan, loop: Node, buffers: set[str]) -> Callable[[Rewriter], str]:
    """The loop with every other transform's edits but the loads' own replacements."""
    def scalar(rw: Rewriter) -> str:
        with rw.keeping(lambda e: not (e.text.split("[", 1)[0] in buffers and
                                       e.make is None)):
            return rw.render(loop.start_byte, loop.end_byte)
    return scalar
