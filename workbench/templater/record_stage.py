"""STAGE: a block's per-thread records moved through shared memory (issue 28).

A thread that owns a contiguous record of R elements (``A[b * R + c]``, ``c < R``; a 4 x 4
matrix is R = 16) reads and writes it with accesses R elements apart across a warp: each
touches R times the sectors it needs. STAGE 1 copies the block's input records into
``__shared__ T wb_st_A[records][R + pad]`` with block-stride (coalesced) loads at the top of
the body, before any exit (every thread reaches the barrier), and each read becomes
``wb_st_A[b - first][c]``; an output's stores go to its own staged rows, and after a barrier
at the end of the body the block stores them with block-stride (coalesced) copies. A row
gets one element of padding where R is even so that a warp's accesses of one column fall in
distinct banks. STAGE 0 is the kernel as written.

Legal where the analysis shows: a 1-D index ``b = blockIdx.x * B + threadIdx.x`` (never
assigned) bounded by a top-level guard ``if (b >= n) return;`` or ``if (b < n) {..}``; the
pointer accessed only at ``P[R * b + c]`` or through a local ``q = P + R * b`` (never
reassigned) as ``q[c]``, R a compile-time constant and every ``c`` inside ``[0, R)`` for
each value the loops around it give (:func:`.bounds.interval`); the launch ``grid =
ceil_div(n, X)`` so that block ``k`` owns records ``[k X, k X + X)`` (X is the block size
times the items a thread takes, :mod:`.ilp`'s and :mod:`.wrap`'s mappings). An input is only
read. An output is only assigned with ``=``, outside any condition or loop of unknown trips
or left early, no exit but the guard's in the body, and its stores' columns (enumerated over
their loops' counters) cover the whole record, so every thread past the guard writes all of
its row; and the body as rendered so far has no ``return`` left (the items turn the guard's
into a flag), so every thread reaches the barrier before the stores. Kernels that already
share memory or synchronise are left alone.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    declared_name,
    inside,
    int_value,
    shares_or_syncs,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.bounds import _counters, interval
from workbench.templater.item_state import trip_count
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter

NAME = "STAGE"
#: Static shared memory a block may declare (bytes).
STATIC_SMEM = 48 * 1024
#: Bytes of the element types a record may have.
_C_BYTES = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4,
            "long long": 8, "__half": 2, "half": 2, "short": 2, "char": 1}


@dataclass(frozen=True)
class Read:
    """One read of a record: ``node`` is wrapped; ``subscript`` is None for a pointer's
    initial value (``P + R * b``), else the index of the element read (``R * b + c``)."""

    node: Node
    subscript: Node | None
    width: int


@dataclass(frozen=True)
class Staged:
    pointer: str
    ctype: str
    width: int  # R
    reads: tuple[Read, ...]  # the accesses wrapped (reads of an input, stores of an output)
    output: bool = False
    elements: tuple[Node, ...] = ()  # every element access (q[c] through a local pointer)


#: Bound on the loop-counter combinations enumerated to show an output's record is covered.
_MAX_COMBINATIONS = 4096


def apply_record_stage(plan: Plan) -> bool:
    """Lift STAGE where pointers are read, or written whole, as per-thread records (notes
    the reason otherwise); True when it applied."""
    found = _index_and_bound(plan)
    if isinstance(found, str):
        plan.note(NAME, False, found)
        return False
    index, bound = found
    records = _records_per_block(plan, bound)
    if records is None:
        plan.note(NAME, False, f"the launch grid {plan.grid} is not ceil_div({bound}, X): the "
                  "records a block owns are not known")
        return False
    staged: list[Staged] = []
    for param in plan.kernel.params:
        if not param.is_pointer:
            continue
        got = _record_uses(plan, param.name, index)
        if isinstance(got, str):
            plan.note(NAME, False, got)
        elif got is not None:
            staged.append(got)
    if any(s.output for s in staged) and (exit_ := _exit_left(plan)) is not None:
        plan.note(NAME, False, f"outputs not staged: {exit_}")
        staged = [s for s in staged if not s.output]
    if not staged:
        return False
    _emit(plan, staged, index, bound, records)
    return True


def _index_and_bound(plan: Plan) -> tuple[str, str] | str:
    """(index, bound) of ``b = blockIdx.x * B + threadIdx.x`` guarded at the body's top
    level, else the reason."""
    if shares_or_syncs(plan.body):
        return "the kernel already shares memory or synchronises its block"
    for d in plan.facts.defs.values():
        if d.assigned or d.value is None or not _is_flat_index(plan, d.value):
            continue
        bound = _guard(plan, d.name)
        if bound is not None:
            return d.name, bound
    return ("no 1-D index b = blockIdx.x * B + threadIdx.x bounded by a guard at the body's "
            "top level (if (b >= n) return; or if (b < n) {..})")


def _is_flat_index(plan: Plan, value: Node) -> bool:
    parts = terms(value)
    if len(parts) != 2 or any(sign != 1 for sign, _t in parts):
        return False
    thread = [t for _s, t in parts if plan.facts.is_thread(t, "x")]
    block = [t for _s, t in parts if binary(t) is not None and binary(t)[1] == "*"  # type: ignore[index]
             and any(builtin(f, "blockIdx") == "x" for f in binary(t)[::2])]  # type: ignore[index]
    return len(thread) == 1 and len(block) == 1


def _guard(plan: Plan, index: str) -> str | None:
    """The bound ``n`` of the first top-level ``if`` on ``index``: ``if (index >= n)
    return;`` or ``if (index < n) {..}`` as the last statement."""
    statements = [c for c in plan.body.named_children if c.type != "comment"]
    for pos, s in enumerate(statements):
        if s.type != "if_statement":
            continue
        cond = s.child_by_field_name("condition")
        if cond is not None and cond.type == "condition_clause" and cond.named_child_count == 1:
            cond = cond.named_children[0]
        parts = binary(cond) if cond is not None else None
        if parts is None or text(strip(parts[0])) != index:
            return None
        then = s.child_by_field_name("consequence")
        exits = then is not None and text(then).replace("{", "").replace("}", "").strip() \
            == "return;"
        if parts[1] == ">=" and exits and s.child_by_field_name("alternative") is None:
            return text(parts[2])
        if parts[1] == "<" and pos == len(statements) - 1:
            return text(parts[2])
        return None
    return None


def _records_per_block(plan: Plan, bound: str) -> str | None:
    match = re.fullmatch(r"ceil_div\((.+?), (.+)\)", plan.grid[0] if plan.grid else "")
    if len(plan.grid) != 1 or match is None or match.group(1).strip() != bound:
        return None
    per_block = match.group(2)
    names = set(re.findall(r"[A-Za-z_]\w*", per_block))
    return per_block if names <= set(plan.params) else None


def _width(plan: Plan, offset: Node, index: str) -> int | str | None:
    """R for ``R * index`` (either order, casts allowed); a str names a non-constant R;
    None: not a multiple of the index."""
    parts = binary(offset)
    if parts is None or parts[1] != "*":
        return None
    for mine, other in ((parts[0], parts[2]), (parts[2], parts[0])):
        if strip(mine).type == "identifier" and text(strip(mine)) == index:
            value = int_value(other)
            return value if value is not None else text(other)
    return None


def _record_uses(plan: Plan, pointer: str, index: str) -> Staged | str | None:
    """``pointer``'s accesses when every one is its thread's record: read only, or (an
    output) assigned only, every element of the record by every thread past the guard;
    a reason when not; None when the kernel does not name it."""
    uses = plan.uses(pointer)
    output = any(_written(plan, u) for u in uses)
    accesses: list[Read] = []
    elements: list[tuple[Node, list[tuple[int, Node]]]] = []
    width: int | None = None
    for use in uses:
        got = _record_access(plan, use, index, output)
        if isinstance(got, str):
            return f"{pointer} (line {use.start_point.row + 1}): {got}"
        access, r, touched = got
        if width is not None and r != width:
            return f"{pointer}: records of {width} and of {r} elements"
        width = r
        accesses.append(access)
        elements += touched
    if width is None:
        return None
    if output and (gap := _uncovered(plan, pointer, elements, width)) is not None:
        return gap
    param = plan.source.function_node(plan.kernel)
    ctype = _element_type(param, pointer)
    if ctype not in _C_BYTES:
        return f"{pointer}: element type {ctype!r} has no known size"
    return Staged(pointer, ctype, width, tuple(accesses), output,
                  tuple(e for e, _c in elements))


def _column(sub_parent: Node) -> Node | None:
    sub = sub_parent.child_by_field_name("indices") or sub_parent.child_by_field_name("index")
    if sub is not None and sub.type == "subscript_argument_list":
        return sub.named_children[0] if sub.named_children else None
    return sub


def _assigned(element: Node) -> bool:
    """``element`` (a subscript) is the left side of a plain ``=``."""
    parent = element.parent
    return parent is not None and parent.type == "assignment_expression" and \
        parent.child_by_field_name("left") == element and \
        text(parent.child_by_field_name("operator")) == "="


def _record_access(plan: Plan, use: Node, index: str, output: bool
                   ) -> tuple[Read, int, list[tuple[Node, list[tuple[int, Node]]]]] | str:
    """One use of a record pointer -> (the access to wrap, R, the elements it touches with
    their column terms), or the reason it is no record access."""
    verb = "assigned" if output else "read"
    up = use.parent
    while up is not None and up.type in ("parenthesized_expression", "cast_expression"):
        up = up.parent
    if up is not None and up.type == "subscript_expression":
        inner = _column(up)
        if inner is None:
            return "a subscript it cannot read"
        if output != _assigned(up):
            return f"`{text(up)}` is not {verb} alone (an input read, an output assigned " \
                "with =)"
        got = _split(plan, inner, index, up, column_node=True)
        if isinstance(got, str):
            return got
        return got[0], got[1], [(up, [t for t in terms(inner) if _width(plan, t[1], index)
                                      is None])]
    if up is not None and up.type == "binary_expression" and binary(up)[1] == "+":  # type: ignore[index]
        decl = up.parent
        if decl is None or decl.type != "init_declarator" or decl.parent is None:
            return f"`{text(up)}` is not a local pointer's initial value"
        name, declarator, _v = declared_name(decl.parent)
        local = plan.facts.defs.get(name)
        if local is None or local.assigned:
            return f"the local pointer {name} is reassigned"
        other = binary(up)[2] if strip(binary(up)[0]) == strip(use) else binary(up)[0]  # type: ignore[index]
        got = _split(plan, up, index, up, column_node=False, offset=other)
        if isinstance(got, str):
            return got
        touched: list[tuple[Node, list[tuple[int, Node]]]] = []
        for q in plan.uses(name):
            if declarator is not None and q.start_byte == declarator.start_byte:
                continue  # its declaration
            if q.parent is None or q.parent.type != "subscript_expression" or \
                    output != _assigned(q.parent):
                return f"the local pointer {name} is used other than {verb} as {name}[c] " \
                    f"(line {q.start_point.row + 1})"
            column = _column(q.parent)
            if column is None or not _in_record([(1, column)], got[1]):
                return f"{name}[{text(column)}] is not inside [0, {got[1]}) for every value"
            touched.append((q.parent, [(1, column)]))
        return got[0], got[1], touched
    return f"`{text(up) if up is not None else text(use)}` is not a record access"


def _split(plan: Plan, expr: Node, index: str, node: Node, *, column_node: bool,
           offset: Node | None = None) -> tuple[Read, int] | str:
    """``R * index`` plus column terms whose sum stays inside ``[0, R)`` -> (Read, R); for a
    pointer's initial value (``offset``) the R * index term alone."""
    parts = [(1, offset)] if offset is not None else terms(expr)
    widths = [(_width(plan, t, index), sign, t) for sign, t in parts]
    scaled = [w for w, sign, _t in widths if w is not None and sign == 1]
    rest = [(sign, t) for w, sign, t in widths if w is None]
    if len(scaled) != 1 or len(scaled) + len(rest) != len(parts):
        return f"`{text(expr)}` is not {index} * R plus a column"
    width = scaled[0]
    if isinstance(width, str):
        return f"R = `{width}` is not a compile-time constant"
    if width < 1:
        return f"`{text(expr)}` has no positive record width"
    if offset is None and not _in_record(rest, width):
        return f"column `{' + '.join(text(t) for _s, t in rest)}` is not inside [0, " \
            f"{width}) for every value (a thread-dependent offset other than the index's)"
    return Read(node, expr if column_node else None, width), width


