"""RUN_VEC: the runs of consecutive elements a lane's fixed-trip inner loop reads, loaded as
vectors before the loop.

A lane loop's body often holds a short loop of a known trip count over consecutive elements
of an input, ``for (j = 0; j < 8; j++) acc += w(q, j) * xw[j]`` (the eight activations of a
packed word of a quantised GEMV, the taps of a short filter): each trip is one 4-byte load a
lane, and where the lanes of a warp read runs at a stride (lane ``l``'s run at ``8 * l``),
each of those loads touches every line of the warp's span, once per trip. Loading the run as
``RUN_VEC``-element vectors (float2 / float4) before the loop gives the same bytes in a half
or a quarter of the load instructions and of the L1 wavefronts; the loop then reads its
elements from registers (the loop fully unrolled: compile-time indices). ``RUN_VEC = 1``
loads the run one element at a time before the loop, the values the loop as written reads.

Found on the parse inside the lane loops of :mod:`.warp`: a ``for`` whose variable ``j``
starts and ends at integer constants (a literal, a macro, a file constant) and steps by one
(``j++``, ``++j``, ``j += 1``, ``j = j + 1``; bound ``<`` or ``<=``), whose body leaves
nothing early, assigns ``j`` nowhere and writes only locals (no store, no call but a pure
one), so every element it reads is the same before the loop as in its trip. A run is a
pointer ``p`` (a kernel pointer or a never-assigned local pointer of the same element type
at a fixed offset of one) read in that body only as ``p[rest + j]`` (``j`` once, sign +, the
same ``rest`` each time, no name of ``rest`` assigned in the body) by a read every trip
executes (no ``if``, ``?:``, ``&&`` or ``||`` around it). Alignment: a kernel pointer starts
256-byte aligned (the runner allocates each argument on its own), and every term of the
offset (``rest``, the local pointer's offset, the loop's start) must be a multiple of
``RUN_VEC`` (:func:`.vector.offset_constraints`). The knob offers 1 and the widest width
(8 or 16 bytes) that the runs' starts, lengths and literal factors allow (a narrower one
moves the same bytes in more loads and would only grow the space); a size argument's
factor stays a constraint (``n % RUN_VEC == 0``). Loops whose reads are no run are left as
written, noted with the line.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.expr import parse_expr
from workbench.templater.analysis import (
    added_once,
    binary,
    declared_name,
    int_expr_value,
    int_value,
    line,
    strip,
    terms,
    text,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.reduce_consts import constant
from workbench.templater.rewrite import Edit, Rewriter
from workbench.templater.table_terms import assigned_in
from workbench.templater.vector import VEC_STRUCT, Access, Illegal, offset_constraints

KNOB = "RUN_VEC"
_WIDTHS = (1, 2, 4)  # elements a load; 16 bytes at most (one LDG.128)
_EXITS = ("return_statement", "break_statement", "continue_statement", "goto_statement")
_BRANCHES = ("if_statement", "conditional_expression", "switch_statement", "for_statement",
             "while_statement", "do_statement")


@dataclass(frozen=True)
class Run:
    """One pointer's reads ``p[rest + j]`` in a fixed-trip loop: the loop, its variable, the
    first and one-past-last values of the variable, the reads, the element type."""

    loop: Node
    var: str
    first: int
    end: int
    reads: tuple[Node, ...]
    elem: str

    @property
    def length(self) -> int:
        return self.end - self.first


def apply_runs(plan: Plan, lane_loops: list[Node]) -> None:
    """Offer RUN_VEC over the runs of the fixed-trip loops inside ``lane_loops`` (notes why a
    loop holds none)."""
    runs: list[Run] = []
    constraints: list[str] = []
    widths = set(_WIDTHS)
    for outer in lane_loops:
        for loop in _inner_loops(outer):
            try:
                found, refused = _runs(plan, loop)
            except Illegal as exc:
                if _reads_at_its_variable(loop):
                    plan.note(KNOB, False, exc.reason, exc.node or loop)
                continue
            for why in refused:
                plan.note(KNOB, False, why.reason, why.node or loop)
            for run in found:
                try:
                    constraints += _aligned(plan, run)
                except Illegal as exc:
                    plan.note(KNOB, False, exc.reason, exc.node or loop)
                    continue
                size = plan.elem_bytes(_root(plan, text(_array(run.reads[0]))))
                widths &= {w for w in _WIDTHS if run.length % w == 0 and run.first % w == 0
                           and size is not None and size.isdigit() and w * int(size) <= 16}
                runs.append(run)
    if not runs:
        return
    # a constraint of the width alone (8 % RUN_VEC == 0) decides here which widths fit
    alone = [e for e in map(parse_expr, dict.fromkeys(constraints)) if e.names <= {KNOB}]
    widths = {w for w in widths if all(e.evaluate({KNOB: w}) for e in alone)}
    if widths <= {1}:
        plan.note(KNOB, False, "no vector width of 8 or 16 bytes divides the starts and lengths "
                  "of the runs of " + ", ".join(sorted({text(_array(r.reads[0])) for r in runs})),
                  runs[0].loop)
        return
    for k, run in enumerate(runs):
        _rewrite(plan, run, f"wb_run{k}_{text(_array(run.reads[0]))}")
    plan.helper(VEC_STRUCT)
    for c in dict.fromkeys(constraints):
        plan.constrain(c)
    names = sorted({text(_array(r.reads[0])) for r in runs})
    # the widest and 1: a narrower vector moves the same bytes in more loads
    plan.add_param(KNOB, {"kind": "choice", "values": [1, max(widths)], "default": 1,
                          "description": f"elements of {', '.join(names)} each load of an inner "
                                         "loop's run moves, the run loaded before the loop "
                                         "(as written: 1)"}, f"{line(runs[0].loop)}: inner loop")
    plan.note(KNOB, True, f"{len(runs)} run(s) of {', '.join(names)} read by fixed-trip inner "
              "loops are loaded as vectors of RUN_VEC elements before each loop",
              runs[0].loop)


def _inner_loops(outer: Node) -> list[Node]:
    body = outer.child_by_field_name("body")
    return [n for n in walk(body) if n.type == "for_statement"] if body is not None else []


def _reads_at_its_variable(loop: Node) -> bool:
    """``loop`` declares a variable that an index in its body reads (a run it may hold)."""
    init, body = loop.child_by_field_name("initializer"), loop.child_by_field_name("body")
    if init is None or init.type != "declaration" or body is None:
        return False
    var = declared_name(init)[0]
    return any(n.type == "subscript_expression" and any(
        m.type == "identifier" and text(m) == var for m in walk(n)) for n in walk(body))


def _array(sub: Node) -> Node:
    return strip(sub.child_by_field_name("argument"))  # type: ignore[arg-type]


def _index(plan: Plan, sub: Node) -> Node | None:
    """The index of ``sub``; a local's value where the index is a never-assigned local
    (``x[c]`` with ``const int c = 4 * w + b;``)."""
    idx = sub.child_by_field_name("indices")
    if idx is None or not idx.named_children:
        return None
    index = strip(idx.named_children[0])
    d = plan.facts.defs.get(text(index)) if index.type == "identifier" else None
    if d is not None and not d.assigned and not d.is_pointer and d.value is not None:
        return strip(d.value)
    return index


def _trips(plan: Plan, loop: Node) -> tuple[str, int, int]:
    """(variable, first value, one past the last) of a loop stepping one by one between
    integer constants; raises Illegal otherwise."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    head = text(loop).split(")")[0][:60]
    if init is None or cond is None or update is None or init.type != "declaration":
        raise Illegal(f"`{head})` does not declare, test and step its variable", loop)
    var, _decl, start = declared_name(init)
    first = _integer(plan, start)
    parts = binary(cond)
    end = _integer(plan, parts[2]) if parts is not None else None
    if first is None or parts is None or end is None or text(strip(parts[0])) != var or \
            parts[1] not in ("<", "<="):
        raise Illegal(f"`{head})` does not run between integer constants", loop)
    step = strip(update)
    steps = step.type == "update_expression" and text(step) in (f"{var}++", f"++{var}")
    if step.type == "assignment_expression":
        left, right = step.child_by_field_name("left"), step.child_by_field_name("right")
        op = text(step.child_by_field_name("operator"))
        steps = left is not None and text(strip(left)) == var and right is not None and (
            (op == "+=" and int_value(right) == 1) or
            (op == "=" and text(right).replace(" ", "") in (f"{var}+1", f"1+{var}")))
    if not steps:
        raise Illegal(f"`{head})` does not step by one", loop)
    if (end + 1 if parts[1] == "<=" else end) <= first:
        raise Illegal(f"`{head})` runs no trip", loop)
    return var, first, end + 1 if parts[1] == "<=" else end


