"""The vector family's reading of a region's memory accesses (:mod:`.vector`): which array
reads and writes are the unit-stride streams ``a[off + var]`` (through a local pointer, a
cast ``((uchar4 *)p)[i]``), which other reads of the variable each lane evaluates at its own
element, the alignment each offset needs, the sizes a bound or an offset names, and the
element type and width of an array. Raises :class:`Illegal` naming why a region is not
vectorized.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import (
    JUMPS,
    binary,
    calls,
    declared_name,
    factors,
    int_value,
    strip,
    terms,
    text,
    walk,
    write_target,
    writer,
)
from workbench.templater.plan import Plan
from workbench.templater.vector_regions import Region

_CONTROL = ("if_statement", "for_statement", "while_statement", "do_statement",
            "conditional_expression", "switch_statement")


class Illegal(WorkbenchError):
    """A transform's precondition failed: ``reason`` and the node it is about (caught
    inside the templater, which records it as a note; it never reaches a user)."""

    def __init__(self, reason: str, node: Node | None = None) -> None:
        super().__init__(reason, reason=reason)
        self.reason = reason
        self.node = node


@dataclass(frozen=True)
class Access:
    node: Node  # the subscript expression
    array: str
    index: Node
    write: bool
    read: bool


#: Bytes of the element types a cast stream may name (``((uchar4 *)rgba)[i]``).
CAST_BYTES = {"uchar2": 2, "char2": 2, "uchar4": 4, "char4": 4, "ushort2": 4, "short2": 4,
              "ushort4": 8, "short4": 8, "half2": 4, "__half2": 4, "__nv_bfloat162": 4,
              "float": 4, "int": 4, "unsigned": 4, "float2": 8, "int2": 8, "uint2": 8,
              "double": 8, "float4": 16, "int4": 16, "uint4": 16}
_CAST = re.compile(r"\(\s*\(\s*(?:const\s+)?([A-Za-z_]\w*)\s*\*\s*\)\s*([A-Za-z_]\w*)\s*\)")
#: The C++ spelling of the same cast, ``reinterpret_cast<uchar4*>(rgba)`` (round 31b).
_CXX_CAST = re.compile(r"reinterpret_cast\s*<\s*(?:const\s+)?([A-Za-z_]\w*)\s*(?:const\s*)?"
                       r"\*\s*>\s*\(\s*([A-Za-z_]\w*)\s*\)")


def cast_stream(array: str) -> tuple[str, str] | None:
    """(element type, pointer) where ``array`` is a pointer cast to another element type,
    ``((uchar4 *)rgba)`` or ``reinterpret_cast<uchar4*>(rgba)``, of a type whose size
    :data:`CAST_BYTES` knows; else None."""
    m = _CAST.fullmatch(array.strip()) or _CXX_CAST.fullmatch(array.strip())
    return (m.group(1), m.group(2)) if m is not None and m.group(1) in CAST_BYTES else None


def base_name(array: str) -> str:
    """The pointer an array's text names: ``rgba`` for ``((uchar4 *)rgba)``."""
    cast = cast_stream(array)
    return cast[1] if cast is not None else array


def _is_write(sub: Node) -> tuple[bool, bool]:
    """(written, read) for a subscript expression (or a read :func:`_pointer_read` names) by
    its parent."""
    w = writer(sub)
    if w is None:
        return False, True
    return True, text(w.child_by_field_name("operator")) != "="


def ldg_call(sub: Node) -> Node | None:
    """The call ``__ldg(&P[I])`` whose one argument is the address of the subscript ``sub``
    (through parentheses), else None: the element read through the read-only path, which a
    vector lane or a kept register replaces whole (``__ldg`` of a register's address would
    load through the global path from a local address)."""
    up = sub.parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    if up is None or up.type != "pointer_expression" or \
            text(up.child_by_field_name("operator")) != "&":
        return None
    args = up.parent
    while args is not None and args.type == "parenthesized_expression":
        args = args.parent
    call = args.parent if args is not None else None
    if args is None or args.type != "argument_list" or args.named_child_count != 1 or \
            call is None or call.type != "call_expression" or \
            text(call.child_by_field_name("function")) != "__ldg":
        return None
    return call


