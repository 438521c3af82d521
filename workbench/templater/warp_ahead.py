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
Refused with the line otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import declared_name, line, text, walk, writer
from workbench.templater.item_state import assigned_names
from workbench.templater.lane_bound import LaneBound
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import Illegal
from workbench.templater.warp_global import step_of

NAME = "AHEAD"
_EXITS = ("return_statement", "break_statement", "continue_statement", "goto_statement")
_CONTROL = ("if_statement", "for_statement", "while_statement", "do_statement",
            "switch_statement", "conditional_expression")


def apply_ahead(plan: Plan, loop: Node, found: LaneBound) -> None:
    """Give ``loop`` (a lane loop bounded as ``found`` reads it) its loads ahead under
    ``#if AHEAD > 1``, or note why not."""
    init, body = loop.child_by_field_name("initializer"), loop.child_by_field_name("body")
    update = loop.child_by_field_name("update")
    assert init is not None and body is not None and update is not None
    var, _d, start = declared_name(init)
    step = step_of(update, var)
    assert start is not None and step is not None  # a lane loop (warp._lane_loops)
    try:
        loads = _loads(plan, loop, found)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node or loop)
        return
    kind = text(init.child_by_field_name("type"))
    names: dict[str, str] = {}
    for sub in loads:
        key = " ".join(text(sub).split())
        names.setdefault(key, f"wb_ahead{len(names)}")
    for sub in loads:
        plan.rw.replace(sub, f"{names[' '.join(text(sub).split())]}[wb_u]")
    firsts = {names[" ".join(text(s).split())]: s for s in reversed(loads)}
    types = {n: _elem_type(plan, s) for n, s in firsts.items()}

    def make(rw: Rewriter) -> str:
        bound, first = rw.text(found.bound), rw.text(start)
        guards = "".join(f"({rw.text(g)}) && " for g in found.guards)
        stride = rw.text(step)
        at = f"      const {kind} {var} = wb_{var}0 + wb_u * ({stride});\n"
        decls = "".join(f"    {types[n]} {n}[{NAME}];\n" for n in firsts)
        fills = "".join(f"        {n}[wb_u] = {_original(rw, s)};\n" for n, s in firsts.items())
        return (f"for ({kind} wb_{var}0 = {first}; {guards}wb_{var}0 < {bound}; "
                f"wb_{var}0 += ({stride}) * {NAME}) {{  // AHEAD steps' loads, then their bodies\n"
                f"{decls}#pragma unroll\n    for (int wb_u = 0; wb_u < {NAME}; ++wb_u) {{\n{at}"
                f"      if ({var} < {bound}) {{\n{fills}      }}\n    }}\n"
                f"#pragma unroll\n    for (int wb_u = 0; wb_u < {NAME}; ++wb_u) {{\n{at}"
                f"      if ({var} < {bound}) {rw.text(body)}\n    }}\n  }}")

    scalar = _as_written(plan, loop, set(names.values()))
    plan.rw.replace_span(loop.start_byte, loop.end_byte,
                         make=lambda rw: f"\n#if {NAME} > 1\n  {make(rw)}\n#else\n  "
                                         f"{scalar(rw)}\n#endif\n")
    plan.note(NAME, True, f"lane loop over {var}: {len(firsts)} read(s) a step loaded AHEAD "
              "steps ahead, the steps' bodies then in the order as written", loop)
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": "steps of a lane loop whose reads each lane loads "
                                         "before running any (as written: 1)"},
                   f"{line(loop)}: lane loop")


def _loads(plan: Plan, loop: Node, found: LaneBound) -> list[Node]:
    """The body's memory reads (see the module doc), or Illegal."""
    body = loop.child_by_field_name("body")
    update = loop.child_by_field_name("update")
    assert body is not None
    written = assigned_names(body) | ({found.var} if update is None else
                                      assigned_names(update) | {found.var})
    if {text(n) for n in walk(found.bound) if n.type == "identifier"} & written:
        raise Illegal(f"the bound `{text(found.bound)}` names what the loop assigns", loop)
    pure = pure_calls(plan.source)
    loads: list[Node] = []
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
        loads.append(n)
    if not loads:
        raise Illegal("the lane loop reads no memory", body)
    return loads


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
    """``sub`` as the file renders it without the load's own replacement (the read itself)."""
    saved = rw.edits
    rw.edits = [e for e in saved if (e.start, e.end) != (sub.start_byte, sub.end_byte)]
    try:
        return rw.render(sub.start_byte, sub.end_byte)
    finally:
        rw.edits = saved


def _as_written(plan: Plan, loop: Node, buffers: set[str]) -> Callable[[Rewriter], str]:
    """The loop with every other transform's edits but the loads' own replacements."""
    def scalar(rw: Rewriter) -> str:
        saved = rw.edits
        rw.edits = [e for e in saved if not (e.text.split("[", 1)[0] in buffers and
                                             e.make is None)]
        try:
            return rw.render(loop.start_byte, loop.end_byte)
        finally:
            rw.edits = saved
    return scalar
