"""A read whose place the item's data picks (a table lookup), told from a walk over memory
(issue 28, set 20's crspline_rotmean: a spline's knots read at the segment of each sample).

Items with independent state (:mod:`.ilp`) leave a loop that reads memory at a place that
moves with the trips and the item (a row walked per item: memory-bound, VEC and WALK_SPLIT
serve it) and interleave the items in a loop that computes on their registers. A lookup is
neither a walk nor a register operand: ``const int seg = min((int)(t * 64), 63); ..
knots[(seg + 1) % 64]`` reads a small table at a place a float of the item's state selects,
each trip anew; the trips' chain is arithmetic (the cubic), each load one operand of it, so
the items' chains interleave like any compute loop's, and vector lanes would run them one
after another.

The read walks when its place reads an item's name and moves with the trips through integer
arithmetic: the place's names are read through the locals it is computed from (a local
declared once and never assigned stands for its value), an integer local followed into its
value, a floating one (``float``, ``double``, ``half``) taken as data, not a place, naming
nothing; any other name (the loop's counter, a stepped pointer, a parameter) is itself. An
integer local the loop's body declares once (no trip reads another's value) and assigns
stands for every value written to it there (a floating one is data): ``seg = (int)s; if
(seg > 63) seg = 63;``, ``seg = seg > 63 ? 63 : seg``, ``seg = min(seg, 63)`` clamp a
segment each trip picks anew. It is itself where its address is taken or a write lies in an
inner loop it is declared outside of (an inner counter moves within the trip). A row a float
of the item picks and the counter walks (``hist[(int)(x * 64) * K + k]``) walks; a knot a
float of each trip picks does not.

A read of a file-scope ``__constant__`` array (:func:`constant_table`) is a lookup whatever
its place: constant memory holds at most 64 KiB, a table, never a stream a memory-bound walk
reads (a CRC's ``crc_table[(c ^ w) & 0xff]``, whose place the integer state picks, is the
byte step's operand, and the items' chains interleave through it).
"""

from __future__ import annotations

from collections.abc import Collection

from tree_sitter import Node

from workbench.core.module_constants import module_globals
from workbench.templater.analysis import LOOPS, inside, mentions, text, walk, writer
from workbench.templater.inline_bind import declared
from workbench.templater.plan import Plan

#: Declared types (their last word: ``unsigned int``, ``long long``) of the integer locals a
#: place is followed through, and of the floating ones that are data.
_INTEGER = frozenset({"int", "unsigned", "long", "short", "char", "size_t", "int32_t",
                      "uint32_t", "int64_t", "uint64_t", "ptrdiff_t"})
_FLOATING = frozenset({"float", "double", "half", "__half", "__nv_bfloat16"})
_DEPTH = 8  # locals followed from one place (a chain of index helpers)


def place_names(plan: Plan, index: Node, loop: Node | None = None) -> set[str]:
    """The names the place ``index`` is computed from (see the module doc); ``loop`` the
    loop whose own integer locals are followed into every value written to them."""
    out: set[str] = set()
    followed: set[str] = set()
    todo = [(index, 0)]
    while todo:
        node, depth = todo.pop()
        for n in walk(node):
            if n.type != "identifier":
                continue
            name = text(n)
            d = plan.facts.defs.get(name)
            kind = _kind(d.decl) if d is not None and d.value is not None and \
                not d.assigned and not d.is_pointer and depth < _DEPTH else None
            if kind == "floating":
                continue
            if kind == "integer" and d is not None and d.value is not None:
                todo.append((d.value, depth + 1))
            elif name in followed:
                continue
            elif loop is not None and depth < _DEPTH and \
                    (values := _trip_values(plan, name, loop)) is not None:
                followed.add(name)
                todo += [(v, depth + 1) for v in values]
            else:
                out.add(name)
    return out


def _trip_values(plan: Plan, name: str, loop: Node) -> list[Node] | None:
    """The values written to ``name``, a local ``loop``'s body declares once and assigns
    (its initializer, every assignment's right side; none for a floating one: data); None
    for any other name, or one written through a pointer or in an inner loop (module doc)."""
    d = plan.facts.defs.get(name)
    places = declared(plan.body).get(name, [])
    kind = _kind(d.decl) if d is not None else None
    trip = loop.child_by_field_name("body")  # not its header: a counter lives on
    if d is None or not d.assigned or d.is_pointer or kind is None or trip is None or \
            len(places) != 1 or not inside(places[0], trip):
        return None
    values = [d.value] if d.value is not None else []
    for n in walk(loop):
        if n.type != "identifier" or text(n) != name or (w := writer(n, address=True)) is None:
            continue
        if w.type == "pointer_expression" or any(
                m.type in LOOPS and inside(w, m) and not inside(places[0], body)
                for m in walk(trip) if (body := m.child_by_field_name("body")) is not None):
            return None  # written through a pointer, or moving with an inner loop's trips
        right = w.child_by_field_name("right")
        if right is not None:
            values.append(right)
    return [] if kind == "floating" else values


def constant_table(plan: Plan, array: Node) -> bool:
    """Whether ``array`` names a file-scope ``__constant__`` array of the kernel's file (no
    local of the name shadows it): a table, read by lookups (see the module doc)."""
    name = text(array)
    if array.type != "identifier" or name in plan.facts.defs:
        return False
    g = module_globals(plan.source).get(name)
    return g is not None and g.qualifier == "__constant__" and bool(g.extents)


def walks(plan: Plan, index: Node, items: Collection[str], moving: Collection[str],
          loop: Node | None = None) -> bool:
    """Whether a read at ``index`` walks memory per item: it reads an item's name and its
    place moves with the trips (``moving``, assigned in ``loop``) through integer locals
    (see the module doc)."""
    return mentions(index, set(items)) and bool(place_names(plan, index, loop) & set(moving))


def _kind(decl: Node) -> str | None:
    typ = decl.child_by_field_name("type")
    words = text(typ).split() if typ is not None else []
    last = words[-1] if words else ""
    return "floating" if last in _FLOATING else "integer" if last in _INTEGER else None
