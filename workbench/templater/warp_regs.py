"""The row in registers: a warp-per-item kernel that reads its row twice keeps it (REG_ROW).

Recognised on the parse after :mod:`.warp` has found the lane loops
``for (c = lane; c < n; c += 32)``: a row pointer ``P`` (a kernel pointer or a fixed local
offset of one) read as ``P[c]`` (the loop variable itself) in a lane loop and again, as
``P[c]``, in one or more later lane loops with the same bound ``n``: a reduction pass and an
elementwise pass (L2 norm, RMSNorm, int8 quant), or max, exp-sum and write passes (softmax).

The knob is the row the registers hold, ``REG_ROW`` elements (0: none, the kernel as
written); the steps of ``VEC`` elements each lane keeps follow from it, ``WB_REG_STEPS =
ceil(REG_ROW / (LANES * VEC))`` (the layout of the lane loops' vector path: step ``s`` holds
elements ``(lane + s * LANES) * VEC ..``), so keeping the row is one move from any lanes and
vector width (a step count is not: which count fits the row depends on both). The first
pass fills a register array; later passes read it instead of ``P`` when the row fits (``n
<= WB_REG_STEPS * LANES * VEC``, tested at run time per item), and run as written otherwise,
so a row of any length stays correct. The cached passes are fully unrolled over the steps
(compile-time indices: registers, not local memory) and run the loop body as written once
per element with ``P[c]`` replaced by its register; each step past the row is skipped by
an ``if`` (never a ``break``), and the first pass loads every step before its body uses
any, so all of a lane's loads are in flight at once (with a ``break`` after each step's
body, ptxas issued each load after the previous step's sum: one load in flight a warp,
row_l2norm's large shape 278.5 us against the expert's 222.3 us at the same config).

Legal only where nothing can change ``P``'s row between its first read and its last cached
read: no store between the first pass and the last cached pass except inside the last pass,
and each store there ``W[c]`` is to a pointer that is ``__restrict__`` with ``P``'s, or is
tested at run time to be exactly ``P``'s row (in place: each element read before it is
written, as written) or disjoint from it; besides, a one-element store between the passes
at the item's own place (a row's statistic, ``scale[row] = amax / 127`` or ``*(scale + row)
= ..``, a store through a pointer judged as a subscript is: in no loop, every
name of its place a parameter or a local the row's place is written with, none assigned)
is tested at run time before each later cached pass, which runs as written where the
stored element lies in the row. No ``break``, ``return`` or ``goto`` in the passes,
``c`` never assigned, ``P`` never written or read at another index in them, neither ``P``
nor a name its index reads assigned from the first pass to the last. Anything else
is refused with the reason and the line; a kernel with no row read twice is left alone.

Range and constraints by registers per thread: a kept element costs one register (two for
8-byte types), the working set of such kernels is about 32 registers, and a thread may hold
at most ``min(255, 65536 / threads per block)``. Row sizes go in steps of at most 1.5x (64,
96, 128, ... 8192); where the shape's row length is known only the smallest size that holds
it is kept (a smaller cache is never used and would time REG_ROW = 0 again; a larger one
holds registers it never fills), so for a shape the knob is in effect "keep the row or
not", with every lanes / vector width whose steps fit the register budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    added_once,
    binary,
    declared_name,
    identifiers,
    inside_loop,
    line,
    strip,
    terms,
    text,
    walk,
    write_target,
    writer,
)
from workbench.templater.lane_bound import lane_bound
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Edit, Rewriter
from workbench.templater.table_terms import assigned_in
from workbench.templater.vector import VEC_STRUCT, Illegal, stride_loops
from workbench.templater.vector_access import ldg_call

REG_ROW = "REG_ROW"
STEPS = "WB_REG_STEPS"  # the derived steps per lane (a macro of the rendered source)
# row sizes in steps of at most 1.5x: the smallest that holds a row is under 1.5x of it
ROW_VALUES = [0, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144,
              8192]
WORKING_REGS = 32  # registers a warp-row kernel needs besides its cached row (ptxas -v)
_EXITS = ("return_statement", "break_statement", "goto_statement")


@dataclass(frozen=True)
class Pass:
    """One lane loop of the row: its node, variable, element type of the variable, bound,
    body, the rendered lane start, and the reads ``P[c]`` it holds."""

    loop: Node
    var: str
    var_type: str
    bound: Node
    body: Node
    start: str
    reads: tuple[Node, ...]
    guards: tuple[Node, ...] = ()  # invariant conjuncts beside var < bound (.lane_bound)


@dataclass(frozen=True)
class RowCache:
    """What the cache rewrites: the row pointer, its element type, the passes (the first
    fills the array), the stores of the last pass to check at run time."""

    pointer: str
    elem: str
    passes: tuple[Pass, ...]
    checked: tuple[Node, ...]  # each store W[.. + c] of the last pass that may alias P
    # each one-element store between the passes (a row's statistic, ``scale[row] = ..``)
    # that may alias P: the cached passes after it run only where it is outside the row
    spots: tuple[Node, ...] = ()


def _root(plan: Plan, name: str) -> str | None:
    """The kernel pointer ``name`` is (or is a fixed offset of), else None."""
    if plan.pointer(name):
        return name
    d = plan.facts.defs.get(name)
    if d is None or d.assigned or not d.is_pointer or d.value is None:
        return None
    ptrs = [text(t) for _s, t in terms(d.value) if t.type == "identifier" and
            plan.pointer(text(t))]
    return ptrs[0] if len(ptrs) == 1 else None


def _subscripts(node: Node) -> list[Node]:
    """The element accesses under ``node``: ``P[E]``, and ``*(P + E)``, ``__ldg(&P[E])``
    and ``__ldg(P + E)`` whole (:func:`_spelled_element`)."""
    return [n for n in walk(node) if (n.type == "subscript_expression" and ldg_call(n) is None)
            or _spelled_element(n) is not None]


def _spelled_element(node: Node) -> tuple[Node, Node] | None:
    """(``P``, ``E``) of the element ``P[E]`` spelled ``*(P + E)``, ``__ldg(&P[E])`` or
    ``__ldg(P + E)`` with ``P`` a name (the lane loops' vector path reads them alike,
    :mod:`.vector_access`); None for any other node."""
    if node.type == "call_expression" and text(node.child_by_field_name("function")) == "__ldg":
        args = node.child_by_field_name("arguments")
        arg = strip(args.named_children[0]) if args is not None and \
            args.named_child_count == 1 else None
        if arg is not None and arg.type == "pointer_expression" and \
                text(arg.child_by_field_name("operator")) == "&":
            sub = strip(arg.child_by_field_name("argument"))  # type: ignore[arg-type]
            index = sub.child_by_field_name("indices")
            base = sub.child_by_field_name("argument")
            if sub.type == "subscript_expression" and base is not None and \
                    strip(base).type == "identifier" and index is not None and \
                    index.named_children:
                return strip(base), strip(index.named_children[0])
            return None
    elif node.type != "pointer_expression" or \
            text(node.child_by_field_name("operator")) != "*":
        return None
    else:
        arg = node.child_by_field_name("argument")
    parts = binary(strip(arg)) if arg is not None else None
    if parts is None or parts[1] != "+" or strip(parts[0]).type != "identifier":
        return None
    return strip(parts[0]), strip(parts[2])


def _index(sub: Node) -> Node | None:
    if (spelled := _spelled_element(sub)) is not None:
        return spelled[1]
    idx = sub.child_by_field_name("indices") or sub.child_by_field_name("index")
    inner = idx.named_children[0] if idx is not None and idx.named_children else idx
    return strip(inner) if inner is not None else None


def _key(sub: Node, var: str) -> str | None:
    """The index of ``sub`` with ``var`` as ``@`` (spaces dropped) when it is ``offset +
    var`` (``var`` once, a term of sign +), else None: the element a lane's step is at."""
    index = _index(sub)
    if index is None:
        return None
    hit = added_once(index, var)
    if hit is None:
        return None
    out = text(index)
    at = strip(hit).start_byte - index.start_byte
    out = out[:at] + "@" + out[at + len(var):]
    return "".join(out.split())


