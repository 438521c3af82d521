"""Recognising a grid-stride reduction on the parse, or refusing it with the line and why.

The shape accepted (declarations, the grid-stride loop, the store into shared memory, the
halving tree, thread 0's store or atomic) is described in :mod:`workbench.templater.reduce`;
:func:`recognise` returns the :class:`~workbench.templater.reduce_records.Reduction` or
raises :class:`~workbench.templater.vector.Illegal` naming the statement that differs.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    calls,
    declared_name,
    factors,
    int_value,
    strip,
    terms,
    text,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.reduce_consts import constant
from workbench.templater.reduce_records import ARITHMETIC, Head, Op, Reduction
from workbench.templater.reduce_tail import ATOMICS, MAX_CALLS, MIN_CALLS, kept_tail
from workbench.templater.rules import literal
from workbench.templater.vector import Illegal

_UNSAFE_CALLS = ("atomic", "__shfl", "__syncthreads", "__syncwarp", "__ballot", "__any",
                 "__all", "__reduce", "__match", "printf")


def _statements(plan: Plan) -> list[Node]:
    return [c for c in plan.body.named_children if c.type != "comment"]


def is_candidate(plan: Plan) -> bool:
    """A grid-stride step somewhere and a shared array: the family, maybe misspelled. The
    step reads ``gridDim.x``, or, where the grid is a literal G, is the product of G and the
    block size (``NUM_BLOCKS * BLOCK``, ``264 * 256``, ``67584``) in a top-level loop."""
    if not any(d.is_shared for d in plan.facts.defs.values()) and \
            not any(c.startswith("__shfl") for c in calls(plan.body)):
        return False  # (a block stage in shuffles alone: reduce_tail)
    if any(builtin(n, "gridDim") == "x" for n in walk(plan.body)):
        return True
    size, grid = block_size(plan), grid_count(plan)
    return any(_grid_step(plan, step, size) or _near_step(plan, step, size) or
               (grid is not None and constant(plan, step) == grid)  # block chunks
               for s in _statements(plan) for step in _loop_steps(s))


def _near_step(plan: Plan, node: Node, size: int | None) -> bool:
    """``node`` is the block size times one other factor (a grid-stride step, maybe of
    another grid than the launch's): enough to refuse it with the line."""
    fs = factors(_expand(plan, node))
    return len(fs) == 2 and sum(_is_block(f, size) for f in fs) >= 1


def _loop_steps(stmt: Node) -> list[Node]:
    """The ``+=`` right-hand sides of a top-level ``for`` update or ``while`` body."""
    if stmt.type == "for_statement":
        found = [stmt.child_by_field_name("update")]
    elif stmt.type == "while_statement":
        body = stmt.child_by_field_name("body")
        found = [] if body is None else list(walk(body))
    else:
        return []
    out: list[Node] = []
    for n in found:
        right = n.child_by_field_name("right") if n is not None and \
            n.type == "assignment_expression" and \
            text(n.child_by_field_name("operator")) == "+=" else None
        if right is not None:
            out.append(right)
    return out


def grid_count(plan: Plan) -> int | None:
    """The launch's block count where the grid is a literal."""
    return literal(plan.grid[0]) if len(plan.grid) == 1 else None


def block_size(plan: Plan) -> int | None:
    return literal(plan.block[0])


def _is_block(node: Node, size: int | None) -> bool:
    return builtin(node, "blockDim") == "x" or (size is not None and int_value(node) == size)


def _expand(plan: Plan, node: Node) -> Node:
    """A single-assignment local's value in place of its name (``stride`` -> its value)."""
    node = strip(node)
    for _ in range(4):
        d = plan.facts.defs.get(text(node)) if node.type == "identifier" else None
        if d is None or d.value is None or d.assigned or d.is_shared:
            return node
        node = strip(d.value)
    return node


def _global_thread(plan: Plan, node: Node, size: int | None) -> bool:
    """``node`` is ``blockIdx.x * B + threadIdx.x`` (B the block size), through locals."""
    return _global_parts(plan, plan.facts.resolve(node), size)


def _global_parts(plan: Plan, parts: list[Node], size: int | None) -> bool:
    """The additive ``parts`` are ``blockIdx.x * B`` and ``threadIdx.x``."""
    if len(parts) != 2:
        return False
    thread = [p for p in parts if plan.facts.is_thread(p, "x")]
    offset = [p for p in parts if not plan.facts.is_thread(p, "x")]
    if len(thread) != 1 or len(offset) != 1:
        return False
    off = _expand(plan, offset[0])
    b = binary(off)
    if b is None or b[1] != "*":
        return False
    if builtin(b[0], "blockIdx") == "x":
        return _is_block(b[2], size)
    return builtin(b[2], "blockIdx") == "x" and _is_block(b[0], size)


def _grid_step(plan: Plan, node: Node, size: int | None) -> bool:
    """``node`` is ``B * gridDim.x`` (either order), through a local; or, where the grid is
    a literal G, ``B * G`` or their product as one number (the launch's threads: every
    thread of the grid as written, which the rewrite then reads from gridDim.x)."""
    fs = factors(_expand(plan, node))
    if len(fs) == 2 and sum(builtin(f, "gridDim") == "x" for f in fs) == 1 and \
            sum(_is_block(f, size) for f in fs) == 1:
        return True
    grid = grid_count(plan)
    if grid is None or size is None:
        return False
    if len(fs) == 1:
        return constant(plan, fs[0]) == grid * size
    values = sorted(constant(plan, f) or 0 for f in fs)
    blocks = [f for f in fs if builtin(f, "blockDim") == "x"]
    if len(fs) == 2 and len(blocks) == 1:
        other = next(f for f in fs if f is not blocks[0])
        return constant(plan, other) == grid
    return len(fs) == 2 and values == sorted([grid, size])


def _only(node: Node | None) -> Node | None:
    """The single statement of a compound statement (or the statement itself)."""
    if node is not None and node.type == "compound_statement":
        inner = [c for c in node.named_children if c.type != "comment"]
        return inner[0] if len(inner) == 1 else None
    return node


def _expression(stmt: Node | None) -> Node | None:
    stmt = _only(stmt)
    if stmt is None or stmt.type != "expression_statement" or not stmt.named_children:
        return None
    return stmt.named_children[0]


def _accumulation(expr: Node | None, target: str) -> tuple[Op, Node] | None:
    """(operator, E) of ``target += E`` | ``target = target + E`` | ``target = f(target, E)``
    where ``target`` is text (an identifier or ``buf[tid]``)."""
    if expr is None or expr.type != "assignment_expression":
        return None
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    op = text(expr.child_by_field_name("operator"))
    if left is None or right is None or _norm(left) != target:
        return None
    if op == "+=":
        return Op("sum"), right
    if op != "=":
        return None
    parts = binary(right)
    if parts is not None and parts[1] == "+":
        if _norm(parts[0]) == target:
            return Op("sum"), parts[2]
        if _norm(parts[2]) == target:
            return Op("sum"), parts[0]
    r = strip(right)
    if r.type == "call_expression":
        func = text(r.child_by_field_name("function"))
        args = r.child_by_field_name("arguments")
        argv = [] if args is None else list(args.named_children)
        kind = "max" if func in MAX_CALLS else "min" if func in MIN_CALLS else None
        if kind is not None and len(argv) == 2:
            if _norm(argv[0]) == target:
                return Op(kind, func), argv[1]
            if _norm(argv[1]) == target:
                return Op(kind, func), argv[0]
    return None


def _norm(node: Node) -> str:
    return "".join(text(strip(node)).split())


def recognise(plan: Plan) -> Reduction:
    size = block_size(plan)
    stmts = _statements(plan)
    if len(stmts) < 5:
        raise Illegal("expected a grid-stride loop, the store into shared memory, a barrier, "
                      "the tree and thread 0's store as the last statements")
    loop_at = next((k for k, s in enumerate(stmts) if s.type in ("for_statement",
                                                                  "while_statement")), None)
    if loop_at is None:
        raise Illegal("no top-level grid-stride loop")
    for s in stmts[:loop_at]:
        if s.type != "declaration":
            raise Illegal(f"`{text(s)[:60]}` before the grid-stride loop is not a declaration",
                          s)
    tail = stmts[loop_at:]
    written_tail = tail
    tail, result = _plain_tail(plan, tail)
    early = next((Illegal(f"`{text(n)}` leaves the kernel early (threads would miss the "
                          "barriers the block's tree needs)", n)
                  for n in walk(plan.body) if n.type in ("return_statement", "goto_statement")),
                 None)
    if len(tail) != 5:
        shape = Illegal("after the grid-stride loop the kernel must be exactly `buf[tid] = s;`, "
                        "`__syncthreads();`, the halving tree and thread 0's store",
                        tail[min(len(tail) - 1, 4)] if len(tail) > 5 else tail[0])
        try:
            if early is not None:
                raise early
            head = _head(plan, stmts, loop_at, size)
        except Illegal:
            raise shape from None
        return _with_kept_tail(plan, head, written_tail, shape)
    if early is not None:
        raise early
    head = _head(plan, stmts, loop_at, size)
    _loop, store, sync, tree, final = tail
    try:
        buf = _store(plan, store, head.acc)
        if text(_expression(sync)) != "__syncthreads()":
            raise Illegal(f"`{text(sync)[:60]}` is not the barrier after the store", sync)
        _tree(plan, tree, buf, head.op, size)
        out, atomic = _final_store(plan, final, buf, head.op, result)
    except Illegal as exc:
        return _with_kept_tail(plan, head, written_tail, exc)
    return Reduction(head.acc, head.acc_type, head.var, head.var_type, head.loop, head.decl,
                     head.bound, head.update, head.value, head.op, buf, store, tree, final, out,
                     atomic, head.walk_base, prelude=head.prelude)


def _plain_tail(plan: Plan, tail: list[Node]) -> tuple[list[Node], Node | None]:
    """The statements after the loop as the family's shape reads them, and the block's
    result local: a block stage written in a helper and inlined (``block_sum<256>(s)``)
    declares its ``__shared__`` array after the loop (a declaration with no value: where it
    stands changes nothing) and hands ``buf[0]`` back into a local (``float total =
    buf[0];``) that thread 0's store alone reads. Those declarations are left out, and the
    local's declaration given back (None where there is none); :func:`_final_store` checks
    that it holds ``buf[0]`` of the tree's buffer and that the store alone reads it."""
    kept = [s for k, s in enumerate(tail) if k == 0 or not _bare_shared(plan, s)]
    if len(kept) < 2 or kept[-2].type != "declaration":
        return kept, None
    name, _d, value = declared_name(kept[-2])
    reads = [n for n in walk(plan.body) if n.type == "identifier" and text(n) == name]
    d = plan.facts.defs.get(name)
    if value is None or d is None or d.assigned or len(reads) != 2 or \
            not kept[-1].start_byte <= reads[1].start_byte < kept[-1].end_byte:
        return kept, None
    return [*kept[:-2], kept[-1]], kept[-2]


def _bare_shared(plan: Plan, stmt: Node) -> bool:
    """``stmt`` declares one ``__shared__`` array with no value (``__shared__ float
    buf[BLOCK];``)."""
    if stmt.type != "declaration":
        return False
    name, _d, value = declared_name(stmt)
    d = plan.facts.defs.get(name)
    return value is None and d is not None and d.is_shared and \
        len(stmt.children_by_field_name("declarator")) == 1


def _with_kept_tail(plan: Plan, head: Head, tail: list[Node], refusal: Illegal) -> Reduction:
    """The reduction with the author's own block stage (:mod:`.reduce_tail`), or
    ``refusal`` raised where that is not one either."""
    kept = kept_tail(plan, tail[1:], head)
    if isinstance(kept, str):
        raise Illegal(f"{refusal.reason}; nor is it a block stage kept as written: {kept}",
                      refusal.node)
    out, atomic = kept
    return Reduction(head.acc, head.acc_type, head.var, head.var_type, head.loop, head.decl,
                     head.bound, head.update, head.value, head.op, "", tail[1], tail[-1],
                     tail[-1], out, atomic, head.walk_base, kept_tail=True,
                     prelude=head.prelude)


def _head(plan: Plan, stmts: list[Node], loop_at: int, size: int | None) -> Head:
    """The grid-stride loop and its accumulation, or :class:`Illegal` naming what differs."""
    loop = stmts[loop_at]
    decl: Node | None = None
    walk_base: str | None = None
    chunks = _chunk_loop(plan, loop, size) if loop.type == "for_statement" else None
    if chunks is not None:
        var, var_type, bound, update = chunks
    else:
        if loop.type == "for_statement" and \
                loop.child_by_field_name("initializer") is not None:
            var, var_type, start, bound, step, update = _for_loop(plan, loop)
        else:  # ``while (i < n)`` or ``for (; i < n; i += S)``: i declared before the loop
            decl = _while_declaration(plan, stmts[:loop_at], loop)
            var, var_type, start, bound, step, update = _while_loop(plan, loop, decl)
        if any(n.type == "identifier" and text(n) == var for s in stmts[loop_at + 1:]
               for n in walk(s)):
            raise Illegal(f"`{var}` is read after the loop, which the rewrite scopes to it",
                          loop)
        walk_base = _walked_array(plan, loop if decl is None else decl)
        if walk_base is not None:
            bound = _pointer_walk(plan, loop, var, walk_base, start, bound, update, size)
            var_type = "long long"  # the walk's index, the pointer's offset from its base
        elif not _global_thread(plan, start, size):
            raise Illegal(f"the loop starts at `{text(start)}`, not blockIdx.x * blockDim.x + "
                          "threadIdx.x (each thread's first element)", loop)
        if not _grid_step(plan, step, size):
            raise Illegal(f"the loop steps by `{text(step)}`, not blockDim.x * gridDim.x "
                          "(every thread of the grid)", loop)
    acc_expr = update.child_by_field_name("left")
    acc = text(acc_expr)
    found = _accumulation(update, acc)
    prelude = body_locals(loop.child_by_field_name("body"))[0] \
        if chunks is None and decl is None and walk_base is None else ()
    d = plan.facts.defs.get(acc)
    if found is None or d is None or d.is_shared or d.is_pointer or d.value is None:
        raise Illegal(f"`{text(update)[:60]}` is not a sum, max or min into a local "
                      "accumulator", update)
    op, value = found
    acc_type = " ".join(text(d.decl.child_by_field_name("type")).split())
    if acc_type not in ARITHMETIC:
        raise Illegal(f"the accumulator `{acc}` is a {acc_type}", d.decl)
    for term in (value, *prelude):
        for n in walk(term):
            if n.type in ("assignment_expression", "update_expression"):
                raise Illegal(f"`{text(term)[:60]}` has side effects", n)
            if n.type == "identifier" and text(n) == acc:
                raise Illegal(f"`{text(term)[:60]}` reads the accumulator", n)
        if any(c.startswith(_UNSAFE_CALLS) for c in calls(term)):
            raise Illegal(f"`{text(term)[:60]}` calls a warp or atomic function", term)
    if any(text(n) in (acc, var) for n in walk(bound) if n.type == "identifier"):
        raise Illegal(f"the bound `{text(bound)}` changes in the loop", bound)
    return Head(acc, acc_type, var, var_type, loop, decl, bound, update, value, op, walk_base,
                prelude)


def _for_loop(plan: Plan, loop: Node) -> tuple[str, str, Node, Node, Node, Node]:
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    inc = loop.child_by_field_name("update")
    if init is None or cond is None or inc is None or init.type != "declaration":
        raise Illegal("the loop is not `for (T i = start; i < n; i += stride)`", loop)
    var, _d, start = declared_name(init)
    typ = " ".join(text(init.child_by_field_name("type")).split())
    step = _increment(inc, var)
    parts = binary(cond)
    if start is None or step is None or parts is None or parts[1] != "<" or \
            text(strip(parts[0])) != var:
        raise Illegal("the loop is not `for (T i = start; i < n; i += stride)`", loop)
    _locals, last = body_locals(loop.child_by_field_name("body"))
    update = _expression(last)
    if update is None:
        raise Illegal("the loop body is not one accumulation (after const locals)", loop)
    return var, typ, start, parts[2], step, update


def body_locals(body: Node | None) -> tuple[tuple[Node, ...], Node | None]:
    """(the ``const`` locals a loop body declares before its last statement, that
    statement): ``{ const float v = x[i]; s += v * v; }``; ((), body) for any other body."""
    inner = [c for c in body.named_children if c.type != "comment"] \
        if body is not None and body.type == "compound_statement" else []
    decls = inner[:-1]
    if not decls or not all(_const_local(d) for d in decls):
        return (), body
    return tuple(decls), inner[-1]


def _const_local(decl: Node) -> bool:
    """``const T name = value;``: one name, with a value, never written."""
    declarators = decl.children_by_field_name("declarator") \
        if decl.type == "declaration" else []
    return any(text(c) == "const" for c in decl.children if c.type == "type_qualifier") and \
        len(declarators) == 1 and declarators[0].type == "init_declarator" and \
        declared_name(decl)[0] != ""


def _condition(loop: Node) -> Node | None:
    """The comparison a ``while`` or ``for`` loop tests (its condition clause unwrapped)."""
    cond = loop.child_by_field_name("condition")
    if cond is not None and cond.type == "condition_clause":
        cond = cond.named_children[0] if cond.named_children else None
    return cond


def _while_loop(plan: Plan, loop: Node, decl: Node | None) -> tuple[str, str, Node, Node,
                                                                     Node, Node]:
    """``T i = g; while (i < n) { s OP= E; i += S; }``, or its ``for (; i < n; i += S) s OP=
    E;`` (the step in the header): the same walk from the declaration before the loop."""
    cond = _condition(loop)
    parts = binary(cond) if cond is not None else None
    if parts is None or parts[1] != "<" or strip(parts[0]).type != "identifier":
        raise Illegal("the loop is not `while (i < n)` or `for (; i < n; i += stride)`", loop)
    var = text(strip(parts[0]))
    if decl is None or decl.type != "declaration" or declared_name(decl)[0] != var or \
            declared_name(decl)[2] is None:
        raise Illegal(f"`{var}` is not declared with its start before the loop", loop)
    start = declared_name(decl)[2]
    assert start is not None
    body = loop.child_by_field_name("body")
    inner = [] if body is None else [c for c in body.named_children if c.type != "comment"] \
        if body.type == "compound_statement" else [body]
    header = loop.child_by_field_name("update") if loop.type == "for_statement" else None
    if header is not None:  # the for form: the body one accumulation, the step the update
        inner = [*inner, header]
    if len(inner) != 2 or _expression(inner[0]) is None or (
            header is None and _expression(inner[1]) is None):
        raise Illegal("the loop body is not an accumulation then `i += stride`", loop)
    step = _increment(header if header is not None else _expression(inner[1]), var)  # type: ignore[arg-type]
    if step is None:
        raise Illegal(f"the loop does not end with `{var} += stride`", inner[1])
    if sum(1 for n in walk(plan.body)
           if (t := write_target(n)) is not None and text(t) == var) != 1:
        raise Illegal(f"`{var}` is assigned outside the loop's step", loop)
    typ = " ".join(text(decl.child_by_field_name("type")).split())
    return var, typ, start, parts[2], step, _expression(inner[0])  # type: ignore[return-value]


def _walked_array(plan: Plan, holder: Node) -> str | None:
    """The array a walking pointer starts in, where ``holder`` (the ``for`` or the
    declaration before the ``while``) declares a pointer ``T* p = A + ...`` (A a kernel
    pointer); None for an index walk."""
    decl = holder.child_by_field_name("initializer") if holder.type == "for_statement" \
        else holder
    if decl is None or decl.type != "declaration":
        return None
    d = decl.child_by_field_name("declarator")
    inner = d.child_by_field_name("declarator") if d is not None and \
        d.type == "init_declarator" else None
    if inner is None or inner.type != "pointer_declarator":
        return None
    _name, _n, start = declared_name(decl)
    bases = [text(t) for _s, t in terms(start) if t.type == "identifier" and
             plan.pointer(text(t))] if start is not None else []
    if len(bases) != 1:
        raise Illegal(f"the walking pointer starts at `{text(start)}`, not one kernel "
                      "pointer plus the thread's first element", decl)
    return bases[0]


def _pointer_walk(plan: Plan, loop: Node, var: str, base: str, start: Node, bound: Node,
                  update: Node, size: int | None) -> Node:
    """A walk ``for (T* p = A + g; p < A + n; p += S) s OP= E(*p)``: n, checked: g the
    thread's first element, the bound A plus a count, every use of p in E a read ``*p``
    or ``p[0]`` (E then reads A[index], the index walking as an index walk's would)."""
    from workbench.templater.reduce_rewrite import walk_read

    parts = plan.facts.resolve(start)
    rest = [t for t in parts if not (t.type == "identifier" and text(t) == base)]
    if len(rest) != len(parts) - 1 or any(sign < 0 for sign, _t in terms(start)) or \
            not _global_parts(plan, rest, size):
        raise Illegal(f"the walking pointer starts at `{text(start)}`, not `{base}` plus "
                      "blockIdx.x * blockDim.x + threadIdx.x", loop)
    ends = terms(_expand(plan, bound))
    count = [t for _s, t in ends if not (t.type == "identifier" and text(t) == base)]
    if len(ends) != 2 or len(count) != 1 or any(sign < 0 for sign, _t in ends):
        raise Illegal(f"the walk ends at `{text(bound)}`, not `{base} + n`", loop)
    for n in walk(update):
        if n.type == "identifier" and text(n) == var and walk_read(n) is None:
            raise Illegal(f"the walking pointer `{var}` is used in `{text(n.parent)[:50]}`, "
                          f"not only read as `*{var}`", n)
    return count[0]


def _chunk_loop(plan: Plan, loop: Node, size: int | None) -> tuple[str, str, Node, Node] | None:
    """The walk over the grid's block-sized chunks, ``for (int b = blockIdx.x; b < C; b +=
    gridDim.x) { int i = b * B + threadIdx.x; if (i < n) s OP= E; }``: thread t of block b0
    takes ``(b0 + k * G) * B + t = b0 * B + t + k * G * B``, the grid-stride walk's
    elements in its order, provided the chunks reach n: ``C`` is ``(n + B - 1) / B``, a
    scalar launched as ``ceil_div(n, B)``, or the condition is ``b * B < n``. Returns (i,
    its type, n, the accumulation), None when the loop does not start at ``blockIdx.x``;
    raises Illegal where it does but differs."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    inc = loop.child_by_field_name("update")
    if init is None or init.type != "declaration":
        return None
    chunk, _d, first = declared_name(init)
    if first is None or builtin(first, "blockIdx") != "x":
        return None
    step = _increment(inc, chunk) if inc is not None else None
    grid = grid_count(plan)
    if step is None or not (builtin(step, "gridDim") == "x" or
                            (grid is not None and constant(plan, step) == grid)):
        raise Illegal(f"the loop over block chunks does not step by gridDim.x "
                      f"(`{text(inc)}`)", loop)
    body = loop.child_by_field_name("body")
    inner = [c for c in body.named_children if c.type != "comment"] \
        if body is not None and body.type == "compound_statement" else []
    shape = f"`int i = {chunk} * B + threadIdx.x; if (i < n) s += E;`"
    if len(inner) != 2 or inner[0].type != "declaration" or inner[1].type != "if_statement" \
            or inner[1].child_by_field_name("alternative") is not None:
        raise Illegal(f"the chunk loop's body is not {shape}", loop)
    var, _d, index = declared_name(inner[0])
    if index is None or not _chunk_index(plan, index, chunk, size):
        raise Illegal(f"`{text(inner[0])}` is not {chunk} * B + threadIdx.x (B the block)",
                      inner[0])
    guard = inner[1].child_by_field_name("condition")
    g = binary(guard.named_children[0]) if guard is not None and guard.named_children \
        else None
    update = _expression(inner[1].child_by_field_name("consequence"))
    if g is None or g[1] != "<" or text(strip(g[0])) != var or update is None:
        raise Illegal(f"the chunk loop's body is not {shape}", inner[1])
    bound = strip(g[2])
    if not _chunks_cover(plan, cond, chunk, bound, size):
        raise Illegal(f"the chunk bound `{text(cond)}` is not shown to reach "
                      f"{text(bound)} (b * B < n, b < (n + B - 1) / B or a scalar launched "
                      "as ceil_div(n, B))", loop)
    if any(n.type == "identifier" and text(n) == chunk for n in walk(update)):
        raise Illegal(f"`{text(update)[:60]}` reads the chunk index `{chunk}`", update)
    typ = " ".join(text(inner[0].child_by_field_name("type")).split())
    return var, typ, bound, update


def _chunk_index(plan: Plan, index: Node, chunk: str, size: int | None) -> bool:
    """``index`` is ``chunk * B + threadIdx.x`` (either order)."""
    parts = terms(index)
    thread = [t for sign, t in parts if sign > 0 and plan.facts.is_thread(t, "x")]
    other = [t for sign, t in parts if sign > 0 and not plan.facts.is_thread(t, "x")]
    if len(parts) != 2 or len(thread) != 1 or len(other) != 1:
        return False
    fs = factors(other[0])
    return len(fs) == 2 and sum(text(f) == chunk for f in fs) == 1 and \
        sum(_is_block(f, size) for f in fs) == 1


def _chunks_cover(plan: Plan, cond: Node | None, chunk: str, bound: Node,
                  size: int | None) -> bool:
    """The chunk loop's condition reaches every chunk holding an element below ``bound``."""
    c = binary(cond) if cond is not None else None
    if c is None or c[1] != "<":
        return False
    left, right, n = strip(c[0]), strip(c[2]), text(bound)
    fs = factors(left)
    if len(fs) == 2 and sum(text(f) == chunk for f in fs) == 1 and \
            sum(_is_block(f, size) for f in fs) == 1:
        return text(right) == n  # b * B < n
    if text(left) != chunk:
        return False
    scalar = plan.scalars.get(text(right)) if right.type == "identifier" else None
    if scalar is not None:
        count = plan.scalars.get(n)
        return count is not None and size is not None and \
            "".join(scalar.split()) == f"ceil_div({count},{size})"
    div = binary(right)
    if div is None or div[1] != "/" or not _is_block(div[2], size):
        return False
    top = terms(div[0])
    numbers = sum(sign * (constant(plan, t) or 0) for sign, t in top if text(t) != n)
    return size is not None and sum(text(t) == n for _s, t in top) == 1 and \
        numbers == size - 1


def _while_declaration(plan: Plan, before: list[Node], loop: Node) -> Node | None:
    """The declaration of the ``while`` loop's variable among the declarations before it
    (the last one, or an earlier one whose variable no declaration after it reads: the
    rewrite moves it into the loop), else the statement right before the loop."""
    cond = _condition(loop)
    parts = binary(cond) if cond is not None else None
    var = text(strip(parts[0])) if parts is not None else ""
    for k, s in enumerate(before):
        if declared_name(s)[0] != var:
            continue
        later = before[k + 1:]
        if any(text(n) == var for t in later for n in walk(t) if n.type == "identifier"):
            raise Illegal(f"`{var}` is read by a declaration between its start and the loop",
                          s)
        return s
    return before[-1] if before else None


def _increment(node: Node, var: str) -> Node | None:
    if node.type == "assignment_expression" and text(node.child_by_field_name("left")) == var \
            and text(node.child_by_field_name("operator")) == "+=":
        return node.child_by_field_name("right")
    return None


def _store(plan: Plan, store: Node, acc: str) -> str:
    expr = _expression(store)
    left = expr.child_by_field_name("left") if expr is not None else None
    right = expr.child_by_field_name("right") if expr is not None else None
    if expr is None or expr.type != "assignment_expression" or left is None or \
            left.type != "subscript_expression" or right is None or text(strip(right)) != acc or \
            text(expr.child_by_field_name("operator")) != "=":
        raise Illegal(f"`{text(store)[:60]}` is not `buf[tid] = {acc};`", store)
    buf = text(left.child_by_field_name("argument"))
    d = plan.facts.defs.get(buf)
    idx = left.child_by_field_name("indices")
    if d is None or not d.is_shared or idx is None or not idx.named_children or \
            not plan.facts.is_thread(idx.named_children[0], "x"):
        raise Illegal(f"`{text(left)}` is not a __shared__ array at the thread's index", store)
    return buf


def _tree(plan: Plan, tree: Node, buf: str, op: Op, size: int | None) -> None:
    if tree.type != "for_statement":
        raise Illegal("the tree is not a `for` loop halving the stride", tree)
    init, cond = tree.child_by_field_name("initializer"), tree.child_by_field_name("condition")
    inc = tree.child_by_field_name("update")
    if init is None or cond is None or inc is None or init.type != "declaration":
        raise Illegal("the tree is not `for (k = B / 2; k > 0; k >>= 1)`", tree)
    k, _d, start = declared_name(init)
    half = binary(start) if start is not None else None
    starts_half = start is not None and (
        (size is not None and int_value(start) == size // 2) or
        (half is not None and half[1] == "/" and int_value(half[2]) == 2 and
         _is_block(half[0], size)) or
        (half is not None and half[1] == ">>" and int_value(half[2]) == 1 and
         _is_block(half[0], size)))
    c = binary(cond)
    # k > 0, k >= 1, k != 0, or k itself (the halving k stays >= 0: all stop at 0)
    stops = (c is not None and text(strip(c[0])) == k and (
        (c[1] in (">", "!=") and int_value(c[2]) == 0) or
        (c[1] == ">=" and int_value(c[2]) == 1))) or text(strip(cond)) == k
    op_text = text(inc.child_by_field_name("operator"))
    halves = text(inc.child_by_field_name("left")) == k and (
        (op_text == ">>=" and int_value(inc.child_by_field_name("right")) == 1) or
        (op_text == "/=" and int_value(inc.child_by_field_name("right")) == 2))
    if not (starts_half and stops and halves):
        raise Illegal(f"the tree `{text(tree).splitlines()[0][:70]}` does not start at half "
                      "the block and halve to 1", tree)
    body = tree.child_by_field_name("body")
    inner = [] if body is None else [c for c in body.named_children if c.type != "comment"]
    if len(inner) != 2 or text(_expression(inner[1])) != "__syncthreads()" or \
            inner[0].type != "if_statement":
        raise Illegal("the tree's body is not `if (tid < k) ...; __syncthreads();`", tree)
    guard = inner[0]
    g = binary(guard.child_by_field_name("condition").named_children[0])  # type: ignore[union-attr]
    if g is None or g[1] != "<" or not plan.facts.is_thread(g[0], "x") or \
            text(strip(g[2])) != k or guard.child_by_field_name("alternative") is not None:
        raise Illegal(f"`{text(guard).splitlines()[0][:60]}` is not `if (tid < {k})`", guard)
    step = _expression(guard.child_by_field_name("consequence"))
    left = step.child_by_field_name("left") if step is not None else None
    if left is None or left.type != "subscript_expression" or \
            text(left.child_by_field_name("argument")) != buf:
        raise Illegal(f"the tree does not combine `{buf}[tid]`", guard)
    found = _accumulation(step, _norm(left))
    if found is None or found[0].kind != op.kind:
        raise Illegal(f"the tree's step `{text(step)[:60]}` is not the loop's "
                      f"{op.kind}", step)
    other = strip(found[1])
    idx = other.child_by_field_name("indices") if other.type == "subscript_expression" else None
    parts = [t for _s, t in _terms(idx.named_children[0])] if idx is not None and \
        idx.named_children else []
    if text(other.child_by_field_name("argument")) != buf or len(parts) != 2 or \
            not any(plan.facts.is_thread(t, "x") for t in parts) or \
            not any(text(t) == k for t in parts):
        raise Illegal(f"the tree's step reads `{text(other)}`, not `{buf}[tid + {k}]`", step)


def _terms(node: Node) -> list[tuple[int, Node]]:
    from workbench.templater.analysis import terms

    return terms(node)


def _final_store(plan: Plan, final: Node, buf: str, op: Op,
                 result: Node | None = None) -> tuple[str, bool]:
    """The output thread 0 writes ``buf[0]`` into (directly, or through the ``result``
    local declared with it: :func:`_plain_tail`), and whether by an atomic."""
    value = f"{buf}[0]"
    if result is not None:
        name, _d, held = declared_name(result)
        if held is None or _norm(held) != value:
            raise Illegal(f"`{text(result)}` does not hold `{value}`, the tree's result", result)
        value = name
    cond = final.child_by_field_name("condition")
    c = binary(cond.named_children[0]) if cond is not None and cond.named_children else None
    if final.type != "if_statement" or c is None or c[1] != "==" or \
            not plan.facts.is_thread(c[0], "x") or int_value(c[2]) != 0 or \
            final.child_by_field_name("alternative") is not None:
        raise Illegal(f"the last statement `{text(final)[:60]}` is not thread 0's store",
                      final)
    expr = _expression(final.child_by_field_name("consequence"))
    if expr is None:
        raise Illegal("thread 0 does more than one store", final)
    if expr.type == "call_expression":
        func = text(expr.child_by_field_name("function"))
        args = expr.child_by_field_name("arguments")
        argv = [] if args is None else list(args.named_children)
        if func != ATOMICS[op.kind] or len(argv) != 2 or _norm(argv[1]) != value:
            raise Illegal(f"`{text(expr)}` is not {ATOMICS[op.kind]}(out, {value})", expr)
        target = strip(argv[0])
        if target.type == "pointer_expression":
            inner = strip(target.named_children[0]) if target.named_children else target
            if inner.type == "subscript_expression" and int_value(
                    inner.child_by_field_name("indices").named_children[0]) == 0:  # type: ignore[union-attr]
                target = strip(inner.child_by_field_name("argument"))  # type: ignore[arg-type]
        if target.type != "identifier" or not plan.pointer(text(target)):
            raise Illegal(f"`{text(argv[0])}` is not a kernel pointer argument", expr)
        return text(target), True
    left = expr.child_by_field_name("left")
    right = expr.child_by_field_name("right")
    idx = left.child_by_field_name("indices") if left is not None and \
        left.type == "subscript_expression" else None
    if expr.type != "assignment_expression" or text(expr.child_by_field_name("operator")) \
            != "=" or idx is None or not idx.named_children or \
            builtin(idx.named_children[0], "blockIdx") != "x" or right is None or \
            _norm(right) != value:
        raise Illegal(f"`{text(expr)}` is not `out[blockIdx.x] = {value}`", expr)
    out = text(left.child_by_field_name("argument"))  # type: ignore[union-attr]
    if not plan.pointer(out):
        raise Illegal(f"`{out}` is not a kernel pointer argument", expr)
    return out, False