def _in_record(column: list[tuple[int, Node]], width: int) -> bool:
    """The signed terms ``column`` sum to a value inside ``[0, width)`` for every value the
    loops around them give their counters."""
    low = high = 0
    for sign, term in column:
        span = interval(term, _counters(term))
        if span is None:
            return False
        low, high = (low + span[0], high + span[1]) if sign == 1 else \
            (low - span[1], high - span[0])
    return low >= 0 and high < width  # no column terms: column 0


def _written(plan: Plan, use: Node) -> bool:
    """``use`` (a pointer) is the target of an assignment, directly or as a local pointer
    it initialises."""
    up = use.parent
    while up is not None and up.type in ("parenthesized_expression", "cast_expression",
                                          "subscript_expression", "binary_expression"):
        parent = up.parent
        if parent is not None and parent.type in ("assignment_expression", "update_expression")\
                and (parent.child_by_field_name("left") or
                     parent.child_by_field_name("argument")) == up:
            return up.type == "subscript_expression"
        if parent is not None and parent.type == "init_declarator":
            name, d, _v = declared_name(parent.parent) if parent.parent else ("", None, None)
            return any(_written(plan, q) for q in plan.uses(name)
                       if d is None or q.start_byte != d.start_byte) if name else False
        up = parent
    return False