def _at(rw: Rewriter, sub: Node, var: str, value: str) -> str:
    """``&A[index]`` of the element ``sub`` with ``var`` replaced by ``value`` (and every
    other transform's edits inside the index)."""
    index = _index(sub)
    assert index is not None
    saved = rw.edits
    rw.edits = saved + [Edit(n.start_byte, n.end_byte, f"({value})") for n in walk(index)
                        if n.type == "identifier" and text(n) == var]
    try:
        if sub.type == "call_expression":  # __ldg(&P[E]) or __ldg(P + E): its argument
            args = sub.child_by_field_name("arguments")
            assert args is not None and args.named_children
            arg = args.named_children[0]
            return f"({rw.render(arg.start_byte, arg.end_byte)})"
        # the element's own span (an edit of the whole index would not be inside it)
        return f"&{rw.render(sub.start_byte, sub.end_byte)}"
    finally:
        rw.edits = saved


def _array(sub: Node) -> str:
    if (spelled := _spelled_element(sub)) is not None:
        return text(spelled[0])
    return text(strip(sub.child_by_field_name("argument")))  # type: ignore[arg-type]


def _pass(plan: Plan, loop: Node, start: str) -> Pass:
    init, body = loop.child_by_field_name("initializer"), loop.child_by_field_name("body")
    assert init is not None and body is not None
    var, _d, _v = declared_name(init)
    found = lane_bound(plan, loop)
    if found is None:
        raise Illegal(f"the lane loop `{text(loop).splitlines()[0][:60]}` is not bounded by "
                      f"`{var} < n`", loop)
    return Pass(loop, var, text(init.child_by_field_name("type")), found.bound, body,
                start, (), found.guards)