def _pointer_read(use: Node) -> tuple[Node, str, Node] | None:
    """(the read, its pointer P, its offset I) where ``use`` is in I of ``__ldg(P + I)``,
    ``__ldg(&P[I])`` (:func:`ldg_call`) or ``*(P + I)`` with P a name: the element
    ``P[I]``, read through the read-only path or a dereference, which a vector lane replaces
    as it replaces the subscript; else None."""
    sub = use.parent
    while sub is not None and sub.type != "subscript_expression":
        sub = sub.parent
    index = sub.child_by_field_name("indices") if sub is not None else None
    arg = sub.child_by_field_name("argument") if sub is not None else None
    if sub is not None and index is not None and index.named_children and arg is not None \
            and strip(arg).type == "identifier" and \
            index.named_children[0].start_byte <= use.start_byte < index.end_byte and \
            (call := ldg_call(sub)) is not None:
        return call, text(strip(arg)), strip(index.named_children[0])
    up = use
    while up.parent is not None and up.parent.type == "parenthesized_expression":
        up = up.parent
    total = up.parent
    if total is None or total.type != "binary_expression" or \
            text(total.child_by_field_name("operator")) != "+" or \
            total.child_by_field_name("right") != up:
        return None
    base = total.child_by_field_name("left")
    read = total.parent
    while read is not None and read.type == "parenthesized_expression":
        read = read.parent
    if base is None or base.type != "identifier" or read is None:
        return None
    if read.type == "pointer_expression" and text(read).startswith("*"):
        return read, text(base), up
    call = read.parent
    if read.type == "argument_list" and read.named_child_count == 1 and call is not None and \
            call.type == "call_expression" and \
            text(call.child_by_field_name("function")) == "__ldg":
        return call, text(base), up
    return None


def region_accesses(plan: Plan, region: Region) -> tuple[list[Access], list[Node]]:
    """The unit-stride accesses ``A[offset + var]`` of ``region`` (the vector streams) and
    the other reads of ``var`` (as a value, ``x + 8 * w``, or in another index,
    ``s[w / 4]``): each lane evaluates those at its own element, ``var + wb_v``."""
    body, var = region.body, region.var
    for n in region.walk():
        if n.type in JUMPS:
            raise Illegal(f"`{text(n)}` leaves the loop body early", n)
    bad = sorted(c for s in region.statements() for c in calls(s)
                 if c == "__syncthreads" or c.startswith(("atomic", "__shfl")))
    if bad:
        raise Illegal(f"the body calls {bad[0]}, which must run once per thread", region.at)
    out: list[Access] = []
    values: list[Node] = []
    for n in region.walk():
        if n.type != "identifier" or text(n) != var:
            continue
        loaded = _pointer_read(n)
        sub = n.parent if loaded is None else loaded[0]
        while sub is not None and sub.type != "subscript_expression" and loaded is None:
            sub = sub.parent
        if sub is None or not region.holds(sub):
            _read_only(n, var)
            values.append(n)
            continue
        idx = sub.child_by_field_name("indices")
        index = idx.named_children[0] if idx is not None and idx.named_children else None
        if loaded is not None:
            index = loaded[2]
        if index is None:
            raise Illegal(f"cannot read the index of `{text(sub)}`", sub)
        hits = [t for s, t in terms(index) if text(t) == var and s == 1]
        if len(hits) != 1 or sum(1 for m in walk(index) if text(m) == var and
                                 m.type == "identifier") != 1:
            values.append(n)
            continue
        below, up = sub, sub.parent
        while up is not None and up != body:
            if up.type in _CONTROL and not _selected_read(plan, region, up, below, sub):
                raise Illegal(f"`{text(sub)}` runs under a branch or nested loop", sub)
            below, up = up, up.parent
        array = text(sub.child_by_field_name("argument")) if loaded is None else loaded[1]
        write, read = _is_write(sub)
        out.append(Access(sub, array, index, write, read))
    if not out:
        raise Illegal(f"no array is indexed by {var}", region.at)
    _indices_in_scope(plan, region, out)
    if values:
        _writes_streams_or_locals(region, out, values[0])
    if not region.loop:
        _keeps_outer_locals(region)
    return out, values


