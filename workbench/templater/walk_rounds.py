"""TILE: a walk every thread of the block reads at the same index, staged in rounds.

A pairwise kernel (``for (int j = 0; j < m; ++j) { float4 c = charges[j]; ... }``, one
output a thread) reads the same element of the walked array in every thread of the block at
once, straight from global memory: each thread waits on the load, and the block loads the
array once per thread. The transform walks it in rounds of ``TILE`` elements: each round the
block syncs (every thread is done with the previous round), fills ``__shared__ wb_tile_P``
with the round's ``min(TILE, m - base)`` elements by a block-stride copy and syncs again;
then the walk as written runs over the round (``j`` from ``base`` to ``base + count``,
``UNROLL`` on it), reading ``wb_tile_P[j - base]`` in place of ``P[j]``. The walk's order and
arithmetic are unchanged (bit for bit). ``TILE = 0`` (the default) is one round of all ``m``
elements with no fill, reading ``P`` as written; every ``TILE > 0`` test is of a constant.

Legal only where the analysis shows (else a note with the line): a 1-D block
(``BLOCK_THREADS``); ITEMS_PER_THREAD interleaves the thread's items in the walk
(:func:`.ilp.interleaves`; not a wrap, whose ended items skip the rest), so the guard's
``return`` (or a closing ``if (t < n) { .. }``) is a live flag, every thread reaches the walk
(dead threads fill and sync, their items skip the work; the fill and barriers are the
thread's, shared by its items) and every call in the walk is pure (no ``return`` before the
thread's index); a top-level ``for (int j = 0; j < m; ++j | j++ | j += 1)`` after the index,
``m`` a scalar kernel parameter never assigned, ``j`` not written, the body (a block, or one
statement with no braces: ``for (..) acc += term(p, q[j]);``) with no jump and no barrier, warp intrinsic or atomic (the author's ``#pragma`` before it stays on it);
every read of a walked pointer at ``j`` is ``P[j]``, ``P[C * j + c]`` or ``P[j * C + c]``
(integer literals ``0 <= c < C``, one ``C`` a pointer, ``c = C - 1`` read, so the fill reads
no element the walk does not), ``P`` a parameter or a local set once before the walk from
parameters only (the same in every thread), written nowhere; the walk writes no memory; no
shared memory of the kernel's own, and other transforms' limits of a form the tile's bytes
join. The barriers sit in the round loop, which every thread runs the same number of times:
ITEMS' all-live copy of a loop (:meth:`.ilp._Render.splits`) is not made for a loop holding a
barrier, and the walk inside the round is split here instead, the barriers outside it.
"""

from __future__ import annotations

from functools import partial

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    calls,
    declared_name,
    int_value,
    line,
    strip,
    subscript_index,
    text,
    walk,
)
from workbench.templater.const_via import STATIC_SMEM, limits_beside
from workbench.templater.ilp import LIVE, gave_items, interleaves, split_live
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import Illegal

NAME = "TILE"
#: Bytes of the element types a walked pointer may have.
_BYTES = {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "double": 8, "float2": 8,
          "int2": 8, "float4": 16, "int4": 16, "double2": 16}
_SYNC_CALLS = ("__syncthreads", "__syncwarp", "__shfl", "atomic", "__ballot", "__any", "__all",
               "__reduce", "__match", "__activemask")
_JUMPS = ("return_statement", "break_statement", "continue_statement", "goto_statement")
_GEOMETRY = ("threadIdx", "blockIdx")
#: Where the walk's rendering starts and ends inside a round (taken out by _split_walk).
_BEGIN, _END = "/*wb_walk{*/", "/*}wb_walk*/"


class _Walked:
    """A pointer the walk reads at ``C * j + c``: its stride ``C``, element type, reads."""

    def __init__(self, stride: int, element: str) -> None:
        self.stride, self.element = stride, element
        self.reads: list[Node] = []
        self.offsets: set[int] = set()

    @property
    def bytes(self) -> str:
        return f"{_BYTES[self.element]} * {self.stride}"