def find_row_cache(plan: Plan, loops: Sequence[Node], starts: Sequence[str]) -> RowCache | None:
    """The row cache of the kernel's lane loops; None when no row is read twice; raises
    Illegal when one is but caching it is not shown safe."""
    passes = [_pass(plan, lp, st) for lp, st in zip(loops, starts, strict=True)]
    pointer, first, key = None, None, None
    for k, p in enumerate(passes):
        streams = sorted({(_array(s), at) for s in _subscripts(p.body)
                          if (at := _key(s, p.var)) is not None and writer(s) is None})
        for name, at in streams:
            later = [q for q in passes[k + 1:] if _rereads(q, name, at)]
            if later and _root(plan, name) is not None:
                pointer, first, key = name, k, at
                break
        if pointer is not None:
            break
    if pointer is None or first is None or key is None:
        return None
    root = _root(plan, pointer)
    assert root is not None
    chosen = [passes[first], *(q for q in passes[first + 1:] if any(
        _array(s) == pointer and writer(s) is None for s in _subscripts(q.body)))]
    bound = text(chosen[0].bound)
    out: list[Pass] = []
    for p in chosen:
        parent = p.loop.parent
        if parent is None or parent.type != "compound_statement" or \
                parent != chosen[0].loop.parent:
            raise Illegal(f"the lane loops over {pointer} are not statements of one block "
                          "(the kept row must be declared where every pass sees it)", p.loop)
        if text(p.bound) != bound:
            raise Illegal(f"the lane loops over {pointer} have different bounds (`{bound}`, "
                          f"`{text(p.bound)}`)", p.loop)
        if p.guards:
            raise Illegal(f"the lane loop over {pointer} runs under the guard "
                          f"`{text(p.guards[0])}` beside `{p.var} < {bound}`, which the kept "
                          "row's fill and passes do not carry", p.loop)
        _check_body(plan, p)
        # stores to the row are _stores' to judge (the last pass's own element only)
        reads = [s for s in _subscripts(p.body) if _array(s) == pointer and writer(s) is None]
        for s in reads:
            if _key(s, p.var) != key:
                raise Illegal(f"`{text(s)}` is not a read of the row at the loop's own "
                              f"element ({pointer}[{key.replace('@', p.var)}])", s)
        out.append(Pass(p.loop, p.var, p.var_type, p.bound, p.body, p.start, tuple(reads)))
    _fixed_row(out, pointer)
    checked, spots = _stores(plan, out, pointer, root)
    return RowCache(pointer, plan.kernel.param(root).base_type, tuple(out), tuple(checked),
                    tuple(spots))