def _uncovered(plan: Plan, pointer: str, elements: list[tuple[Node, list[tuple[int, Node]]]],
               width: int) -> str | None:
    """Why the stores ``elements`` (with their column terms) may leave an element of a
    thread's record unwritten: one under a condition or a loop of unknown trips, a loop left
    early around one, columns that do not cover ``[0, width)``; None when they cover it."""
    exits = [n for n in walk(plan.body) if n.type in ("return_statement", "goto_statement")
             and not _guard_exit(plan, n)]
    if exits:
        return (f"{pointer}: the exit at line {exits[0].start_point.row + 1} may leave its "
                "stores undone")
    columns: set[int] = set()
    for element, column in elements:
        line = element.start_point.row + 1
        up = element.parent
        while up is not None and up != plan.body:
            if (up.type in ("if_statement", "conditional_expression", "while_statement",
                            "do_statement", "switch_statement") and not _is_guard(plan, up)) \
                    or (up.type == "for_statement" and trip_count(up) is None):
                return (f"{pointer} (line {line}) is written conditionally: an output is "
                        "staged only where every thread past the guard writes all of its "
                        "record")
            if up.type == "for_statement" and any(
                    n.type in ("break_statement", "continue_statement", "goto_statement")
                    for n in walk(up)):
                return f"{pointer} (line {line}): a loop around its store is left early"
            up = up.parent
        values = _values(column)
        if values is None:
            return f"{pointer} (line {line}): the columns it writes are not enumerable"
        columns |= values
    if columns != set(range(width)):
        missing = sorted(set(range(width)) - columns)
        return f"{pointer}: its stores leave columns {missing} of the {width} unwritten"
    return None