def _selected_read(plan: Plan, region: Region, control: Node, below: Node, sub: Node) -> bool:
    """Whether the access ``sub`` under ``control`` (reached from its child ``below``) may
    load as a whole vector: it is in the test of an ``if`` or ``?:`` (which runs), or it is
    a read in an arm whose test reads data only (:func:`_data_only`: no index, no thread's
    place). Such a test selects by the values, so for some input the kernel as written
    reads the arm's element at every index the region reaches: the array covers each, and
    loading it where the test skips it reads memory the kernel owns (its value unused)."""
    if control.type not in ("if_statement", "conditional_expression"):
        return False
    test = control.child_by_field_name("condition")
    if test is None:
        return False
    if below == test:
        return True
    return not _is_write(sub)[0] and _data_only(plan, region, test)


def _data_only(plan: Plan, region: Region, test: Node, depth: int = 0) -> bool:
    """``test`` reads only streams at the region's element (``mask[i]``), other memory,
    scalar kernel arguments and locals of the element's statements holding such values
    (never assigned): not the index as a value (``i < m ? a[i] : b[i - m]`` selects by
    position) nor a thread's or block's place."""
    for n in walk(test):
        if n.type != "identifier":
            continue
        up = n.parent
        if up is not None and up.type == "subscript_expression" and \
                up.child_by_field_name("argument") == n:
            continue  # the array a subscript reads
        if up is not None and up.type == "call_expression" and \
                up.child_by_field_name("function") == n:
            continue
        name = text(n)
        if name == region.var:
            if not _in_index(n, test):
                return False
            continue
        try:
            if plan.kernel.param(name).is_scalar:
                continue
        except KeyError:
            pass
        d = plan.facts.defs.get(name)
        if d is None or d.assigned or d.value is None or depth > 4 or \
                not region.holds(d.decl) or not _data_only(plan, region, d.value, depth + 1):
            return False
    return True


def _in_index(n: Node, top: Node) -> bool:
    """Whether ``n`` is inside a subscript's index below ``top``."""
    below, up = n, n.parent
    while up is not None and below != top:
        if up.type == "subscript_expression" and up.child_by_field_name("argument") != below:
            return True
        below, up = up, up.parent
    return False


def reads_before_writes(region: Region) -> None:
    """The element's statements read memory only before their first write to memory: as
    written, a thread's reads all precede its stores, so vector loads before the lanes and
    stores after them order one thread's accesses as written (an overlap between threads'
    ranges is a race as written)."""
    first = None
    for n in region.walk():
        target = write_target(n)
        if target is not None and local_root(target) is None:
            first = n if first is None else first
            continue
        if first is None or n.start_byte < first.end_byte:
            continue
        memory = n.type == "subscript_expression" or (
            n.type == "call_expression" and text(n.child_by_field_name("function")) ==
            "__ldg") or (
            n.type == "pointer_expression" and text(n).startswith("*")) or (
            n.type == "field_expression" and text(n.child_by_field_name("operator")) == "->")
        if memory and not any(w == n for w in _write_targets(region)):
            raise Illegal(f"`{text(n)}` reads memory after the store `{text(first)}`: the "
                              "vector loads would run before that store", n)


def _write_targets(region: Region) -> list[Node]:
    return [t for n in region.walk() for t in [write_target(n)] if t is not None]


def _keeps_outer_locals(region: Region) -> None:
    """A one-element region's body writes no local declared before it: each of the VEC
    lanes' bodies would start from the previous lane's value, not from the value every
    thread as written starts from (``base += i``)."""
    own = {declared_name(d)[0] for d in region.walk() if d.type == "declaration"}
    for n in region.walk():
        target = write_target(n)
        target = local_root(target) if target is not None else None
        if target is not None and text(target) not in own:
            raise Illegal(f"`{text(n)}` writes {text(target)}, declared before the "
                          "element's body: each vector lane would start from the previous "
                          "lane's value", n)


