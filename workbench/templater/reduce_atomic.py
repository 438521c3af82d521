"""A block's total gathered by ``atomicAdd`` on ``__shared__`` scalars: FINAL, UNROLL, VEC.

The shape (band_count of benchmarks/corpus_compute_unseen5, moments_partials of
corpus_compute_unseen6, in any spelling): a 1-D block, one or more ``__shared__`` scalars
``C`` (integer: ``int``, ``unsigned``, ``long long`` ...; or ``float`` / ``double``), each
thread's value ``E`` added once with ``atomicAdd(&C, E);`` as a top-level statement of the
kernel body (so every thread of the block reaches it: no ``return`` or ``goto`` before it),
the only atomic on ``C``, and ``C`` read only after a ``__syncthreads()`` that follows it.
Every such statement of the kernel is rewritten under one FINAL.

* FINAL (0/1): 1 sums ``E`` over each warp with ``__shfl_down_sync`` (offsets 16 .. 1) and
  lane 0 alone adds the warp's total to ``C``: 32 times fewer atomics on one shared address,
  which serialise. Legal because the block is whole warps (its size a multiple of 32: the
  literal, or the lifted BLOCK_THREADS whose values are all multiples of 32), every lane
  reaches the statement (full mask), and an integer sum is exact in any order (wrapping
  included), so the counter ends with the same bits. A ``float`` / ``double`` counter: the
  kernel as written already adds its threads' values in the order their atomics land,
  which no one fixes, so its total is defined only up to the rounding of the order; the
  warp's sum is one more order of the same adds (the gate checks it within the folder's
  tolerance, as for the shared-tree family). 0 is the kernel as written.
* UNROLL (0, 2, 4, 8): ``#pragma unroll`` on the thread-stride loop whose values the atomic
  adds (``for (i = threadIdx.x ...; ...; i += S)`` before it, or a ``while`` stepping a
  variable declared from the thread index): the unrolled body issues its
  loads before their uses, several in flight per thread on a memory-bound count. Any value
  is correct (an unroll never changes what the loop computes: same elements, same order);
  0 leaves the compiler's choice, as written. A loop with its own ``#pragma unroll`` keeps it.
* CHUNKS (1, 2, 4, 8) where the block sums a fixed chunk of the data: several chunks a
  block, the written grid's other slots 0 (:mod:`.reduce_chunks`).
* VEC (1, 2, 4) on that loop where :mod:`.reduce_atomic_vec` shows it legal: float2 / float4
  loads of the run the block counts. A floating accumulator the loop sums may take its
  elements in another order only where its one use after the loop is as the whole value of
  a floating counter's atomic (the order there is unspecified already).

Anything else near the shape is refused with the reason and the line; a kernel without a
shared atomic counter is left alone without a note.
"""

from __future__ import annotations

from collections.abc import Collection

from tree_sitter import Node

from workbench.templater.analysis import line, strip, text, walk, write_target
from workbench.templater.plan import Plan
from workbench.templater.reduce_atomic_vec import vec_count_loop
from workbench.templater.reduce_chunks import lift_chunks
from workbench.templater.rules import literal
from workbench.templater.vector import Illegal

NAME = "FINAL"
UNROLL = "UNROLL"
#: Set False to lift as if this module did not exist (before/after comparisons).
ENABLED = True
_INTEGER_TYPES = frozenset({"int", "unsigned", "unsigned int", "long long", "unsigned long long",
                            "long long int", "unsigned long long int"})
#: Floating counters: the atomics' order is unspecified as written (module doc).
_FLOAT_TYPES = frozenset({"float", "double"})