def _integer(plan: Plan, node: Node | None) -> int | None:
    """A constant integer: a literal, macro or file constant, or + - * / of such."""
    value = constant(plan, node)
    return value if value is not None else int_expr_value(node)


def _runs(plan: Plan, loop: Node) -> tuple[list[Run], list[Illegal]]:
    """The runs of ``loop`` and why each other pointer it reads at its variable is none;
    raises Illegal where its body may not have its reads moved before it."""
    var, first, end = _trips(plan, loop)
    body = loop.child_by_field_name("body")
    assert body is not None
    pure = pure_calls(plan.source)
    for n in walk(body):
        if n.type in _EXITS:
            raise Illegal(f"`{text(n)}` leaves the loop early", n)
        if n.type == "call_expression" and \
                text(n.child_by_field_name("function")) not in pure:
            raise Illegal(f"`{text(n)[:50]}` is not a pure call (the run's loads would move "
                          "across it)", n)
    written = assigned_in(body)
    if var in written:
        raise Illegal(f"the loop variable `{var}` is assigned in the loop", loop)
    for n in walk(body):
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is not None and target.type != "identifier":
                raise Illegal(f"`{text(n)[:50]}` stores to memory in the loop (the run's loads "
                              "would move before it)", n)
    by_array: dict[str, list[Node]] = {}
    for n in walk(body):
        if n.type == "subscript_expression" and any(
                m.type == "identifier" and text(m) == var for m in walk(_index(plan, n) or n)):
            by_array.setdefault(text(_array(n)), []).append(n)
    out: list[Run] = []
    refused: list[Illegal] = []
    for name, reads in by_array.items():
        try:
            _check_run(plan, body, var, name, reads, written)
            out.append(Run(loop, var, first, end, tuple(reads), _elem(plan, name, reads[0])))
        except Illegal as exc:
            refused.append(exc)
    return out, refused