def local_root(target: Node) -> Node | None:
    """The local a write lands in: ``target`` itself, or the struct of a field
    (``pixel.x``); None for memory (a subscript, ``p->x``, ``*p``)."""
    while target.type == "field_expression" and \
            text(target.child_by_field_name("operator")) == ".":
        target = strip(target.child_by_field_name("argument"))  # type: ignore[arg-type]
    return target if target.type == "identifier" else None


def _indices_in_scope(plan: Plan, region: Region, streams: list[Access]) -> None:
    """Each vector loads before the element's statements and stores after them, so its index
    reads no local they declare (round 31b's ``const unsigned p = blockIdx.y;`` then
    ``out[(size_t)p * count + t]``: the store after the lanes named a ``p`` out of scope)."""
    where = "in the element's statements" if not region.exit else \
        "after the row exit" if len(plan.block) == 2 else "after the exit"
    for a in streams:
        for n in walk(a.index):
            d = plan.facts.defs.get(text(n)) if n.type == "identifier" else None
            if text(n) != region.var and d is not None and region.holds(d.decl):
                raise Illegal(f"`{text(a.node)}` reads {text(n)}, declared {where}: the vector "
                              "load or store outside the lanes cannot read it", a.node)


def _read_only(n: Node, var: str) -> None:
    """``n`` (a use of ``var`` outside a unit-stride index) reads it: not assigned,
    stepped or its address taken, which would change the walk itself."""
    w = writer(n, address=True)
    if w is not None:
        raise Illegal(f"the body writes `{var}` (`{text(w)}`): the walk is not a "
                      "unit-stride loop", n)


def _writes_streams_or_locals(region: Region, streams: list[Access], value: Node) -> None:
    """Where ``var`` is also read as a value, the body writes only locals and the streams:
    a lane's other reads then see what they saw in the loop as written, though every
    vector loads before the first lane's body and stores after the last."""
    for n in region.walk():
        target = write_target(n)
        if target is not None and local_root(target) is None and \
                not any(a.node == target for a in streams):
            raise Illegal(f"`{region.var}` is read as a value in `{text(value.parent)}` and "
                          f"the body writes `{text(target)}`, which the vector loads and "
                          "stores would reorder against that read", n)


def offset_constraints(plan: Plan, access: Access, var: str, knob: str = "VEC") -> list[str]:
    """Constraints making ``offset`` (index minus var, plus a local pointer's offset) a
    multiple of ``knob`` (a vector width); raises Illegal when a term cannot be shown to be
    one."""
    pieces = [t for s, t in terms(access.index) if text(t) != var]
    array = base_name(access.array)
    d = plan.facts.defs.get(array)
    if d is not None:
        if d.assigned or not d.is_pointer or d.value is None:
            raise Illegal(f"`{array}` is not a kernel pointer or a fixed offset of one",
                          access.node)
        base = [t for _s, t in terms(d.value)]
        ptrs = [t for t in base if (t.type == "identifier" and plan.pointer(text(t))) or
                _pointer_cast(plan, t) is not None]
        if len(ptrs) != 1:
            raise Illegal(f"`{array}` is not a fixed offset of a kernel pointer", d.decl)
        pieces += [t for t in base if t != ptrs[0]]
    elif not plan.pointer(array):
        raise Illegal(f"`{access.array}` is not a kernel pointer argument", access.node)
    return multiple_constraints(plan, pieces, knob, f"of `{text(access.node)}`", access.node)


def multiple_constraints(plan: Plan, pieces: list[Node], knob: str, what: str,
                         at: Node) -> list[str]:
    """Constraints making each of ``pieces`` (additive terms, single-assignment locals
    expanded) a multiple of ``knob``: a factor that is a size argument, a literal or a local
    size; raises Illegal naming the term (``what``: whose term it is) where none is."""
    out: list[str] = []
    expanded: list[Node] = []
    for piece in pieces:
        expanded += plan.facts.resolve(piece)
    for piece in expanded:
        fs = factors(piece)
        # a size argument first (d % VEC), then a literal (2 % VEC)
        found = next((f"{plan.scalars[text(f)]} % {knob} == 0" for f in fs
                      if f.type == "identifier" and text(f) in plan.scalars), None)
        if found is None:
            found = next((f"{int_value(f)} % {knob} == 0" for f in fs
                          if (int_value(f) or 0) > 1), None)
        if found is None:  # a local size (words = cols / 8)
            found = next((f"{size} % {knob} == 0" for f in fs if f.type == "identifier"
                          for size in [size_expression(plan, f)] if size is not None), None)
        if found is None:
            raise Illegal(f"offset `{text(piece)}` {what} is not known to be a multiple of "
                          "the vector width (alignment)", at)
        out.append(found)
    return out