def _counters(plan: Plan) -> dict[str, str]:
    """Name -> type of every ``__shared__`` integer or floating scalar of the kernel."""
    out: dict[str, str] = {}
    for d in plan.facts.defs.values():
        if not d.is_shared or d.is_pointer:
            continue
        declarator = d.decl.child_by_field_name("declarator")
        kind = d.decl.child_by_field_name("type")
        spelled = " ".join(text(kind).split()) if kind is not None else ""
        if declarator is not None and declarator.type == "identifier" and \
                spelled in _INTEGER_TYPES | _FLOAT_TYPES:
            out[d.name] = spelled
    return out


def _atomic_target(stmt: Node) -> tuple[str, Node] | None:
    """(counter, value) of a top-level ``atomicAdd(&C, E);``."""
    if stmt.type != "expression_statement" or not stmt.named_children:
        return None
    call = stmt.named_children[0]
    if call.type != "call_expression" or text(call.child_by_field_name("function")) != \
            "atomicAdd":
        return None
    args = call.child_by_field_name("arguments")
    parts = args.named_children if args is not None else []
    if len(parts) != 2 or parts[0].type != "pointer_expression" or \
            text(parts[0].child_by_field_name("operator")) != "&":
        return None
    target = parts[0].child_by_field_name("argument")
    return (text(target), parts[1]) if target is not None and target.type == "identifier" \
        else None


def _whole_warps(plan: Plan) -> bool:
    """Every value the block size can take is a multiple of 32 (1-D block)."""
    if len(plan.block) != 1:
        return False
    size = literal(plan.block[0])
    if size is not None:
        return size % 32 == 0
    param = plan.params.get(plan.block[0])
    if param is None:
        return False
    spec = param.spec
    low = spec.get("min")
    if not isinstance(low, int) or low < 32:
        return False
    step = spec.get("step")
    return spec.get("kind") == "pow2" or (spec.get("kind") == "int" and isinstance(step, int)
                                          and step % 32 == 0 and low % 32 == 0)


def _check(plan: Plan, stmts: list[Node], k: int, counter: str) -> None:
    """Raise Illegal unless every thread reaches statement ``k`` and ``counter`` is read
    only after a barrier that follows it."""
    for stmt in stmts[:k]:
        for n in walk(stmt):
            if n.type in ("return_statement", "goto_statement"):
                raise Illegal(f"`{text(n)[:40]}` before the atomic: not every thread of a "
                              "warp may reach it", n)
    others = [n for n in walk(plan.body) if n.type == "call_expression" and
              text(n.child_by_field_name("function")).startswith("atomic") and
              any(text(a) == counter for a in walk(n)) and n != stmts[k].named_children[0]]
    if others:
        raise Illegal(f"`{counter}` is updated by another atomic too", others[0])
    synced = False
    for stmt in stmts[k + 1:]:
        if text(stmt).replace(" ", "") == "__syncthreads();":
            synced = True
        elif not synced and any(n.type == "identifier" and text(n) == counter
                                for n in walk(stmt)):
            raise Illegal(f"`{counter}` is read before a __syncthreads() after the atomic",
                          stmt)


def _final(plan: Plan, stmt: Node, counter: str, kind: str, value: Node) -> None:
    if NAME not in plan.params:
        plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                              "description": "block total: 0 one shared atomic a thread (as "
                                             "written), 1 a warp sum by shuffles, then one "
                                             "atomic a warp"},
                       f"{line(stmt)}: atomicAdd(&{counter}, ...)")
    indent = " " * stmt.start_point[1]

    def make(rw: object) -> str:
        as_written = plan.rw.render(stmt.start_byte, stmt.end_byte)
        shown = plan.rw.text(value)
        return (f"\n#if {NAME}\n{indent}{{  // a warp's total by shuffles, one atomic a warp\n"
                f"{indent}  {kind} wb_warp_total = {shown};\n"
                f"{indent}  for (int wb_o = 16; wb_o > 0; wb_o >>= 1)\n"
                f"{indent}    wb_warp_total += __shfl_down_sync(0xffffffffu, wb_warp_total, "
                "wb_o);\n"
                f"{indent}  if ((threadIdx.x & 31) == 0) atomicAdd(&{counter}, wb_warp_total);\n"
                f"{indent}}}\n#else\n{indent}{as_written}\n#endif\n")

    plan.rw.replace_span(stmt.start_byte, stmt.end_byte, make=make)
    why = ("an integer sum is exact in any order, so a warp's shuffle sum then one atomic a "
           "warp gives the same total" if kind in _INTEGER_TYPES else
           "the kernel as written adds its threads' values in the order their atomics land "
           "(unspecified), so a warp's shuffle sum then one atomic a warp is another order of "
           "the same adds, within rounding (the gate checks the folder's tolerance)")
    plan.note(NAME, True, f"the block's {'count' if kind in _INTEGER_TYPES else 'sum'} "
              f"`{counter}` ({kind}): {why}; the block is whole warps at every size offered",
              stmt)