def _check_run(plan: Plan, body: Node, var: str, name: str, reads: list[Node],
               written: set[str]) -> None:
    """Every read of ``name`` in ``body`` is ``name[rest + var]`` with one ``rest`` whose names
    are declared before the loop and not assigned in it, each run on every trip; raises
    Illegal otherwise."""
    keys = {_rest(plan, sub, var) for sub in reads}
    if len(keys) != 1 or None in keys:
        raise Illegal(f"the reads of {name} in the loop are not all `{name}[offset + {var}]` "
                      "at one offset", reads[0])
    others = [n for n in walk(body) if n.type == "identifier" and text(n) == name and
              not any(r.start_byte <= n.start_byte < r.end_byte for r in reads)]
    if others:
        raise Illegal(f"`{text(others[0].parent)[:50]}` uses {name} otherwise than as the "
                      "run's element", others[0])
    names = {text(m) for r in reads for m in walk(_index(plan, r) or r)
             if m.type == "identifier"} - {var}
    # the loads run before the loop: what they name must be declared before it
    inside = sorted(n for n in names | {name} if (d := plan.facts.defs.get(n)) is not None
                    and body.start_byte <= d.decl.start_byte < body.end_byte)
    if inside or names & written:
        raise Illegal(f"`{(inside or sorted(names & written))[0]}` of `{text(reads[0])}` is "
                      "declared or assigned in the loop (its loads would run before it)",
                      reads[0])
    late = next((sub for sub in reads if not _every_trip(sub, body)), None)
    if late is not None:
        raise Illegal(f"`{text(late)}` is not read on every trip (a branch or a nested "
                      "loop around it)", late)