_SIZE_OPS = {"+": "+", "-": "-", "*": "*", "/": "//"}


def size_expression(plan: Plan, node: Node, depth: int = 0) -> str | None:
    """``node``'s value as a launch expression over the shape names: a size argument
    (``n``), an integer literal or macro, a local never assigned after its initializer, and +, -,
    * and / (integer division, ``//``) of those (``cols / 8`` -> ``(cols // 8)``), and a
    left shift by a literal as its product (``W << 1`` -> ``(w * 2)``: sizes are not
    negative); None for anything else."""
    node = strip(node)
    if node.type == "cast_expression":
        value = node.child_by_field_name("value")
        return size_expression(plan, value, depth) if value is not None else None
    if node.type == "identifier":
        name = text(node)
        if name in plan.scalars:
            return plan.scalars[name]
        d = plan.facts.defs.get(name)
        if d is None and int_value(node) is not None:  # an integer macro (#define R 2)
            return str(int_value(node))
        if d is None or d.assigned or d.is_pointer or d.value is None or depth > 4:
            return None
        return size_expression(plan, d.value, depth + 1)
    if int_value(node) is not None:
        return str(int_value(node))
    parts = binary(node)
    shift = int_value(parts[2]) if parts is not None and parts[1] == "<<" else None
    if parts is not None and shift is not None and 0 <= shift < 31:
        left = size_expression(plan, parts[0], depth)
        return None if left is None else f"({left} * {1 << shift})"
    if parts is None or parts[1] not in _SIZE_OPS:
        return None
    left, right = (size_expression(plan, side, depth) for side in (parts[0], parts[2]))
    if left is None or right is None:
        return None
    return f"({left} {_SIZE_OPS[parts[1]]} {right})"


def root_array(plan: Plan, array: str) -> str:
    array = base_name(array)
    d = plan.facts.defs.get(array)
    if d is None or d.value is None:
        return array
    for _s, t in terms(d.value):
        if t.type == "identifier" and plan.pointer(text(t)):
            return text(t)
        cast = _pointer_cast(plan, t)
        if cast is not None:
            return cast[1]
    return array


def _pointer_cast(plan: Plan, term: Node) -> tuple[str, str] | None:
    """(element type, kernel pointer) where ``term`` is a kernel pointer cast to another
    element type (``reinterpret_cast<uchar4*>(rgba)``, ``(uchar4 *)rgba``)."""
    term = strip(term)
    spelled = f"({text(term)})" if term.type == "cast_expression" else text(term)
    cast = cast_stream(spelled)
    return cast if cast is not None and plan.pointer(cast[1]) else None


def local_cast(plan: Plan, array: str) -> tuple[str, str] | None:
    """(element type, kernel pointer) of a local pointer set from a cast kernel pointer
    (round 31b's ``uchar4* dst = reinterpret_cast<uchar4*>(rgba) + row * w;``): its elements
    are the cast's, its offsets counted in them."""
    d = plan.facts.defs.get(array)
    if d is None or d.value is None or not d.is_pointer:
        return None
    casts = [c for _s, t in terms(d.value) if (c := _pointer_cast(plan, t)) is not None]
    return casts[0] if len(casts) == 1 else None


def elem_bytes(plan: Plan, array: str) -> str | None:
    cast = cast_stream(array) or local_cast(plan, base_name(array))
    return str(CAST_BYTES[cast[0]]) if cast is not None else plan.elem_bytes(root_array(plan, array))


def elem_type(plan: Plan, array: str) -> str:
    cast = cast_stream(array) or local_cast(plan, base_name(array))
    if cast is not None:
        return cast[0]
    p = plan.kernel.param(root_array(plan, array))
    return p.base_type