def _reassociable(plan: Plan, stmts: list[Node], loop: Node,
                  sites: list[tuple[int, str, Node]], counters: dict[str, str]) -> frozenset[str]:
    """Floating locals whose one use after ``loop`` is as the whole value of a floating
    counter's atomic: their sum's order is unspecified as written (module doc)."""
    after = [st for st in stmts if st.start_byte >= loop.end_byte]
    atomics = {stmts[k].start_byte for k, c, _v in sites if counters[c] in _FLOAT_TYPES}
    names = {text(strip(v)) for k, c, v in sites if counters[c] in _FLOAT_TYPES and
             strip(v).type == "identifier"}
    out = set()
    for name in names:
        if _local_type(plan, name) not in _FLOAT_TYPES:
            continue
        uses = [st for st in after if st.start_byte not in atomics and
                any(n.type == "identifier" and text(n) == name for n in walk(st))]
        if not uses:
            out.add(name)
    return frozenset(out)


def _stride_loop(plan: Plan, stmts: list[Node], k: int, values: list[Node]) -> Node | None:
    """The last top-level ``for`` before the first atomic that starts at the thread index,
    steps by ``+=`` and assigns a name an atomic's value reads."""
    reads = {text(n) for value in values for n in walk(value) if n.type == "identifier"}
    for stmt in reversed(stmts[:k]):
        if not _walks_from_thread(plan, stmt):
            continue
        body = stmt.child_by_field_name("body")
        assigned = {text(t) for n in walk(body) if (t := write_target(n)) is not None} \
            if body is not None else set()
        if assigned & reads:
            return stmt
    return None


def _walks_from_thread(plan: Plan, loop: Node) -> bool:
    """``for (i = ...threadIdx.x...; ...; i += S)``, or ``while (...) { ... i += S; }`` with
    ``i`` declared from the thread index."""
    if loop.type == "for_statement":
        init, update = loop.child_by_field_name("initializer"), \
            loop.child_by_field_name("update")
        return init is not None and update is not None and \
            plan.facts.mentions_thread(init, "x") and \
            text(update.child_by_field_name("operator")) == "+="
    if loop.type != "while_statement":
        return False
    body = loop.child_by_field_name("body")
    steps = [text(n.child_by_field_name("left")) for n in walk(body)
             if n.type == "assignment_expression" and
             text(n.child_by_field_name("operator")) == "+="] if body is not None else []
    return any(d.value is not None and plan.facts.mentions_thread(d.value, "x")
               for d in (plan.facts.defs.get(v) for v in steps) if d is not None)