def _values(column: list[tuple[int, Node]]) -> set[int] | None:
    """Every value the signed terms ``column`` take over their loops' counters."""
    if not column:
        return {0}
    counters = _counters(column[0][1])
    names = sorted(counters)
    combos = 1
    for n in names:
        combos *= counters[n][1] - counters[n][0] + 1
    if combos > _MAX_COMBINATIONS:
        return None
    out: set[int] = set()
    for point in itertools.product(*(range(counters[n][0], counters[n][1] + 1) for n in names)):
        fixed = {n: (v, v) for n, v in zip(names, point, strict=True)}
        total = 0
        for sign, term in column:
            span = interval(term, fixed)
            if span is None or span[0] != span[1]:
                return None
            total += sign * span[0]
        out.add(total)
    return out


def _exit_left(plan: Plan) -> str | None:
    """An exit the body still takes before its end (a ``return`` in its rendering so far):
    the stores' barrier at the end would not see that thread."""
    rendered = plan.rw.render(plan.body.start_byte, plan.body.end_byte)
    rendered = re.sub(r"//[^\n]*|/\*.*?\*/", "", rendered, flags=re.DOTALL)
    if re.search(r"\breturn\b", rendered):
        return ("a return is left in the body (no items lifted to make the guard a flag), "
                "which the stores' barrier at its end would not see")
    return None