def apply_walk_rounds(plan: Plan) -> None:
    """Apply TILE where legal; otherwise note why not (only for a kernel with a candidate:
    a top-level counted walk after ITEMS_PER_THREAD applied)."""
    if plan.block != ["BLOCK_THREADS"] or not gave_items(plan) or NAME in plan.params:
        return
    stmts = _top_level(plan)
    loop = next((s for s in stmts if s.type == "for_statement"), None)
    if loop is None:
        return
    if not interleaves(plan):
        plan.note(NAME, False, "the items run the work one after another (a wrap), where an "
                  "item that ended skips the rest: it would skip the rounds' barriers", loop)
        return
    try:
        _after_index(plan, stmts, loop)
        var, bound = _counted(plan, loop)
        walked = _walked(plan, loop, var)
        budget = _budget(plan, " + ".join(w.bytes for w in walked.values()))
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node or loop)
        return
    _rewrite(plan, loop, var, bound, walked)
    for limit in budget:
        plan.constrain(limit)


def _top_level(plan: Plan) -> list[Node]:
    """The kernel's top-level statements, a closing ``if (C) { rest }`` guard unwrapped (no
    else, ``C`` reading the thread's index ``blockIdx.x * B + threadIdx.x``): ITEMS renders
    ``rest`` at the top level, under live flags, as it does after ``if (!C) return;``."""
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    last = stmts[-1] if stmts else None
    cond = last.child_by_field_name("condition") if last is not None and \
        last.type == "if_statement" else None
    body = last.child_by_field_name("consequence") if last is not None and \
        cond is not None else None
    if last is None or cond is None or body is None or body.type != "compound_statement" or \
            last.child_by_field_name("alternative") is not None or \
            not any(_thread_index(plan, n) for n in walk(cond)):
        return stmts
    return [*stmts[:-1], *(c for c in body.named_children if c.type != "comment")]


def _thread_index(plan: Plan, node: Node) -> bool:
    """``node`` names a local set once to an expression of blockIdx.x and threadIdx.x."""
    d = plan.facts.defs.get(text(node)) if node.type == "identifier" else None
    if d is None or d.assigned or d.value is None:
        return False
    found = {(b, builtin(n, b)) for n in walk(d.value) for b in _GEOMETRY}
    return ("blockIdx", "x") in found and ("threadIdx", "x") in found


def _after_index(plan: Plan, stmts: list[Node], loop: Node) -> None:
    """The walk comes after the thread's index: in ITEMS' region, where its returns are live
    flags (the interleaved items refuse a ``return`` before the index)."""
    index = next((s for s in stmts if s.type == "declaration" and
                  any(_thread_index(plan, n) for n in walk(s) if n.type == "identifier")),
                 None)
    if index is None or index.start_byte > loop.start_byte:
        raise Illegal("the walk does not come after the thread's index "
                      "`blockIdx.x * B + threadIdx.x`", loop)