def _unroll(plan: Plan, loop: Node) -> str:
    """Lift UNROLL for ``loop``; the pragma lines to put before it ("" where not lifted)."""
    prev = loop.prev_sibling
    if prev is not None and prev.type in ("preproc_call", "comment") and \
            text(prev).startswith("#pragma") and "unroll" in text(prev):
        plan.note(UNROLL, False, "the loop has its own #pragma unroll", loop)
        return ""
    if UNROLL in plan.params:
        return ""
    plan.helper(f"constexpr int wb_count_unroll = {UNROLL};  // #pragma unroll reads a "
                "constant, not a macro")
    plan.add_param(UNROLL, {"kind": "choice", "values": [0, 2, 4, 8], "default": 0,
                            "description": "unroll factor of the counting loop: loads in "
                                           "flight per thread (0: the compiler's choice, as "
                                           "written)"},
                   f"{line(loop)}: {text(loop).splitlines()[0][:60]}")
    plan.note(UNROLL, True, "unroll factor of the thread-stride loop the count adds (any "
              "value is correct: the same elements in the same order)", loop)
    return f"#if {UNROLL} > 0\n#pragma unroll (wb_count_unroll)\n#endif\n"


def _local_type(plan: Plan, name: str) -> str | None:
    """The type of the one plain (not pointer, not array, not shared) local ``name`` the
    kernel declares, whichever declarator of its declaration it is; None otherwise."""
    found: list[str] = []
    for decl in walk(plan.body):
        if decl.type != "declaration" or any(text(c) == "__shared__" for c in decl.children):
            continue
        kind = decl.child_by_field_name("type")
        for d in decl.children_by_field_name("declarator"):
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if target is not None and target.type == "identifier" and text(target) == name \
                    and kind is not None:
                found.append(" ".join(text(kind).split()))
    return found[0] if len(found) == 1 else None


def _sites(plan: Plan, stmts: list[Node],
           counters: dict[str, str]) -> list[tuple[int, str, Node]]:
    """(statement index, counter, value) of each top-level atomic on a shared counter."""
    out = []
    for k, stmt in enumerate(stmts):
        found = _atomic_target(stmt)
        if found is not None and found[0] in counters:
            out.append((k, found[0], found[1]))
    return out


def counted_loop(plan: Plan) -> Node | None:
    """The thread-stride loop whose values a shared atomic count adds (the shape of the
    module doc: its loads' order is :mod:`.reduce_atomic_vec`'s to show free), None where the
    kernel has none. Reads the kernel only."""
    counters = _counters(plan) if ENABLED else {}
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    sites = _sites(plan, stmts, counters) if counters else []
    if not sites:
        return None
    return _stride_loop(plan, stmts, sites[0][0], [v for _k, _c, v in sites])


def apply_atomic_count(plan: Plan, compared_by_total: Collection[str] | None = None) -> bool:
    """FINAL and UNROLL (VEC, CHUNKS: :mod:`.reduce_atomic_vec`, :mod:`.reduce_chunks`)
    where the kernel has the shape of the module doc; ``compared_by_total``: the outputs the
    folder compares by their total. True when FINAL was applied."""
    if not ENABLED:
        return False
    counters = _counters(plan)
    if not counters:
        return False
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    sites = _sites(plan, stmts, counters)
    if not sites:
        return False
    try:
        if not _whole_warps(plan):
            raise Illegal("the block size is not a multiple of 32 at every value (or the "
                          "block is not 1-D): a warp's shuffle would take lanes of no "
                          "thread", stmts[sites[0][0]])
        for k, counter, _value in sites:
            _check(plan, stmts, k, counter)
    except Illegal as exc:
        plan.note(NAME, False, f"warp-aggregated total: {exc.reason}",
                  exc.node or stmts[sites[0][0]])
        return False
    for k, counter, value in sites:
        _final(plan, stmts[k], counter, counters[counter], value)
    loop = _stride_loop(plan, stmts, sites[0][0], [v for _k, _c, v in sites])
    if loop is not None:
        pragma = _unroll(plan, loop)
        floating = _reassociable(plan, stmts, loop, sites, counters)
        if not vec_count_loop(plan, loop, pragma, floating) and pragma:
            plan.rw.insert(loop.start_byte, "\n" + pragma)
    lift_chunks(plan, compared_by_total)
    return True
