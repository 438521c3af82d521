"""STAGE: a block's per-thread records loaded through shared memory (issue 28).

A thread that owns a contiguous record of R elements of an input (``A[b * R + c]``, ``c <
R``; a 4 x 4 matrix is R = 16) reads it with loads R elements apart across a warp: each
load touches R times the sectors it needs. STAGE 1 copies the block's records into
``__shared__ T wb_st_A[records][R + pad]`` with block-stride (coalesced) loads at the top
of the body, before any exit (every thread reaches the barrier), then each read becomes
``wb_st_A[b - first][c]``; the row gets one element of padding where R is even so that a
warp's reads of one column fall in distinct banks. STAGE 0 is the kernel as written.

Legal where the analysis shows: a 1-D index ``b = blockIdx.x * B + threadIdx.x`` (never
assigned) bounded by a top-level guard ``if (b >= n) return;`` or ``if (b < n) {..}``; the
input pointer read only at ``P[R * b + c]`` or through a local ``q = P + R * b`` (never
reassigned) as ``q[c]``, R a compile-time constant and every ``c`` inside ``[0, R)`` for
each value the loops around it give (:func:`.bounds.interval`); the pointer never written;
the launch ``grid = ceil_div(n, X)`` so that block ``k`` owns records ``[k X, k X + X)``
(X is the block size times the items a thread takes, :mod:`.ilp`'s mapping). Outputs are
not staged (stores through shared memory need every exit turned into a flag first); an
output written under a condition is reported as such. Kernels that already share memory
or synchronise are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    declared_name,
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
    reads: tuple[Read, ...]


def apply_record_stage(plan: Plan) -> bool:
    """Lift STAGE where every read-only pointer is read as per-thread records (notes the
    reason otherwise); True when it applied."""
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
        got = _record_reads(plan, param.name, index)
        if isinstance(got, str):
            plan.note(NAME, False, got)
        elif got is not None:
            staged.append(got)
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


def _record_reads(plan: Plan, pointer: str, index: str) -> Staged | str | None:
    """The reads of ``pointer`` when every use is one of its thread's record; a reason
    when one is not; None when the pointer is written (an output)."""
    uses = plan.uses(pointer)
    written = [u for u in uses if _written(plan, u)]
    if written:
        return _output_reason(plan, pointer, written)
    reads: list[Read] = []
    width: int | None = None
    for use in uses:
        got = _record_read(plan, use, index)
        if isinstance(got, str):
            return f"{pointer} (line {use.start_point.row + 1}): {got}"
        read, r = got
        if width is not None and r != width:
            return f"{pointer}: records of {width} and of {r} elements"
        width = r
        reads.append(read)
    if width is None:
        return None
    param = plan.source.function_node(plan.kernel)
    ctype = _element_type(param, pointer)
    if ctype not in _C_BYTES:
        return f"{pointer}: element type {ctype!r} has no known size"
    return Staged(pointer, ctype, width, tuple(reads))


def _record_read(plan: Plan, use: Node, index: str) -> tuple[Read, int] | str:
    up = use.parent
    while up is not None and up.type in ("parenthesized_expression", "cast_expression"):
        up = up.parent
    if up is not None and up.type == "subscript_expression":
        sub = up.child_by_field_name("indices") or up.child_by_field_name("index")
        inner = sub.named_children[0] if sub is not None and sub.type == "subscript_argument_list" \
            else sub
        if inner is None:
            return "a subscript it cannot read"
        return _split(plan, inner, index, up, column_node=True)
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
        for q in plan.uses(name):
            if declarator is not None and q.start_byte == declarator.start_byte:
                continue  # its declaration
            if q.parent is None or q.parent.type != "subscript_expression" or _written(plan, q):
                return f"the local pointer {name} is used other than read as {name}[c] " \
                    f"(line {q.start_point.row + 1})"
            sub = q.parent.child_by_field_name("indices") or q.parent.child_by_field_name("index")
            column = sub.named_children[0] if sub is not None and \
                sub.type == "subscript_argument_list" else sub
            if column is None or not _in_record([(1, column)], got[1]):
                return f"{name}[{text(column)}] is not inside [0, {got[1]}) for every value"
        return got
    return f"`{text(up) if up is not None else text(use)}` is not a record read"


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
    return bool(column) and low >= 0 and high < width


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
            name, _d, _v = declared_name(parent.parent) if parent.parent else ("", None, None)
            return any(_written(plan, q) for q in plan.uses(name)) if name else False
        up = parent
    return False


def _output_reason(plan: Plan, pointer: str, written: list[Node]) -> str:
    for w in written:
        up = w.parent
        while up is not None and up != plan.body:
            if (up.type in ("if_statement", "conditional_expression", "while_statement",
                            "do_statement") and not _is_guard(plan, up)) or \
                    (up.type == "for_statement" and trip_count(up) is None):
                return (f"{pointer} (line {w.start_point.row + 1}) is written conditionally: "
                        "an output is staged only where every thread past the guard writes "
                        "all of its record")
            up = up.parent
    return (f"{pointer} is an output: stores are not staged (the loads are; a staged store "
            "needs every exit made a flag first)")


def _is_guard(plan: Plan, node: Node) -> bool:
    return node.type == "if_statement" and node.parent == plan.body


def _element_type(function: Node, pointer: str) -> str:
    for p in walk(function):
        if p.type == "parameter_declaration" and \
                declared_name(p)[0] == pointer:
            kind = p.child_by_field_name("type")
            return text(kind).replace("const", "").strip()
    return ""


def _emit(plan: Plan, staged: list[Staged], index: str, bound: str, records: str) -> None:
    bytes_total = []
    lines = ["\n#if STAGE  // the block's records through shared memory (coalesced loads)",
             f"  const size_t wb_first = (size_t)blockIdx.x * ({records});"]
    for s in staged:
        pad = 1 if s.width % 2 == 0 else 0
        row = s.width + pad
        bytes_total.append(f"{row * _C_BYTES[s.ctype]}")
        lines += [f"  __shared__ {s.ctype} wb_st_{s.pointer}[{records}][{row}];",
                  f"  for (int wb_f = threadIdx.x; wb_f < ({records}) * {s.width}; "
                  "wb_f += blockDim.x) {",
                  f"    const size_t wb_g = wb_first * {s.width} + wb_f;",
                  f"    if (wb_g < (size_t)({bound}) * {s.width}) "
                  f"wb_st_{s.pointer}[wb_f / {s.width}][wb_f % {s.width}] = {s.pointer}[wb_g];",
                  "  }"]
        for r in s.reads:
            _rewrite(plan, s, r, index)
    lines += ["  __syncthreads();", "#endif"]
    plan.rw.insert(plan.body.start_byte + 1, "\n".join(lines))
    plan.helper("#if STAGE\n#define WB_RECORD(st, direct, b) (&st[(b) - wb_first][0])\n"
                "#define WB_RECORD_AT(st, direct, b, r, i) (st[(b) - wb_first][(i) - (r) * (b)])\n"
                "#else\n"
                "#define WB_RECORD(st, direct, b) (direct)\n"
                "#define WB_RECORD_AT(st, direct, b, r, i) (direct)\n#endif")
    per = " + ".join(bytes_total)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: each block's per-thread records "
                          f"({', '.join(f'{s.pointer}: {s.width}' for s in staged)} elements) "
                          "loaded through shared memory with coalesced block-stride copies; "
                          "0: each thread reads its own record, as written"},
                   f"{plan.kernel.line}: {NAME}")
    plan.constrain(f"{NAME} == 0 or ({records}) * ({per}) <= {STATIC_SMEM}")
    plan.note(NAME, True, f"{len(staged)} input(s) read as per-thread records "
              f"({', '.join(f'{s.pointer}[{index} * {s.width} + c]' for s in staged)}) staged "
              f"through shared memory, {records} records a block (outputs are stored as "
              "written)")


def _rewrite(plan: Plan, s: Staged, read: Read, index: str) -> None:
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

    plan.rw.insert(node.start_byte, f"WB_RECORD{at}(wb_st_{s.pointer}, ")
    plan.rw.replace_span(node.end_byte, node.end_byte, make=closing)