def _guard_exit(plan: Plan, exit_: Node) -> bool:
    """``exit_`` is the guard's own ``return`` (``if (b >= n) return;``)."""
    up = exit_.parent
    if up is not None and up.type == "compound_statement" and up.named_child_count == 1:
        up = up.parent
    return up is not None and exit_.type == "return_statement" and _is_guard(plan, up)


def _is_guard(plan: Plan, node: Node) -> bool:
    """``node`` is the guard on the index at the body's top level."""
    if node.type != "if_statement" or node.parent != plan.body:
        return False
    found = _index_and_bound(plan)
    cond = node.child_by_field_name("condition")
    if cond is not None and cond.type == "condition_clause" and cond.named_child_count == 1:
        cond = cond.named_children[0]
    parts = binary(cond) if cond is not None else None
    return not isinstance(found, str) and parts is not None and \
        text(strip(parts[0])) == found[0] and text(parts[2]) == found[1]


def _element_type(function: Node, pointer: str) -> str:
    for p in walk(function):
        if p.type == "parameter_declaration" and \
                declared_name(p)[0] == pointer:
            kind = p.child_by_field_name("type")
            return text(kind).replace("const", "").strip()
    return ""


def _emit(plan: Plan, staged: list[Staged], index: str, bound: str, records: str) -> None:
    inputs = [s for s in staged if not s.output]
    outputs = [s for s in staged if s.output]
    lines = ["\n#if STAGE  // the block's records through shared memory (coalesced copies)",
             f"  const size_t wb_first = (size_t)blockIdx.x * ({records});"]
    buffers = _buffers(plan, staged)
    for s in staged:
        if buffers[s.pointer] == s.pointer:
            lines.append(f"  __shared__ {s.ctype} wb_st_{s.pointer}[{records}][{_row(s)}];")
    for s in inputs:
        lines += _copy(s, records, bound, f"wb_st_{s.pointer}[wb_f / {s.width}]"
                       f"[wb_f % {s.width}] = {s.pointer}[wb_g];")
    if inputs:
        lines.append("  __syncthreads();")
    lines.append("#endif")
    plan.rw.insert(plan.body.start_byte + 1, "\n".join(lines))
    if outputs:
        tail = ["#if STAGE  // the block's output records, stored coalesced", "  __syncthreads();"]
        for s in outputs:
            tail += _copy(s, records, bound, f"{s.pointer}[wb_g] = wb_st_{buffers[s.pointer]}"
                          f"[wb_f / {s.width}][wb_f % {s.width}];")
        plan.rw.insert(plan.body.end_byte - 1, "\n".join(tail) + "\n#endif\n")
    for s in staged:
        for r in s.reads:
            _rewrite(plan, s, r, index, buffers[s.pointer])
    plan.helper("#if STAGE\n#define WB_RECORD(st, direct, b) (&st[(b) - wb_first][0])\n"
                "#define WB_RECORD_AT(st, direct, b, r, i) (st[(b) - wb_first][(i) - (r) * (b)])\n"
                "#else\n"
                "#define WB_RECORD(st, direct, b) (direct)\n"
                "#define WB_RECORD_AT(st, direct, b, r, i) (direct)\n#endif")
    per = " + ".join(str(_row(s) * _C_BYTES[s.ctype]) for s in staged
                     if buffers[s.pointer] == s.pointer)
    shared = [f"{p} in {b}'s rows" for p, b in buffers.items() if p != b]
    names = ", ".join(f"{s.pointer}: {s.width}" for s in staged)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: each block's per-thread records ({names} "
                          "elements) moved through shared memory with coalesced block-stride "
                          "copies; 0: each thread reads and writes its own record, as written"},
                   f"{plan.kernel.line}: {NAME}")
    plan.constrain(f"{NAME} == 0 or ({records}) * ({per}) <= {STATIC_SMEM}")
    plan.note(NAME, True, f"{len(inputs)} input(s) and {len(outputs)} output(s) accessed as "
              "per-thread records ("
              f"{', '.join(f'{s.pointer}[{index} * {s.width} + c]' for s in staged)}) staged "
              f"through shared memory, {records} records a block"
              + (f" ({', '.join(shared)}: its thread reads its input row before it writes "
                 "the output's)" if shared else ""))