def _rereads(p: Pass, name: str, key: str) -> bool:
    """``p`` reads ``name`` at the element ``key`` (a compound ``name[c] *= s`` is a store
    here: it reads what it then writes, as written)."""
    return any(_array(s) == name and _key(s, p.var) == key and writer(s) is None
               for s in _subscripts(p.body))


def _fixed_row(passes: list[Pass], pointer: str) -> None:
    """Refuse a row whose place may move while it is kept: a statement from the first pass
    to the last that assigns the pointer or a name its reads' index holds besides the loop
    variable (``off`` of ``P[off + c]``); the kept elements are the first pass's, and the
    first pass loads every step before its body runs."""
    names = {pointer} | {text(n) for p in passes for s in p.reads for n in walk(s)
                         if n.type == "identifier" and text(n) != p.var}
    block = passes[0].loop.parent
    assert block is not None
    for stmt in block.named_children:
        if passes[0].loop.start_byte <= stmt.start_byte < passes[-1].loop.end_byte and \
                (moved := sorted(assigned_in(stmt) & names)):
            raise Illegal(f"`{moved[0]}` is assigned while the row of {pointer} is kept (the "
                          "kept elements would no longer be the ones the passes read)", stmt)


def _check_body(plan: Plan, p: Pass) -> None:
    for n in walk(p.body):
        if n.type in _EXITS:
            raise Illegal(f"`{text(n)}` leaves the pass over the row early", n)
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is not None and text(target) == p.var:
                raise Illegal(f"the loop variable `{p.var}` is assigned in the pass", n)
        if n.type == "call_expression" and text(n.child_by_field_name("function")).startswith(
                ("__shfl", "__syncthreads", "__syncwarp", "atomic")):
            raise Illegal(f"`{text(n)[:50]}` in a pass over the row must run once per step", n)


def _stores(plan: Plan, passes: list[Pass], pointer: str,
            root: str) -> tuple[list[Node], list[Node]]:
    """Stores between the first pass and the end of the last that may alias the row: the
    last pass's ``W[c]`` and the one-element stores between the passes (:func:`_spot`),
    both checked at run time; any other is refused."""
    start, last = passes[0].loop.start_byte, passes[-1]
    block = passes[0].loop.parent
    assert block is not None
    restrict = plan.kernel.param(root).is_restrict
    checked: list[Node] = []
    spots: list[Node] = []
    for n in walk(plan.body):
        # the last pass's `*(W + c) = ..` is its element store, as `W[c] = ..` is
        element = n.type == "subscript_expression" or (
            n.type == "pointer_expression" and _spelled_element(n) is not None and
            last.loop.start_byte <= n.start_byte)
        if n.type == "pointer_expression" and not element and writer(n) is not None and \
                start <= n.start_byte < last.loop.end_byte:
            if _through(plan, passes, pointer, root, n, block):
                spots.append(n)
            continue
        if not element or writer(n) is None or \
                not start <= n.start_byte < last.loop.end_byte:
            continue
        local = plan.facts.defs.get(_array(n))
        if local is not None and not local.is_pointer:
            continue  # a thread's own array
        w_root = _root(plan, _array(n))
        if w_root is not None and w_root != root and restrict and \
                plan.kernel.param(w_root).is_restrict:
            continue
        if w_root is None:
            raise Illegal(f"`{text(n)}` stores through `{_array(n)}`, which is not a kernel "
                          "pointer or a fixed offset of one", n)
        if plan.kernel.param(w_root).is_const:
            continue
        if n.start_byte < last.loop.start_byte and not any(
                p.loop.start_byte <= n.start_byte < p.loop.end_byte for p in passes) and \
                not inside_loop(n, block) and _spot(plan, passes, pointer, n):
            spots.append(n)
            continue
        if not last.loop.start_byte <= n.start_byte or _key(n, last.var) is None:
            raise Illegal(f"`{text(n)}` may change the row of {pointer} before its last pass "
                          "reads it (not __restrict__, not the last pass's own element)", n)
        checked.append(n)
    return checked, spots


