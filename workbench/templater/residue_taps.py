"""TAP_UNROLL for tap loops that start at a run-time residue: trips bounded by a constant
(issue 28, held-back set 21's upconv4x4_s2).

A stride-2 transposed convolution picks a pixel's taps by its parity: ``for (int ky = (oy +
1) & 1; ky < 4; ky += 2)`` runs two trips whatever the parity, but its start is a run-time
value, so its trip count is no constant to the compiler. nvcc unrolls the inner such loop
(the taps of a row) and keeps the outer one a loop (sm_90 PTX of the lift at 32 x 4 threads:
the channel loop holds a two-trip loop that rebuilds each tap's 64-bit addresses a trip);
the expert writes the four taps out, every address and edge test hoisted out of the channel
loop, and is 1.98x where the lift was 0.99x. ``#pragma unroll`` on the loop unrolls it whole
(nvcc bounds the trips by the start's range): the channel loop then holds the four taps
straight, 30 PTX instructions a channel, no inner branch back.

The rule, on the parse: a ``for`` whose variable steps up by a positive constant (``v += s``,
``v = v + s``, ``++v``, ``v++``), is not assigned in the body, is tested against a constant
bound (``v < B``, ``v <= B``, ``B > v``, ``B >= v``; literals, integer macros and file
constants) and starts at a value that is no constant but lies in a known range
(:func:`value_range`: ``e & M``, ``e % M``, a sum or difference of such and constants, a
conditional between them, a local declared once with such a value and never assigned). Its
trips at every start of the range are counted; where the most is 2 to :data:`MAX_TRIPS` the
loop is a tap loop of few trips. ``TAP_UNROLL = 1`` puts ``#pragma unroll`` on every such
loop (0, the default, is the kernel as written). A pragma changes no result: every config is
the kernel as written, bit for bit.

Offered after every family, on the loops as parsed: edits inside a loop (a name an item
renames) render with the pragma before it; a loop that a family's replaced span cuts into
is left alone, with a note. Where :mod:`.conv_mix` offered its knob of the same name (its
constant-trip tap loops), these loops join it. A loop with its own ``#pragma`` is left as
written. The skipping spelling (every tap visited, a parity test on the counter) is
:mod:`.residue_skips`', stepped by the same knob.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import Definition, binary, int_expr_value, line, strip, text, walk
from workbench.templater.conv_mix import TAPS
from workbench.templater.inline_bind import written
from workbench.templater.item_state import trip_count, upper_bound
from workbench.templater.plan import Plan
from workbench.templater.regtile import fresh_names
from workbench.templater.residue_skips import SkipLoop, skip_loop

#: Most trips of a loop unrolled whole here: a filter's taps along one axis.
MAX_TRIPS = 16
#: Widest start range whose trips are counted one start at a time.
_MAX_SPAN = 64
_DEPTH = 8  # locals followed from a start to the values they were declared with


@dataclass(frozen=True)
class ResidueLoop:
    """A ``for`` of constant bound and step whose start is a run-time value in a range."""

    loop: Node
    var: str
    starts: tuple[int, int]  # the start's range, both ends included
    trips: tuple[int, int]  # fewest and most trips over that range


def value_range(node: Node, defs: dict[str, Definition], depth: int = _DEPTH
                ) -> tuple[int, int] | None:
    """The integers ``node`` can take, both ends included, where the parse bounds them: a
    constant, ``e & M`` (M >= 0: 0..M), ``e % M`` (M > 0: -(M-1)..M-1, 0..M-1 for e >= 0),
    ``e >> K`` and ``e * K`` of a bounded e, sums and differences, ``c ? a : b``, and a local
    declared once with such a value and never assigned; else None."""
    node = strip(node)
    constant = int_expr_value(node)
    if constant is not None:
        return constant, constant
    if node.type == "identifier":
        d = defs.get(text(node))
        if depth == 0 or d is None or d.assigned or d.value is None:
            return None
        return value_range(d.value, defs, depth - 1)
    if node.type == "conditional_expression":
        a, b = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        ra = value_range(a, defs, depth) if a is not None else None
        rb = value_range(b, defs, depth) if b is not None else None
        return None if ra is None or rb is None else (min(ra[0], rb[0]), max(ra[1], rb[1]))
    parts = binary(node)
    if parts is None:
        return None
    left, op, right = parts
    if op == "&":
        masks = [m for m in (int_expr_value(left), int_expr_value(right)) if m is not None]
        return (0, masks[0]) if masks and masks[0] >= 0 else None
    k = int_expr_value(right)
    if op == "%":
        if k is None or k <= 0:
            return None
        rl = value_range(left, defs, depth)
        return (0, min(rl[1], k - 1)) if rl is not None and rl[0] >= 0 else (1 - k, k - 1)
    rl = value_range(left, defs, depth)
    if rl is None:
        return None
    if op in (">>", "*") and k is not None and k >= 0:
        return (rl[0] >> k, rl[1] >> k) if op == ">>" else (rl[0] * k, rl[1] * k)
    rr = value_range(right, defs, depth)
    if rr is None:
        return None
    if op == "+":
        return rl[0] + rr[0], rl[1] + rr[1]
    if op == "-":
        return rl[0] - rr[1], rl[1] - rr[0]
    return None


def residue_loop(loop: Node, defs: dict[str, Definition]) -> ResidueLoop | None:
    """``loop`` as a tap loop of a run-time start and bounded trips, or None."""
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if loop.type != "for_statement" or init is None or cond is None or update is None:
        return None
    if init.type == "declaration":
        d = init.child_by_field_name("declarator")
        if d is None or d.type != "init_declarator" or init.named_child_count != 2:
            return None
        var_node, start = d.child_by_field_name("declarator"), d.child_by_field_name("value")
    elif init.type == "assignment_expression" and text(
            init.child_by_field_name("operator")) == "=":
        var_node, start = init.child_by_field_name("left"), init.child_by_field_name("right")
    else:
        return None
    if var_node is None or var_node.type != "identifier" or start is None or \
            int_expr_value(start) is not None:
        return None
    var = text(var_node)
    step, bound = _step(update, var), _bound(cond, var)
    body = loop.child_by_field_name("body")
    if step is None or bound is None or body is None or written(body, var):
        return None
    starts = value_range(start, defs)
    if starts is None or starts[1] - starts[0] > _MAX_SPAN:
        return None
    end, inclusive = bound
    counts = [max(0, (end - v + inclusive + step - 1) // step)
              for v in range(starts[0], starts[1] + 1)]
    return ResidueLoop(loop, var, starts, (min(counts), max(counts)))


def _step(update: Node, var: str) -> int | None:
    """The constant s > 0 of ``v += s``, ``v = v + s``, ``++v``, ``v++``."""
    spelled = text(update).replace(" ", "")
    if spelled in (f"++{var}", f"{var}++"):
        return 1
    if update.type != "assignment_expression" or \
            text(strip(update.child_by_field_name("left") or update)) != var:
        return None
    op, right = text(update.child_by_field_name("operator")), update.child_by_field_name("right")
    if op == "=" and right is not None:
        parts = binary(right)
        if parts is None or parts[1] != "+" or text(strip(parts[0])) != var:
            return None
        right = parts[2]
    elif op != "+=":
        return None
    step = int_expr_value(right)
    return step if step is not None and step > 0 else None


def _bound(cond: Node, var: str) -> tuple[int, bool] | None:
    """(B, whether B itself is a trip) of ``v < B``, ``v <= B``, ``B > v``, ``B >= v``
    with B a constant expression (:func:`.item_state.upper_bound`)."""
    found = upper_bound(cond, var)
    end = int_expr_value(found[0]) if found is not None else None
    return (end, found[1]) if found is not None and end is not None else None


def apply_residue_taps(plan: Plan) -> bool:
    """TAP_UNROLL over the kernel's tap loops of a run-time residue start (module doc);
    False where there are none. Where :mod:`.conv_mix` offered the knob (its constant-trip
    taps), these loops join it."""
    name = fresh_names(plan, [TAPS])[TAPS]
    skipping = [s for n in walk(plan.body) if n.type == "for_statement"
                and (s := skip_loop(n)) is not None and not _has_pragma(n)]
    found = [r for n in walk(plan.body) if n.type == "for_statement"
             and (r := residue_loop(n, plan.facts.defs)) is not None
             and 2 <= r.trips[1] <= MAX_TRIPS and not _has_pragma(n)]
    for loop in [s.loop for s in skipping if _rewritten(plan, _edited(s))] + \
            [r.loop for r in found if _cut(plan, r.loop)]:
        plan.note(TAPS, False, "another transform rewrote this loop (its header or its "
                  "test): left as that transform renders it", loop)
    skipping = [s for s in skipping if not _rewritten(plan, _edited(s))]
    found = [r for r in found if not _cut(plan, r.loop)]
    if not found and not skipping:
        return False
    for r in found:
        plan.rw.insert(r.loop.start_byte, f"\n#if {name}\n#pragma unroll\n#endif\n")
    for s in skipping:
        _stride(plan, s, name)
    first = (found[0].loop if found else skipping[0].loop)
    if name not in plan.params:
        plan.add_param(name, {"kind": "choice", "values": [0, 1], "default": 0,
                              "description": "1: the tap loops of a run-time residue "
                                             "start unrolled whole (0: the compiler's "
                                             "choice, as written)"},
                       f"{line(first)}: {text(first).splitlines()[0][:60]}")
    for r in found:
        lo, hi = r.starts
        plan.note(TAPS, True, f"`{r.var}` starts at a run-time value in {lo}..{hi}: "
                  f"{r.trips[0]} to {r.trips[1]} trips, unrolled whole at 1 (any value is "
                  "correct)", r.loop)
    return True


def _stride(plan: Plan, s: SkipLoop, name: str) -> None:
    """At ``name`` 1 the skipping loop starts at its first passing trip and steps by the
    divisor, its test always passing (:mod:`.residue_skips`), and is unrolled whole."""
    init = s.loop.child_by_field_name("initializer")
    update = s.loop.child_by_field_name("update")
    decl = init.child_by_field_name("declarator") if init is not None else None
    start = decl.child_by_field_name("value") if decl is not None else None
    assert start is not None and update is not None  # skip_loop read both
    plan.rw.insert(s.loop.start_byte, f"\n#if {name}\n#pragma unroll\n#endif\n")
    plan.rw.replace(start, f"({name} ? ({s.first}) : ({text(start)}))")
    plan.rw.replace(update, f"{s.var} += ({name} ? {s.stride} : 1)")
    test = strip(s.test)
    plan.rw.replace(test, f"(!{name} && ({text(test)}))" if s.skips else
                    f"({name} || ({text(test)}))")
    plan.note(TAPS, True, f"`{s.var}`: of its {trip_count(s.loop)} trips `{text(test)}` "
              f"lets one in {s.stride} run; at 1 the loop starts at the first of them, steps "
              f"by {s.stride} and is unrolled whole (0: as written)", s.loop)


def _cut(plan: Plan, loop: Node) -> bool:
    """A family replaced a span that starts before the loop and ends inside it: a pragma
    before the loop would land inside that span. (Edits inside the loop, a name an item
    renames, render with the pragma before it; a span replaced around the whole loop
    renders it too, or drops it with the loop.)"""
    return any(e.start < e.end and e.start < loop.start_byte < e.end < loop.end_byte
               for e in plan.rw.edits)


def _header(loop: Node) -> list[Node]:
    body = loop.child_by_field_name("body")
    return [c for c in loop.children if body is None or c.end_byte <= body.start_byte]


def _edited(s: SkipLoop) -> list[Node]:
    """The nodes :func:`_stride` replaces."""
    return [*_header(s.loop), strip(s.test)]


def _rewritten(plan: Plan, nodes: list[Node]) -> bool:
    """A family replaced a span that overlaps one of ``nodes`` (a loop's header, its test):
    the loop as rendered is no longer the one read here."""
    return any(e.start < e.end and e.start < n.end_byte and n.start_byte < e.end
               for e in plan.rw.edits for n in nodes)


def _has_pragma(loop: Node) -> bool:
    prev = loop.prev_sibling
    return prev is not None and prev.type in ("preproc_call", "comment") and \
        text(prev).startswith("#pragma")