def _rest(plan: Plan, sub: Node, var: str) -> str | None:
    """The index of ``sub`` with ``var`` taken out (spaces dropped) when it is ``rest +
    var``, else None."""
    index = _index(plan, sub)
    if index is None:
        return None
    hit = added_once(index, var)
    if hit is None:
        return None
    return "".join(f"{'+' if s == 1 else '-'}{text(t)}" for s, t in terms(index)
                   if t != hit).replace(" ", "")


def _every_trip(sub: Node, body: Node) -> bool:
    up = sub.parent
    while up is not None and up != body:
        if up.type in _BRANCHES or (up.type == "binary_expression" and
                                    text(up.child_by_field_name("operator")) in ("&&", "||")):
            return False
        if up.type == "assignment_expression" and up.child_by_field_name("left") == sub:
            return False
        up = up.parent
    return True


def _root(plan: Plan, name: str) -> str:
    """The kernel pointer ``name`` is, or is a fixed offset of (``name`` itself otherwise)."""
    d = plan.facts.defs.get(name)
    if d is None or d.value is None:
        return name
    ptrs = [text(t) for _s, t in terms(d.value) if t.type == "identifier" and
            plan.pointer(text(t))]
    return ptrs[0] if len(ptrs) == 1 else name


def _elem(plan: Plan, name: str, read: Node) -> str:
    """The element type of the run's pointer: a kernel pointer's, or a never-assigned local
    pointer's of that type at an offset of it (the kernel pointer a term of its value, so a
    view through a cast is none); raises Illegal otherwise."""
    root = _root(plan, name)
    if not plan.pointer(root):
        raise Illegal(f"`{name}` is not a kernel pointer or a fixed offset of one", read)
    elem = plan.kernel.param(root).base_type
    d = plan.facts.defs.get(name)
    if d is None:
        return elem
    decl_type = d.decl.child_by_field_name("type")
    if d.assigned or not d.is_pointer or decl_type is None or \
            text(decl_type).replace("const", "").strip() != elem:
        raise Illegal(f"`{name}` is not a fixed offset of {root} in its own element type "
                      f"({elem})", d.decl)
    return elem


def _aligned(plan: Plan, run: Run) -> list[str]:
    """Constraints that make each load of ``run`` RUN_VEC-aligned (Illegal where a term of
    the offset cannot be shown a multiple)."""
    sub = run.reads[0]
    index = _index(plan, sub)
    assert index is not None
    access = Access(sub, text(_array(sub)), index, False, True)
    return offset_constraints(plan, access, run.var, KNOB)


def _rewrite(plan: Plan, run: Run, name: str) -> None:
    """The run's loads before the loop into ``name``, its reads from their registers, the
    loop unrolled."""
    sub, var, elem = run.reads[0], run.var, run.elem
    index, array = _index(plan, sub), _array(sub)
    assert index is not None
    for r in run.reads:
        plan.rw.replace(r, f"{name}[({var} - {run.first}) / {KNOB}].v[({var} - {run.first}) % "
                           f"{KNOB}]")
    at = run.loop.start_byte
    prev = run.loop.prev_named_sibling
    unrolled = prev is not None and prev.type == "preproc_call" and \
        text(prev).split() == ["#pragma", "unroll"]
    if unrolled:
        assert prev is not None
        at = prev.start_byte

    def loads(rw: Rewriter) -> str:
        saved = rw.edits
        first = f"{run.first} + wb_r * {KNOB}"
        # the index (a local's value where the read names one) with every other transform's
        # edits in it, the loop variable at the load's first element
        rw.edits = saved + [Edit(m.start_byte, m.end_byte, f"({first})") for m in walk(index)
                            if m.type == "identifier" and text(m) == var]
        try:
            address = f"&{rw.text(array)}[{rw.text(index)}]"
        finally:
            rw.edits = saved
        return (f"WbVec<{elem}, {KNOB}> {name}[{run.length} / {KNOB}];  // the loop's run\n"
                f"#pragma unroll\n    for (int wb_r = 0; wb_r < {run.length} / {KNOB}; ++wb_r) "
                f"{name}[wb_r] = *reinterpret_cast<const WbVec<{elem}, {KNOB}>*>({address});\n"
                + ("" if unrolled else "#pragma unroll\n    "))
    plan.rw.replace_span(at, at, make=loads)