def _through(plan: Plan, passes: list[Pass], pointer: str, root: str, store: Node,
             block: Node) -> bool:
    """A store ``*p = ..`` between the first pass and the end of the last: False where it
    cannot write the row (a thread's own pointer, or ``__restrict__`` apart from it), True
    where it is a one-element store to test at run time (:func:`_spot`); raises Illegal
    otherwise (in a pass, in a loop, or at a place not the item's)."""
    names = [text(n) for n in identifiers(store)]
    roots = {r for name in names if (r := _root(plan, name)) is not None}
    if roots and all(r != root and plan.kernel.param(r).is_restrict and
                     plan.kernel.param(root).is_restrict for r in roots):
        return False
    if not roots and all((d := plan.facts.defs.get(name)) is not None and not d.is_pointer
                         for name in names):
        return False  # ``*`` of a thread's own value (no pointer named)
    if any(p.loop.start_byte <= store.start_byte < p.loop.end_byte for p in passes) or \
            inside_loop(store, block) or not _spot(plan, passes, pointer, store):
        raise Illegal(f"`{text(store)}` may change the row of {pointer} before its last pass "
                      "reads it (a store through a pointer, not at the item's one place)",
                      store)
    return True


def _spot(plan: Plan, passes: list[Pass], pointer: str, store: Node) -> bool:
    """The one-element store ``store`` between the passes (in no loop) can be tested at the
    later passes against the row: every name of its place is a kernel parameter never
    assigned or a local of one definition, never assigned, declared before the first pass
    in a block around the passes (so the place is the same where the passes test it), and
    each local is one the row's own place is written with (``row`` of ``x + row * cols``,
    directly or through a local ``base = row * cols``) or a pointer to such a place (``W =
    scale + row``), so the place is the item's, the same for every lane of it (a lane's own
    place, tested by each lane, would not tell the lanes that cached the row what another
    lane wrote). False (the store refused as before) otherwise."""
    block = passes[0].loop.parent
    assert block is not None
    row_names = {text(n) for p in passes for s in p.reads for n in identifiers(s)
                 if text(n) != p.var} | {pointer}
    todo = sorted(row_names)
    while todo:  # the locals the row's place is written with, through their definitions
        d = plan.facts.defs.get(todo.pop())
        if d is not None and d.value is not None and not d.assigned:
            new = {text(n) for n in identifiers(d.value)} - row_names
            row_names |= new
            todo += sorted(new)
    assigned = assigned_in(plan.body)
    params = {p.name for p in plan.kernel.params}

    def fixed(name: str, depth: int = 0) -> bool:
        if name in assigned:
            return False
        if name in params:
            return True
        local = plan.facts.defs.get(name)
        if local is None or local.assigned:
            return False
        scope = local.decl.parent
        if local.decl.start_byte >= passes[0].loop.start_byte or scope is None or \
                not scope.start_byte <= block.start_byte < block.end_byte <= scope.end_byte:
            return False
        # a local of the row's place, or a pointer to the item's place (W = scale + row)
        return name in row_names or (local.is_pointer and local.value is not None and
                                     depth < 4 and all(fixed(text(n), depth + 1)
                                                       for n in identifiers(local.value)))

    return all(fixed(text(n)) for n in identifiers(store))