def _counted(plan: Plan, loop: Node) -> tuple[str, Node]:
    """``(j, m)`` of ``for (int j = 0; j < m; ++j)``, ``m`` the same for every thread."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None or init.type != "declaration":
        raise Illegal("the walk is not `for (int j = 0; j < m; ++j)`", loop)
    var, _d, start = declared_name(init)
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    unit = (update.type == "update_expression" and "++" in text(update)
            and text(update.child_by_field_name("argument")) == var) or (
        update.type == "assignment_expression" and text(update.child_by_field_name("left")) == var
        and text(update.child_by_field_name("operator")) == "+="
        and int_value(update.child_by_field_name("right")) == 1)
    if start is None or int_value(start) != 0 or cond.type != "binary_expression" or \
            text(cond.child_by_field_name("operator")) != "<" or left is None or \
            text(left) != var or right is None or not unit:
        raise Illegal("the walk is not `for (int j = 0; j < m; ++j)` (from 0 by one)", loop)
    bound = strip(right)
    scalar = bound.type == "identifier" and any(
        p.name == text(bound) and p.is_scalar for p in plan.kernel.params) and \
        text(bound) not in plan.facts.defs
    if not scalar:
        raise Illegal(f"the walk's bound `{text(bound)}` is not a scalar parameter (the same "
                      "in every thread; a walk of a fixed count reads a table the cache "
                      "holds)", bound)
    # the rounds count in int (min(TILE, m - base)): another type's bound or counter is not
    # one they count in
    types = {_int_type(text(init.child_by_field_name("type"))),
             *(_int_type(p.type_text) for p in plan.kernel.params if p.name == text(bound))}
    if types != {"int"}:
        raise Illegal(f"the walk counts in `{' and '.join(sorted(types))}`, not `int` (the "
                      "rounds count in int)", loop)
    assigned = [n for n in walk(plan.body)
                if n.type in ("assignment_expression", "update_expression") and
                text(n.child_by_field_name("left") or n.child_by_field_name("argument"))
                == text(bound)]
    if assigned:
        raise Illegal(f"the walk's bound `{text(bound)}` is assigned", assigned[0])
    before = loop.prev_sibling
    if before is not None and before.type == "comment" and \
            text(before).lstrip().startswith("#pragma"):
        raise Illegal(f"the walk has the author's `{text(before).strip()[:40]}` where the "
                      "rounds cannot go before it", before)
    body = loop.child_by_field_name("body")
    if body is None or body.type in ("declaration", "empty_statement") or \
            body.type.endswith("_declaration"):
        raise Illegal("the walk's body is not a statement that computes (a block or one "
                      "statement)", loop)
    for n in walk(body):
        if n.type in _JUMPS:
            raise Illegal(f"`{text(n)[:40]}` leaves the walk (its trips would differ by "
                          "thread)", n)
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if target is not None and text(target) == var:
                raise Illegal(f"the walk writes its counter `{var}`", n)
            if target is not None and target.type != "identifier":
                raise Illegal(f"`{text(n)[:40]}` writes memory in the walk", n)
    used = sorted(c for c in calls(body) if c.startswith(_SYNC_CALLS))
    if used:
        raise Illegal(f"the walk calls {used[0]} (a barrier, shuffle or atomic)", body)
    return var, bound


def _int_type(written: str) -> str:
    """``const int`` -> ``int``: the type less its qualifiers."""
    return " ".join(w for w in written.split() if w not in ("const", "volatile"))


def _budget(plan: Plan, elements: str) -> list[str]:
    """The static shared memory limits with this tile's bytes (``TILE * (elements)``) added:
    its own, and each other transform's ``[K == 0 or ]E <= 49152`` (their arrays and the
    tile share the block's 48 KiB). Shared memory the kernel declares itself, or a limit of
    another form, is refused."""
    own = next((d for d in plan.facts.defs.values() if d.is_shared), None)
    if own is not None:
        raise Illegal(f"the kernel has shared memory of its own (`{own.name}`), whose bytes "
                      "no limit counts", own.decl)
    mine = f"{NAME} * ({elements})"
    return [f"{mine} <= {STATIC_SMEM}", *limits_beside(plan, NAME, mine, "tile's")]


def _stride(index: Node, var: str) -> tuple[int, int] | None:
    """``(C, c)`` of ``j``, ``C * j``, ``j * C``, ``C * j + c``, ``j * C + c``; else None."""
    index = strip(index)
    if index.type == "identifier" and text(index) == var:
        return 1, 0
    if index.type != "binary_expression":
        return None
    op = text(index.child_by_field_name("operator"))
    left, right = index.child_by_field_name("left"), index.child_by_field_name("right")
    assert left is not None and right is not None
    left, right = strip(left), strip(right)
    if op == "*":
        for a, b in ((left, right), (right, left)):
            if a.type == "identifier" and text(a) == var and (k := int_value(b)) is not None \
                    and k > 0:
                return k, 0
        return None
    if op == "+" and (c := int_value(right)) is not None:
        inner = _stride(left, var)
        if inner is not None and inner[1] == 0 and 0 <= c < inner[0]:
            return inner[0], c
    return None


def _walked(plan: Plan, loop: Node, var: str) -> dict[str, _Walked]:
    """Walked pointer -> its stride, element type and reads in the walk."""
    body = loop.child_by_field_name("body")
    assert body is not None
    found: dict[str, _Walked] = {}
    for n in walk(body):
        if n.type != "subscript_expression":
            continue
        arr, index = n.child_by_field_name("argument"), subscript_index(n)
        if arr is None or index is None or not any(x.type == "identifier" and text(x) == var
                                                   for x in walk(index)):
            continue
        name = text(arr)
        stride = _stride(index, var)
        if arr.type != "identifier" or stride is None:
            raise Illegal(f"`{text(n)[:40]}` reads the walk at an index other than "
                          f"`{var}` (C * {var} + c)", n)
        if name not in found:
            _uniform(plan, name, loop, n)
            found[name] = _Walked(stride[0], _element(plan, name, n))
        if found[name].stride != stride[0]:
            raise Illegal(f"`{name}` is read at two strides of `{var}`", n)
        found[name].reads.append(n)
        found[name].offsets.add(stride[1])
    if not found:
        raise Illegal(f"the walk reads no pointer at `{var}`", loop)
    for name, w in found.items():
        if w.stride - 1 not in w.offsets:
            raise Illegal(f"the walk reads `{name}` at `{w.stride} * {var} + c` but never at "
                          f"c = {w.stride - 1} (the round's fill would read past what the "
                          "walk reads)", w.reads[0])
        for n in walk(plan.body):
            if n.type in ("assignment_expression", "update_expression"):
                target = strip(n.child_by_field_name("left") or
                               n.child_by_field_name("argument") or n)
                if any(x.type == "identifier" and text(x) == name for x in walk(target)):
                    raise Illegal(f"the kernel writes through or to `{name}`", n)
    return found


def _uniform(plan: Plan, name: str, loop: Node, node: Node) -> None:
    """``name`` is the same pointer in every thread: a pointer parameter, or a local set once
    before the walk from such pointers, scalar parameters and locals of the same kind."""
    if any(p.name == name and p.is_pointer for p in plan.kernel.params) and \
            name not in plan.facts.defs:
        return
    d = plan.facts.defs.get(name)
    if d is None or d.value is None or d.assigned or d.decl.start_byte > loop.start_byte:
        raise Illegal(f"`{name}` is not a pointer parameter or a local set once before the "
                      "walk", node)
    try:
        for n in walk(d.value):
            if n.type == "identifier" and text(n) in plan.facts.defs:
                _uniform(plan, text(n), loop, node)
            elif any(builtin(n, b) is not None for b in _GEOMETRY):
                raise Illegal("")
    except Illegal as exc:
        raise Illegal(f"`{name}` differs by thread (`{text(d.value)[:40]}`): threads read "
                      "different elements at one index", node) from exc


def _element(plan: Plan, name: str, node: Node) -> str:
    """The element type of the pointer ``name`` (a parameter or a local), one of _BYTES."""
    d = plan.facts.defs.get(name)
    if d is not None:
        typ = d.decl.child_by_field_name("type")
        written = text(typ) if d.is_pointer and typ is not None else ""
    else:
        written = next((p.type_text for p in plan.kernel.params
                        if p.name == name and p.is_pointer), "")
    element = " ".join(w for w in written.replace("*", " ").split()
                       if w not in ("const", "__restrict__", "volatile"))
    if element not in _BYTES:
        raise Illegal(f"`{name}`'s element type `{written}` is not one this transform "
                      "stages", node)
    return element


def _rewrite(plan: Plan, loop: Node, var: str, bound: Node,
             walked: dict[str, _Walked]) -> None:
    """The round loop around the walk, the walk over the round, its reads from the tiles."""
    _before_walk(plan, loop, _round_header(text(bound), walked))
    # the walk's end: where the body is one statement it ends where the loop does, and
    # ITEMS' rendering of the loop shows an insertion there twice (after the statement, in its
    # item loop, and after the loop); the last is the loop's end (:func:`_split_walk`)
    plan.rw.insert(loop.end_byte, _END)
    kernel = plan.body
    plan.rw.replace_span(kernel.start_byte, kernel.end_byte,
                         make=lambda rw: _split_walk(rw.render(kernel.start_byte,
                                                              kernel.end_byte)))
    init = loop.child_by_field_name("initializer")
    assert init is not None
    _var, _d, start = declared_name(init)
    assert start is not None
    plan.rw.replace(start, "wb_base")
    plan.rw.replace(bound, "wb_base + wb_count")
    for name, w in walked.items():
        for r in w.reads:
            plan.rw.replace_span(r.start_byte, r.end_byte, make=partial(_read, read=r, name=name,
                                                                        stride=w.stride))
    plan.helper(f"constexpr int wb_tile = {NAME} > 0 ? {NAME} : 1;  // a round's elements")
    plan.add_param(NAME, {"kind": "choice", "values": [0, 128, 256, 512, 1024], "default": 0,
                          "description": f"elements of the walk over `{var}` staged in shared "
                                         "memory a round by the whole block (0: read from "
                                         "global memory, as written)"},
                   f"{line(loop)}: {text(loop).splitlines()[0][:60]}")
    plan.note(NAME, True, f"the walk over `{var}` reads {', '.join(walked)} at the same index "
              f"in every thread: staged in rounds of {NAME} elements in shared memory, the "
              "walk as written over each round (same order, bit for bit)", loop)


def _round_header(m: str, walked: dict[str, _Walked]) -> str:
    """The tiles, the round loop's header and the round's fill, up to the walk."""
    fills = "".join(
        f"      for (int wb_k = threadIdx.x; wb_k < {_times('wb_count', w.stride)}; "
        f"wb_k += blockDim.x)\n        wb_tile_{name}[wb_k] = "
        f"{name}[{_times('wb_base', w.stride)} + wb_k];\n" for name, w in walked.items())
    tiles = "".join(f"__shared__ {w.element} wb_tile_{name}[{_times('wb_tile', w.stride)}];  "
                    f"// the round's `{name}` ({NAME} > 0)\n  " for name, w in walked.items())
    return (f"{tiles}for (int wb_base = 0; wb_base < ({NAME} > 0 ? {m} : 1); "
            f"wb_base += wb_tile) {{  // {NAME} 0: one round, the walk as written\n"
            f"    const int wb_count = {NAME} > 0 ? min({NAME}, {m} - wb_base) : {m};\n"
            f"    if ({NAME} > 0) {{\n"
            "      __syncthreads();  // every thread is done with the previous round\n"
            f"{fills}      __syncthreads();  // the round is staged\n    }}\n{_BEGIN}")


def _before_walk(plan: Plan, loop: Node, header: str) -> None:
    """``header`` before the walk and before what belongs to it: the author's ``#pragma``
    line (a lazy edit over its span, so UNROLL's edit of it shows), else the insertions
    already at the loop (UNROLL's pragma), moved after ``header``."""
    pragma = loop.prev_sibling
    if pragma is not None and pragma.type == "preproc_call" and \
            text(pragma).startswith("#pragma"):
        plan.rw.replace_span(pragma.start_byte, pragma.end_byte,
                             make=lambda rw: header + rw.text(pragma))
        return
    lead = [e for e in plan.rw.edits if e.start == e.end == loop.start_byte]
    plan.rw.discard(lead)
    plan.rw.insert(loop.start_byte, header)
    for e in lead:
        plan.rw.replace_span(e.start, e.end, e.text, e.make)


def _split_walk(kernel: str) -> str:
    """The kernel's body with the walk inside the round (between the markers) split on the
    items' live flags (:func:`.ilp.split_live`) where it tests them: the barriers stay
    outside the split, in the round, and the all-live copy has no test of a flag."""
    head, rest = kernel.split(_BEGIN)
    walk_text, _end, tail = rest.rpartition(_END)
    walk_text, tail = walk_text.replace(_END, ""), "\n  }  // the round" + tail
    if f"{LIVE}[" not in walk_text:
        return head + walk_text + tail
    return head + "\n" + split_live(walk_text.strip("\n"), "    ") + tail


def _times(name: str, stride: int) -> str:
    return name if stride == 1 else f"{name} * {stride}"


def _read(rw: Rewriter, read: Node, name: str, stride: int) -> str:
    """``P[C * j + c]`` -> the round's tile at ``C * (j - base) + c`` where TILE > 0."""
    index = rw.text(subscript_index(read))
    at = f"{index} - wb_base" if stride == 1 else f"({index}) - wb_base * {stride}"
    return f"({NAME} > 0 ? wb_tile_{name}[{at}] : {rw.render(read.start_byte, read.end_byte)})"