def _buffers(plan: Plan, staged: list[Staged]) -> dict[str, str]:
    """Each staged pointer -> the pointer whose rows it uses: an output takes an input's
    rows (the expert's one buffer) where they hold the same type and width and every access
    of the input comes before the output's first in the body, no loop around both (each
    thread reads its own row whole before it writes it; the rows are the thread's alone)."""
    out = {s.pointer: s.pointer for s in staged}
    taken: set[str] = set()
    for o in (s for s in staged if s.output):
        for i in (s for s in staged if not s.output and s.pointer not in taken):
            if (i.ctype, i.width) == (o.ctype, o.width) and _before(plan, i, o):
                out[o.pointer] = i.pointer
                taken.add(i.pointer)
                break
    return out


def _before(plan: Plan, first: Staged, then: Staged) -> bool:
    """Every access of ``first`` ends before ``then``'s first starts, no loop around both."""
    a = [n for r in first.reads for n in (r.node,)] + list(first.elements)
    b = [n for r in then.reads for n in (r.node,)] + list(then.elements)
    if not a or not b or max(n.end_byte for n in a) > min(n.start_byte for n in b):
        return False
    loops = ("for_statement", "while_statement", "do_statement")
    return not any(up.type in loops and any(inside(n, up) for n in b)
                   for n in a for up in _ancestors(n, plan.body))


def _ancestors(node: Node, top: Node) -> list[Node]:
    out = []
    up = node.parent
    while up is not None and up != top:
        out.append(up)
        up = up.parent
    return out


def _row(s: Staged) -> int:
    """Elements of a staged row: R, padded to odd so a column's accesses fall in distinct
    banks."""
    return s.width + (1 if s.width % 2 == 0 else 0)


def _copy(s: Staged, records: str, bound: str, move: str) -> list[str]:
    """A block-stride loop over the block's records' elements, inside the n records."""
    return [f"  for (int wb_f = threadIdx.x; wb_f < ({records}) * {s.width}; "
            "wb_f += blockDim.x) {",
            f"    const size_t wb_g = wb_first * {s.width} + wb_f;",
            f"    if (wb_g < (size_t)({bound}) * {s.width}) {move}",
            "  }"]


def _rewrite(plan: Plan, s: Staged, read: Read, index: str, buffer: str) -> None:
    """Wrap ``read`` in the macro that reads the staged copy under STAGE: text inserted
    around it, so that the edits inside it (an item's renamed index) render in both."""
    node, sub = read.node, read.subscript
    idx = next(n for n in walk(node) if n.type == "identifier" and text(n) == index)
    at = "" if sub is None else "_AT"
    rendering: list[bool] = []  # the closing text renders the index, which it may end

    def closing(rw: Rewriter) -> str:
        if rendering:
            return ""
        rendering.append(True)
        try:
            return f", {rw.text(idx)}" + ("" if sub is None else f", {s.width}, "
                                          f"{rw.render(sub.start_byte, sub.end_byte)}") + ")"
        finally:
            rendering.clear()

    opening = f"WB_RECORD{at}(wb_st_{buffer}, "
    first = node
    while first.child_count:
        first = first.children[0]
    if first.type == "identifier" and text(first) == s.pointer:
        # a statement rewritten as a whole from this very byte (an item loop around it)
        # renders the pointer's edit inside it, where an insert here would render twice
        plan.rw.replace(first, opening + s.pointer)
    else:
        plan.rw.insert(node.start_byte, opening)
    plan.rw.replace_span(node.end_byte, node.end_byte, make=closing)