def apply_row_cache(plan: Plan, cache: RowCache, *, lanes: str, vectorized: set[int],
                    foreign: list[Edit], threads: str) -> None:
    """Rewrite the passes of ``cache`` (``foreign``: edits whose text the cached copies of the
    bodies must not carry, the vector rewrite's); adds REG_ROW and its constraints."""
    first = cache.passes[0]
    vec = "VEC" if "VEC" in plan.params and first.loop.start_byte in vectorized else "1"
    regs = "2" if cache.elem in ("double", "long long", "unsigned long long", "int64_t",
                                 "uint64_t", "long") else "1"
    keep = f"WbVec<{cache.elem}, {vec}> wb_keep[{STEPS}];"
    for k, p in enumerate(cache.passes):
        at = p.loop.start_byte
        while at > 0 and plan.source.data[at - 1:at] in (b" ", b"\t"):
            at -= 1
        lead = "\n" if plan.source.data[at - 1:at] != b"\n" else ""

        puts = _vector_stores(plan, p) if vec != "1" and p.loop.start_byte in vectorized \
            else {}

        def make(rw: Rewriter, p: Pass = p, k: int = k, puts: dict[Node, str] = puts,
                 lead: str = lead) -> str:
            cached = _cached_pass(rw, cache, p, fill=k == 0, vec=vec, lanes=lanes,
                                  foreign=foreign, puts=puts)
            decl = f"  {keep}  // the row, kept from its first pass\n" if k == 0 else ""
            return (f"{lead}#if {REG_ROW} > 0\n{decl}  if ({_fits(rw, cache, p, vec, lanes)})"
                    f" {cached} else\n#endif\n")
        plan.rw.replace_span(at, at, make=make)
    plan.helper(VEC_STRUCT)
    per_step = f"{lanes} * {vec}" if vec != "1" else lanes
    plan.helper(f"#define {STEPS} (({REG_ROW} + {per_step} - 1) / ({per_step}))  "
                f"// steps of {vec} elements per lane that hold REG_ROW elements")
    plan.add_param(REG_ROW, {
        "kind": "choice", "values": ROW_VALUES, "default": 0,
        "description": f"elements of {cache.pointer}'s row kept in registers by its first "
                       "pass for the later ones, ceil(REG_ROW / (LANES * VEC)) steps per lane "
                       "(longer rows read again; as written: 0, read again)"},
        f"{line(first.loop)}: lane loop")
    per = f"ceil_div({REG_ROW}, {per_step}) * {vec}" + (f" * {regs}" if regs != "1" else "")
    # 255: the registers one thread may address (sm_35 on); 65536: a block's register file
    plan.constrain(f"{per} + {WORKING_REGS} <= 255")
    plan.constrain(f"{per} + {WORKING_REGS} <= 65536 // ({threads})")
    if _min_blocks_follows(plan):
        # the register cap a minimum of resident blocks sets must hold the row too (else
        # the kept row spills to local memory)
        plan.constrain(f"MIN_BLOCKS_PER_SM == 0 or {per} + {WORKING_REGS} <= 65536 // "
                       f"({threads} * MIN_BLOCKS_PER_SM)")
    size = plan.scalars.get(text(first.bound))
    if size is not None:
        # a cache the shape's row does not fit is never used (that config times REG_ROW = 0
        # again); of the sizes that hold it only the smallest is kept (a larger one holds
        # registers it never fills): the size before a power of two is 3/4 of it, before
        # 1.5 x a power of two 2/3 of it (ROW_VALUES), and that one must be under the row
        plan.constrain(f"{REG_ROW} == 0 or {REG_ROW} >= {size}")
        plan.constrain(f"{REG_ROW} == 0 or (is_pow2({REG_ROW}) and 4 * {size} > 3 * {REG_ROW})"
                       f" or (not is_pow2({REG_ROW}) and 3 * {size} > 2 * {REG_ROW})")
        if "ITEMS_PER_THREAD" in plan.params:
            # the rows then always take the cached passes, where the lane loops' items per
            # thread do not run
            plan.constrain(f"{REG_ROW} == 0 or ITEMS_PER_THREAD == 1")
    plan.note(REG_ROW, True, f"{cache.pointer}'s row is read by {len(cache.passes)} lane "
              f"passes (lines {', '.join(str(line(p.loop)) for p in cache.passes)}); the first "
              "keeps REG_ROW elements (ceil(REG_ROW / (LANES * VEC)) steps of VEC per lane) in "
              "registers, the others read them where the row fits (tested per item at run "
              "time" + (", with the stores of the last pass the row or disjoint from it" if
                        cache.checked else "") + (
              f", with {len(cache.spots)} one-element store(s) between the passes outside "
              "the row" if cache.spots else "") + ")", first.loop)


def _min_blocks_follows(plan: Plan) -> bool:
    """MIN_BLOCKS_PER_SM will be lifted (:func:`.semantic._launch_bounds`): the block size
    is tied to ``__launch_bounds__`` and the author gave no minimum of their own."""
    if plan.launch_bounds is None:
        return False
    fn = plan.source.function_node(plan.kernel)
    bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
    return bounds is None or len(bounds.named_children) <= 1


def _fits(rw: Rewriter, cache: RowCache, p: Pass, vec: str, lanes: str) -> str:
    bound = rw.text(p.bound)
    cond = [f"({bound}) <= {STEPS} * {lanes} * {vec}"]
    spots = [w for w in cache.spots if w.start_byte < p.loop.start_byte]
    if spots:
        row = f"(unsigned long long)(const void*){_at(rw, p.reads[0], p.var, '0')}"
        end = f"{row} + (unsigned long long)({bound}) * sizeof({cache.elem})"
        for w in spots:  # the element stored is outside the row (as written, else)
            place = rw.render(w.start_byte, w.end_byte)
            at = f"(unsigned long long)(const void*)&{place}"
            cond.append(f"({at} + sizeof({place}) <= {row} || {end} <= {at})")
    if p is cache.passes[-1] and cache.checked:
        row = f"(unsigned long long)(const void*){_at(rw, p.reads[0], p.var, '0')}"
        end = f"{row} + (unsigned long long)({bound}) * sizeof({cache.elem})"
        for w in cache.checked:
            size = f"sizeof({_array(w)}[0])"
            at = f"(unsigned long long)(const void*){_at(rw, w, p.var, '0')}"
            w_end = f"{at} + (unsigned long long)({bound}) * {size}"
            cond.append(f"(({at} == {row} && {size} == sizeof({cache.elem})) || "
                        f"{w_end} <= {row} || {end} <= {at})")
    return " && ".join(cond)


def _vector_stores(plan: Plan, p: Pass) -> dict[Node, str]:
    """The stores ``W[c] = ...`` of a vectorized pass that can be gathered into one vector
    store per step: plain assignments, ``W`` neither read nor stored at another index in the
    pass (the vector rewrite has shown every access unconditional and aligned)."""
    subs = _subscripts(p.body)  # the row's reads (p.reads) become registers
    out: dict[Node, str] = {}
    for s in subs:
        parent = s.parent
        if parent is None or writer(s) != parent or parent.type != "assignment_expression" or \
                text(parent.child_by_field_name("operator")) != "=":
            continue
        same = [t for t in subs if _array(t) == _array(s) and t not in p.reads]
        root, key = _root(plan, _array(s)), _key(s, p.var)
        if root is not None and key is not None and \
                all(t == s or (writer(t) is not None and _key(t, p.var) == key) for t in same):
            out[s] = plan.kernel.param(root).base_type
    return out


def _cached_pass(rw: Rewriter, cache: RowCache, p: Pass, *, fill: bool, vec: str, lanes: str,
                 foreign: list[Edit], puts: dict[Node, str]) -> str:
    """The pass over the kept steps: unrolled, the body once per element, ``P[c]`` the
    register (the body with every other transform's edits but the vector rewrite's); the
    stores in ``puts`` gathered into one vector store per step."""
    saved = rw.edits
    mine = [Edit(s.start_byte, s.end_byte, "wb_keep[wb_s].v[wb_v]") for s in p.reads]
    types = {_array(s): t for s, t in puts.items()}
    arrays = sorted(types)
    mine += [Edit(s.start_byte, s.end_byte, f"wb_put{arrays.index(_array(s))}.v[wb_v]")
             for s in puts]
    where = {_array(s): _at(rw, s, p.var, "wb_at") for s in puts}
    source = _at(rw, p.reads[0], p.var, "wb_at")
    rw.edits = [e for e in saved if e not in foreign] + mine
    try:
        body = rw.render(p.body.start_byte, p.body.end_byte)
    finally:
        rw.edits = saved
    decls = "".join(f"      WbVec<{types[a]}, {vec}> wb_put{k};\n" for k, a in enumerate(arrays))
    stores = "".join(f"      *reinterpret_cast<WbVec<{types[a]}, {vec}>*>({where[a]}) = "
                     f"wb_put{k};\n" for k, a in enumerate(arrays))
    # wb_at grows with wb_s: a step past the row is past it for every later step too, so
    # the guard is the lane loop's bound; an if (not a break) lets every step's load be in
    # flight before the body waits on the first (with a break after each step, each load
    # waited for the previous step's body: one load in flight a warp)
    steps = (f"#pragma unroll\n    for (int wb_s = 0; wb_s < {STEPS}; ++wb_s) {{\n"
             f"      const {p.var_type} wb_at = ({p.start} + wb_s * {lanes}) * {vec};\n"
             f"      if (wb_at < {rw.text(p.bound)})")
    loads = (f"{steps} wb_keep[wb_s] = *reinterpret_cast<const WbVec<{cache.elem}, {vec}>*>"
             f"({source});\n    }}\n" if fill else "")
    return (f"{{\n{loads}{steps} {{\n{decls}"
            f"#pragma unroll\n      for (int wb_v = 0; wb_v < {vec}; ++wb_v) {{\n"
            f"        const {p.var_type} {p.var} = wb_at + wb_v;\n        {body}\n      }}\n"
            f"{stores}      }}\n    }}\n  }}")


def apply_block_row_cache(plan: Plan, foreign: list[Edit]) -> bool:
    """REG_ROW for a block per row: the row's passes are thread-stride loops ``for (c =
    threadIdx.x; c < n; c += B)`` of a 1-D block whose size is lifted (the block's threads
    are the lanes: step ``s`` of a thread holds elements ``(threadIdx.x + s * B) * VEC ..``).
    ``foreign``: the vector rewrite's edits. False (noted where a row is read twice) when
    not shown legal.

    Not yet called by :func:`.semantic.lift_kernel` (it would run right after
    ``apply_vector``, with the edits that call added): it adds REG_ROW to the committed,
    measured block-per-row templates of benchmarks/corpus (softmax, rms_norm, layer_norm)
    and corpus_holdout (l2_normalize), which are regenerated and measured again with it."""
    if len(plan.block) != 1 or plan.block[0] not in plan.params:
        return False
    # a grid-stride loop walks the whole array, not a block's row
    loops = [lp for lp in stride_loops(plan)
             if not lp.grid_stride and plan.facts.is_thread(lp.start, "x")]
    try:
        cache = find_row_cache(plan, [lp.node for lp in loops],
                               [plan.rw.text(lp.start) for lp in loops])
        if cache is not None and "ROW_SPLIT" in plan.params:
            raise Illegal("the row is dealt over several blocks (ROW_SPLIT)", loops[0].node)
    except Illegal as exc:
        plan.note(REG_ROW, False, exc.reason, exc.node)
        return False
    if cache is None:
        return False
    spans = {(e.start, e.end) for e in foreign if e.make is not None}
    vectorized = {lp.node.start_byte for lp in loops
                  if (lp.node.start_byte, lp.node.end_byte) in spans}
    threads = plan.block[0]
    apply_row_cache(plan, cache, lanes=threads, vectorized=vectorized, foreign=foreign,
                    threads=threads)
    return True
