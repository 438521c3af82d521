"""CO_PER_THREAD: several output channels per thread for channel-mixing kernels, on the parse.

The family: a kernel whose output channel (or any output index) is a whole grid dimension,
``o = blockIdx.y`` (or ``z``) with no thread index along it, and whose inner loops (over
input channels and taps) accumulate products of a filter entry that depends on ``o`` and an
input value that does not. Known practice for such convolutions (and for GEMM-like
channel mixing) is register blocking over output channels: each thread computes ``CO``
output channels, so every input value it loads feeds ``CO`` accumulators instead of being
loaded again by ``CO`` blocks. The lift is offered only along a grid dimension whose
accumulation reads a thread-varying value that does not depend on it (the reuse it buys)
and reads what depends on it only at warp-uniform places (the channel picks the filter);
a dimension that would only reuse warp-uniform reads (a filter in ``__constant__`` memory,
already broadcast to the warp) is not lifted.

Dependence on ``o`` is computed on the parse (the locals assigned from ``o`` or from such a
local, or under a condition on them). The rewrite keeps every statement that does not
depend on ``o`` as written (it runs once per thread, as each of the ``CO`` threads ran it
before); a local that depends on ``o`` becomes an array of ``CO`` (registers: its loops are
``#pragma unroll`` over a compile-time count); a statement that depends on ``o`` runs in an
unrolled loop over ``q < CO`` at the place it was written, reading ``o + q``; the
``o``-independent reads in it (loads) are evaluated once before that loop. Per output
channel the statements run in the written order on the same values, so every output is the
same sum in the same order: bit for bit the kernel as written. The grid's dimension divides
by ``CO`` (the choices are the divisors of its literal extent, so no guard is needed);
``CO = 1`` is the kernel as written. A grid index that carries an outer index too (NCHW
batches: ``b = z / C``, ``o = z % C``, C a constant, the grid's extent a product with a
multiple of C) takes the divisors of C: a thread's ``CO`` consecutive channels never cross a
multiple of C, and the index reads ``b = z / (C / CO)``, ``o = z % (C / CO) * CO``. Where one thread takes all the channels, the first is
the constant 0. Two unroll knobs go with it (known practice for these loops; any value is
correct, 0 is the compiler's choice, as written): ``MIX_UNROLL`` on the outermost loop around
the accumulation (the input channels), ``TAP_UNROLL`` unrolling whole the loops of known
trips inside it (the taps); with both and a constant first channel, a filter indexed by the
loop counters is read at constant places (an operand of the multiply-add, no load). With
T_ITEMS (:mod:`.conv_mix_window`) the window's tap loop is unrolled whole in every config
(no knob: its slots are registers only at constant indices), and the loop around the taps
gets an interior copy without the items' checks and the padding tests, run by the threads
whose whole window passes them (:mod:`.conv_mix_interior`).

Legal only where the analysis shows (refusals name the line): ``blockIdx.d`` read once, in
the declaration of ``o`` (or, split, only as ``z / C`` and once as ``o``'s value ``z % C``
or ``z - q * C``, ``q`` = ``z / C`` or a local holding it, ``z`` the index or a local naming
it alone), never reassigned; no ``threadIdx.d``/``blockDim.d``/``gridDim.d``;
no shared memory, barrier, atomic or warp intrinsic; loop headers that do not depend on
``o``; no ``return``/``break``/``continue``/``goto`` leaving a statement that depends on
``o``; memory written only by statements that depend on ``o``, at places that do, and never
read by the kernel; calls in those statements pure (:mod:`.purity`); a local that depends on
``o`` declared once, one to a declaration, not ``auto``, not an array.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater import conv_mix_interior as interior
from workbench.templater.analysis import (
    JUMPS,
    LOOPS,
    binary,
    builtin,
    inside_loop,
    int_expr_value,
    line,
    mentions,
    shares_or_syncs,
    strip,
    text,
    walk,
)
from workbench.templater.conv_mix_window import CHOICES as T_CHOICES
from workbench.templater.conv_mix_window import KNOB as T_KNOB
from workbench.templater.conv_mix_window import Slide, find_slide
from workbench.templater.item_state import MAX_FULL_UNROLL, trip_count
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls, why_not_pure
from workbench.templater.regtile import Refused, fresh_names, render
from workbench.templater.rewrite import Rewriter, TextFn
from workbench.templater.rules import literal, scale_divisor

KNOB = "CO_PER_THREAD"
UNROLL = "MIX_UNROLL"
TAPS = "TAP_UNROLL"
#: Output channels per thread offered (those that divide the grid's extent): up to 16
#: accumulators per thread, the usual register-blocking range of channel-mixing kernels.
CHOICES = (1, 2, 4, 8, 16)
#: Registers a thread keeps besides the per-channel copies (addresses, loop state, the
#: loaded value): with ``MIN_BLOCKS_PER_SM`` capping registers, the copies must still fit.
_BASE_REGS = 24

_WARP = ("__shfl", "__ballot", "__any", "__all", "__activemask", "__syncwarp", "atomic",
         "__reduce")
_ASSIGN = ("assignment_expression", "update_expression")


@dataclass
class _Mix:
    """One grid dimension's analysis: the output-channel local and what depends on it."""

    dim: str
    use: Node  # the one blockIdx.d read
    decl: Node  # ``T o = blockIdx.d;``
    var: str
    dep: set[str]  # o and the locals that depend on it
    units: list[Node] = field(default_factory=list)  # statements run once per channel
    arrays: list[Node] = field(default_factory=list)  # declarations that become arrays
    role: str = "channel"  # what one copy is, in refusals ("item" along the sliding axis)
    split: _Split | None = None  # the grid index read as (outer, channel) = (z / C, z % C)


@dataclass
class _Split:
    """A grid index that carries two: ``z / C`` (an outer index, the image) and ``z % C``
    (the channel), C a constant. Blocks of ``CO`` consecutive channels (``CO`` dividing C)
    never cross a multiple of C, so the outer index is the same for a thread's channels."""

    channel: Node  # the one ``z % C``, the value of the channel's declaration
    outer: list[Node]  # every ``z / C``
    modulus: int
    index: str  # z as written: ``blockIdx.z`` or a local that only names it


def apply_channel_items(plan: Plan) -> bool:
    """CO_PER_THREAD along the first grid dimension (y, then z) of the family; False where
    none is (silently) or the analysis refused (noted with the line)."""
    for dim in ("y", "z"):
        g = "xyz".index(dim)
        if any(literal(b) != 1 for b in plan.block[g:]):
            continue  # threads along the channel's dimension (or past it): not the family
        mix = _candidate(plan, dim)
        if mix is None:
            continue
        try:
            emit = _analyse(plan, mix)
        except Refused as exc:
            plan.note(KNOB, False, exc.reason, exc.node)
            return False
        if emit is not None:
            emit()
            return True
    return False


def _candidate(plan: Plan, dim: str) -> _Mix | None:
    """The family's shape along ``dim``: ``T o = blockIdx.dim;`` read once (or ``T o = z %
    C;`` with every other read of the index ``z / C``), no thread or block extent along it,
    an accumulation in a loop that depends on ``o`` and reads a thread-varying value that
    does not."""
    g = "xyz".index(dim)
    if g >= len(plan.grid):
        return None
    body = plan.body
    uses = [n for n in walk(body) if n.type == "field_expression" and builtin(n, "blockIdx") == dim]
    if not uses or any(builtin(n, b) == dim for n in walk(body)
                       if n.type == "field_expression"
                       for b in ("threadIdx", "blockDim", "gridDim")):
        return None
    starts: list[tuple[Node, _Split | None]] = [(uses[0], None)] if len(uses) == 1 else []
    split = _split_reads(body, uses)
    if split is not None:
        starts.append((split.channel, split))
    for start, how in starts:
        mix = _channel_of(plan, dim, start, how)
        if mix is not None:
            return mix
    return None


def _split_reads(body: Node, uses: list[Node]) -> _Split | None:
    """The grid index read only as ``z / C`` and once as the channel, ``z % C`` or ``z - q *
    C`` (``q`` = ``z / C`` or a local holding it: ``z % C`` for ``z >= 0``), one constant
    C >= 2; ``z`` the index itself or a local declared from it alone and never assigned."""
    reads, index = uses, text(uses[0])
    if len(uses) == 1:
        alias = _value_parent(uses[0])
        if alias.type == "init_declarator" and alias.child_by_field_name("value") == \
                _value_top(uses[0]):
            name = _declared_name(alias)
            if name is None or _assigned(body, name):
                return None
            index = name
            reads = [n for n in walk(body) if n.type == "identifier" and text(n) == name
                     and not _is_declarator(n)]
    held = _held_quotients(body, reads)
    remainders = [found for r in reads
                  if (found := _remainder(_value_top(r), index, held)) is not None]
    channel = [op for op, _ in remainders]
    moduli = {m for _, m in remainders}
    outer: list[Node] = []
    for r in reads:
        if any(inside_node(r, c) for c in channel):
            continue  # z - (z / C) * C: the channel's own value
        top = _value_top(r)
        op = top.parent
        parts = binary(op) if op is not None else None
        if op is None or parts is None or parts[0] != top or parts[1] not in ("/", "%"):
            return None
        modulus = int_expr_value(parts[2])
        if modulus is None or modulus < 2:
            return None
        moduli.add(modulus)
        (channel if parts[1] == "%" else outer).append(op)
    if len(channel) != 1 or len(moduli) != 1:
        return None
    return _Split(channel[0], outer, moduli.pop(), index)


def _assigned(body: Node, name: str) -> bool:
    return any(_definition(n)[0] == name for n in walk(body) if n.type in _ASSIGN)


def _held_quotients(body: Node, reads: list[Node]) -> dict[str, int]:
    """The locals declared ``T q = z / C;`` and never assigned: name -> C."""
    out: dict[str, int] = {}
    for r in reads:
        top = _value_top(r)
        op = top.parent
        parts = binary(op) if op is not None else None
        if op is None or parts is None or parts[0] != top or parts[1] != "/":
            continue
        holder = _value_parent(op)
        name = _declared_name(holder) if holder.type == "init_declarator" and \
            holder.child_by_field_name("value") == _value_top(op) else None
        modulus = int_expr_value(parts[2])
        if name is not None and modulus is not None and not _assigned(body, name):
            out[name] = modulus
    return out


def _remainder(top: Node, index: str, held: dict[str, int]) -> tuple[Node, int] | None:
    """``z - q * C`` (or ``C * q``) around the read ``top``, ``q`` = ``z / C`` or a local
    holding it: (the difference, C)."""
    op = top.parent
    parts = binary(op) if op is not None else None
    if op is None or parts is None or parts[0] != top or parts[1] != "-":
        return None
    product = binary(parts[2])
    if product is None or product[1] != "*":
        return None
    for q, c in ((strip(product[0]), product[2]), (strip(product[2]), product[0])):
        modulus = int_expr_value(c)
        quotient = binary(q)
        if modulus is not None and modulus >= 2 and (
                (q.type == "identifier" and held.get(text(q)) == modulus) or
                (quotient is not None and quotient[1] == "/" and
                 text(strip(quotient[0])) == index and int_expr_value(quotient[2]) == modulus)):
            return op, modulus
    return None


def _multiple(expr: ast.expr, of: int) -> bool:
    """The grid's extent (the rules' language) is a multiple of ``of``: a literal one, or a
    product with such a factor."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int) and expr.value % of == 0
    return isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult) and (
        _multiple(expr.left, of) or _multiple(expr.right, of))


def _value_top(n: Node) -> Node:
    """``n`` with the parentheses and casts around it."""
    while n.parent is not None and n.parent.type in ("parenthesized_expression",
                                                     "cast_expression"):
        n = n.parent
    return n


def _value_parent(n: Node) -> Node:
    top = _value_top(n)
    return top.parent if top.parent is not None else top


def _declared_name(d: Node) -> str | None:
    name = d.child_by_field_name("declarator")
    return text(name) if name is not None and name.type == "identifier" else None


def _channel_of(plan: Plan, dim: str, start: Node, split: _Split | None) -> _Mix | None:
    """The family from the channel's read ``start`` (``blockIdx.dim``, or ``z % C``): its
    declaration ``T o = start;``, what depends on ``o``, and the reuse it buys."""
    body = plan.body
    decl = _value_parent(start)
    if decl is None or decl.type != "init_declarator" or decl.parent is None or \
            decl.parent.type != "declaration":
        return None
    name = decl.child_by_field_name("declarator")
    if name is None or name.type != "identifier":
        return None
    var = text(name)
    own = set(plan.facts.defs)
    dep = _closure(body, {var}, own, lambda n: False, control=True)
    # values, not control: a local assigned under `if (t < n)` holds the same value in
    # every thread that assigns it
    varying = _closure(body, set(), own, lambda n: builtin(n, "threadIdx") is not None,
                       control=False)
    # the reads of the innermost loop around an accumulation (its locals' values included)
    if not any(_reuse(_loop_of(s, body), dep, varying) for s in walk(body)
               if s.type == "expression_statement" and inside_loop(s, body) and mentions(s, dep)):
        return None
    return _Mix(dim, start, decl.parent, var, dep, split=split)


def _closure(body: Node, seed: set[str], own: set[str],
             root: Callable[[Node], bool], *, control: bool,
             skip: Node | None = None) -> set[str]:
    """The locals that depend on ``seed`` or on a node ``root`` accepts: assigned from such
    a value or (``control``) under a condition reading one."""
    found = set(seed)

    def hit(n: Node | None) -> bool:
        return n is not None and any((m.type == "identifier" and text(m) in found) or root(m)
                                     for m in walk(n))

    changed = True
    while changed:
        changed = False
        for n in walk(body):
            target, value = _definition(n)
            if target is None or target in found or target not in own:
                continue
            if hit(value) or (control and _controlled(n, body, hit, skip)):
                found.add(target)
                changed = True
    return found


def _definition(n: Node) -> tuple[str | None, Node | None]:
    """(local, the value it gets) for a declarator with a value or an assignment to a name."""
    if n.type == "init_declarator":
        d = n.child_by_field_name("declarator")
        while d is not None and d.type in ("pointer_declarator", "array_declarator"):
            d = d.child_by_field_name("declarator")
        return (text(d) if d is not None else None), n.child_by_field_name("value")
    if n.type in _ASSIGN:
        target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        if target is not None and target.type == "identifier":
            return text(target), n
        if target is not None and target.type == "subscript_expression":
            base = strip(target.child_by_field_name("argument") or target)
            if base.type == "identifier":  # a local array's element: the array's value
                return text(base), n
    return None, None


def _controlled(n: Node, body: Node, hit: Callable[[Node | None], bool],
                skip: Node | None = None) -> bool:
    up = n.parent
    while up is not None and up != body:
        if up == skip:
            up = up.parent
            continue
        if up.type in ("if_statement", "while_statement", "do_statement", "switch_statement") \
                and hit(up.child_by_field_name("condition")):
            return True
        if up.type == "for_statement" and any(
                hit(up.child_by_field_name(f)) for f in ("condition", "update", "initializer")):
            return True
        if up.type == "conditional_expression" and hit(up.child_by_field_name("condition")):
            return True
        up = up.parent
    return False


def _loop_of(n: Node, body: Node) -> Node:
    up = n.parent
    while up is not None and up != body and up.type not in LOOPS:
        up = up.parent
    return up if up is not None else body


def _reads(n: Node) -> list[Node]:
    """The memory reads in ``n``: subscripts and dereferences (assignment targets left out)."""
    out = []
    for m in walk(n):
        if m.type == "subscript_expression" or (m.type == "pointer_expression"
                                                and text(m).startswith("*")):
            parent = m.parent
            if parent is not None and parent.type in _ASSIGN and \
                    (parent.child_by_field_name("left") or
                     parent.child_by_field_name("argument")) == m:
                continue
            out.append(m)
    return out


def _reuse(stmt: Node, dep: set[str], varying: set[str]) -> bool:
    """``stmt`` reads thread-varying data that does not depend on the channel, and reads
    what does depend on it only at warp-uniform places: the channel picks the filter, the
    thread picks the data (a spatial axis on the grid, whose data reads follow it, is not
    the family)."""
    def thread_varying(r: Node) -> bool:
        return mentions(r, varying) or any(builtin(m, "threadIdx") is not None for m in walk(r))
    reads = _reads(stmt)
    return any(not mentions(r, dep) and thread_varying(r) for r in reads) and not any(
        mentions(r, dep) and thread_varying(r) for r in reads)


# -- the analysis -----------------------------------------------------------------------


def _analyse(plan: Plan, mix: _Mix) -> Callable[[], None] | None:
    body = plan.body
    if shares_or_syncs(body):
        raise Refused("the block shares memory or synchronises: a thread's channels would "
                      "change what its block shares", mix.decl)
    for n in walk(body):
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn.startswith(_WARP):
                raise Refused(f"`{fn}` combines threads (or memory) across the grid's "
                              f"{mix.dim}: not modelled", n)
    for n in walk(body):
        if n.type in _ASSIGN and text(n.child_by_field_name("left") or
                                      n.child_by_field_name("argument")) == mix.var:
            raise Refused(f"`{mix.var}` (blockIdx.{mix.dim}) is assigned again", n)
        if n.type == "declaration" and n != mix.decl and _declared(n) == mix.var:
            raise Refused(f"`{mix.var}` (blockIdx.{mix.dim}) is declared again", n)
    grid = plan.grid["xyz".index(mix.dim)]
    extent = literal(grid) if mix.split is None else mix.split.modulus
    if mix.split is not None and not _multiple(ast.parse(grid, mode="eval").body,
                                               mix.split.modulus):
        raise Refused(f"the grid's {mix.dim} `{grid}` is not a multiple of {extent} (the "
                      f"channel's `{text(mix.split.channel)}`): a block of channels could "
                      "cross into the next outer index", mix.decl)
    choices = [c for c in CHOICES if extent is not None and extent % c == 0]
    if extent is None or len(choices) < 2:
        raise Refused(f"the grid's {mix.dim} `{grid}` is no literal "
                      "with a divisor in 2..16: channels per thread could not divide it",
                      mix.decl)
    for stmt in _statements(body):
        _visit(plan, mix, stmt)
    _check_writes(plan, mix)
    names = fresh_names(plan, [KNOB, "wb_q", "wb_v", UNROLL, "wb_mix_unroll", TAPS, T_KNOB,
                               "wb_u", "wb_win", "wb_j", "wb_ur", interior.FLAG])
    try:
        slide = _slide(plan, mix)
    except Refused as exc:
        plan.note(T_KNOB, False, exc.reason, exc.node)
        slide = None

    def emit() -> None:
        _emit(plan, mix, names, extent, choices, slide)
    return emit


def _slide(plan: Plan, mix: _Mix) -> tuple[Slide, _Mix] | None:
    """T_ITEMS along the sliding axis (:mod:`.conv_mix_window`): its analysis and the
    statements that run per item (sorted as the channels' are)."""
    own = set(plan.facts.defs)
    stmts = _statements(plan.body)
    decls = [s for s in stmts if s.type == "declaration"]
    var = None
    for d in decls:
        if any(builtin(n, "threadIdx") == "x" for n in walk(d) if n.type == "field_expression"):
            var = _declared(d)
            break
    if var is None:
        return None
    slide = find_slide(plan, lambda v, check: _closure(plan.body, {v}, own, lambda n: False,
                                                        control=True, skip=check))
    if slide is None:
        return None
    dep = slide.dep
    if slide.var != var:
        return None
    if mix.var in dep or var in mix.dep:
        raise Refused(f"the channel `{mix.var}` and the sliding index `{var}` depend on each "
                      "other", slide.decl)
    slide.require_grid(plan)
    axis = _Mix("x", slide.decl, slide.decl, var, dep, role="item")
    for s in slide.region:
        _visit(plan, axis, s)
    _check_writes(plan, axis)
    if any(inside_node(slide.loop, u) for u in axis.units):
        raise Refused("the tap loop runs inside a statement that depends on the sliding "
                      f"index `{var}`: the window would be loaded per item", slide.loop)
    return slide, axis


def _statements(block: Node) -> list[Node]:
    return [c for c in block.named_children if c.type != "comment"]


def _visit(plan: Plan, mix: _Mix, stmt: Node) -> None:
    """Sort ``stmt`` into kept, per-channel (``units``) and array declarations."""
    if not mentions(stmt, mix.dep):
        return
    if stmt.type == "compound_statement":
        for s in _statements(stmt):
            _visit(plan, mix, s)
    elif stmt.type == "declaration":
        if stmt == mix.decl:
            return
        _array_decl(plan.body, mix, stmt)
    elif stmt.type == "expression_statement":
        _unit(plan, mix, stmt)
    elif stmt.type == "if_statement":
        cond = stmt.child_by_field_name("condition")
        if cond is not None and mentions(cond, mix.dep):
            _unit(plan, mix, stmt)  # under a condition on the channel: all of it per channel
            return
        for part in ("consequence", "alternative"):
            sub = stmt.child_by_field_name(part)
            if sub is not None and sub.type == "else_clause":
                sub = next((c for c in sub.named_children if c.type != "comment"), None)
            if sub is not None:
                _visit(plan, mix, sub)
    elif stmt.type in LOOPS:
        for part in ("condition", "initializer", "update"):
            head = stmt.child_by_field_name(part)
            if head is not None and mentions(head, mix.dep):
                raise Refused(f"the loop's {part} `{text(head)[:50]}` depends on the "
                              f"{mix.role} `{mix.var}`: the {mix.role}s of a thread would loop "
                              "differently",
                              stmt)
        sub = stmt.child_by_field_name("body")
        if sub is not None:
            _visit(plan, mix, sub)
    else:
        raise Refused(f"a `{stmt.type.replace('_', ' ')}` that depends on the {mix.role} "
                      f"`{mix.var}` is not modelled", stmt)


def _array_decl(body: Node, mix: _Mix, decl: Node) -> None:
    declarators = decl.children_by_field_name("declarator")
    if len(declarators) != 1:
        raise Refused(f"a declaration of several locals that depend on the {mix.role}", decl)
    d = declarators[0]
    inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    if inner is None or inner.type not in ("identifier", "pointer_declarator") or any(
            c.type == "type_qualifier" for c in walk(inner)):
        raise Refused(f"`{text(decl)[:60]}` depends on the {mix.role} and is not a plain "
                      "local (an array or a const pointer)", decl)
    typ = decl.child_by_field_name("type")
    if typ is None or text(typ) == "auto" or any(
            text(c) in ("static", "extern", "constexpr") for c in decl.children):
        raise Refused(f"`{text(decl)[:60]}` depends on the {mix.role}: an `auto`, static or "
                      f"constexpr local cannot become one copy per {mix.role}", decl)
    name = _declared(decl)
    if sum(1 for n in walk(body) if n.type == "declaration" and
           _declared(n) == name) > 1:
        raise Refused(f"`{name}` is declared more than once", decl)
    mix.arrays.append(decl)


def _unit(plan: Plan, mix: _Mix, stmt: Node) -> None:
    """``stmt`` runs once per channel: it must not leave itself, and its calls are pure."""
    for n in walk(stmt):
        if n.type in JUMPS and (n.type in ("return_statement", "goto_statement") or
                                   not _loop_inside(n, stmt)):
            raise Refused(f"`{text(n)}` under the {mix.role}'s statement would leave the loop "
                          f"over its {mix.role}s", n)
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn not in pure_calls(plan.source):
                raise Refused(f"a call of {why_not_pure(plan.source, fn)} would run once per "
                              f"{mix.role}, in another order", n)
    mix.units.append(stmt)


def _loop_inside(n: Node, top: Node) -> bool:
    up = n.parent
    while up is not None and up != top:
        if up.type in (*LOOPS, "switch_statement"):
            return True
        up = up.parent
    return False


def _local_arrays(plan: Plan) -> set[str]:
    return {text(n.child_by_field_name("declarator")) for n in walk(plan.body)
            if n.type == "array_declarator"}


def _check_writes(plan: Plan, mix: _Mix,
                  depends: Callable[[Node], bool] | None = None) -> None:
    """Memory is written only per channel (the mix's role), at places that depend on it
    (``depends``; by default, places that mention the mix's dependents), and never read."""
    depends = depends or (lambda target: mentions(target, mix.dep))
    local = _local_arrays(plan) | {d.name for d in plan.facts.defs.values() if not d.is_pointer}
    written: set[str] = set()
    for n in walk(plan.body):
        if n.type not in _ASSIGN:
            continue
        target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        if target is None or target.type == "identifier":
            continue
        base = _roots(plan, target)
        if base and base <= local:
            continue  # a local array of the thread
        if not any(inside_node(n, u) for u in mix.units):
            raise Refused(f"`{text(n)[:60]}` writes memory once per thread, not per "
                          f"{mix.role}: the write does not depend on the {mix.role}", n)
        if not depends(target):
            raise Refused(f"`{text(target)[:60]}` is written at a place that does not depend "
                          f"on the {mix.role} `{mix.var}`: every {mix.role} would write it", n)
        written |= base - local
    for r in _reads(plan.body):
        if _roots(plan, r) & written:
            raise Refused(f"`{text(r)[:60]}` reads memory the kernel writes: another "
                          f"block's {mix.role}s would see it in another order", r)


def _roots(plan: Plan, target: Node, depth: int = 0) -> set[str]:
    """The pointer parameters and local names ``target`` reaches through its base."""
    out: set[str] = set()
    for n in walk(target):
        if n.type != "identifier":
            continue
        name = text(n)
        d = plan.facts.defs.get(name)
        if d is not None and d.is_pointer and d.value is not None and depth < 6:
            out |= _roots(plan, d.value, depth + 1)
        if plan.pointer(name) or name in plan.facts.defs:
            out.add(name)
    return out


def inside_node(n: Node, outer: Node) -> bool:
    return outer.start_byte <= n.start_byte and n.end_byte <= outer.end_byte


# -- the rewrite ------------------------------------------------------------------------


def _hoists(mix: _Mix, stmt: Node, skip: Node | None = None) -> list[Node]:
    """The maximal channel-independent reads of an expression statement's value that run
    unconditionally: loaded once, before the loop over the channels (``skip``, the read the
    window replaces, left out)."""
    if stmt.type != "expression_statement":
        return []
    expr = stmt.named_children[0] if stmt.named_children else None
    if expr is None or expr.type != "assignment_expression":
        return []
    value = expr.child_by_field_name("right")
    out: list[Node] = []

    def visit(n: Node) -> None:
        if skip is not None and inside_node(skip, n):
            if n != skip:
                for c in n.named_children:
                    visit(c)
            return
        if not mentions(n, mix.dep) and _reads(n) and not any(
                m.type in ("call_expression", *_ASSIGN, "comma_expression") for m in walk(n)) \
                and n.type not in ("identifier", "number_literal"):
            out.append(n)
            return
        if n.type == "conditional_expression":
            cond = n.child_by_field_name("condition")
            if cond is not None:
                visit(cond)
            return  # a branch runs only when chosen
        if n.type == "binary_expression" and text(n.child_by_field_name("operator")) in \
                ("&&", "||"):
            left = n.child_by_field_name("left")
            if left is not None:
                visit(left)
            return
        if n.type == "call_expression":
            return
        for c in n.named_children:
            visit(c)

    if value is not None:
        visit(value)
    return out


def _emit(plan: Plan, mix: _Mix, n: dict[str, str], extent: int, choices: list[int],
          slide: tuple[Slide, _Mix] | None = None) -> None:
    co, q = n[KNOB], n["wb_q"]
    loop = f"\n#pragma unroll\n  for (int {q} = 0; {q} < {co}; ++{q})"
    # all the channels in one thread: the first is 0, a constant, so a filter indexed by
    # it at unrolled loop counters is read at constant places (an operand, no load)
    split = mix.split
    if split is None:
        plan.rw.replace(mix.use, f"({co} == {extent} ? 0 : blockIdx.{mix.dim} * {co})")
    else:  # the thread's first channel and the outer index over extent / co groups a z
        groups = f"({extent} / {co})"
        plan.rw.replace(mix.use, f"({co} == {extent} ? 0 : {split.index} % {groups} * {co})")
        for outer in split.outer:
            plan.rw.replace(outer, f"({split.index} / {groups})")
    if slide is not None:
        count, edges = _emit_both(plan, mix, slide, n, loop)
    else:
        count, edges = _emit_channels(plan, mix, n, loop), None
    _emit_tail(plan, mix, n, extent, choices, slide, count, edges)


def _emit_channels(plan: Plan, mix: _Mix, n: dict[str, str], loop: str) -> int:
    co, q, v = n[KNOB], n["wb_q"], n["wb_v"]
    arrays = {_declared(d) for d in mix.arrays}
    for scope in [*mix.units, *mix.arrays]:
        for ident in walk(scope):
            if ident.type != "identifier":  # a member's name is a field_identifier
                continue
            if scope in mix.arrays and _is_declarator(ident):
                continue
            if text(ident) == mix.var:
                plan.rw.replace(ident, f"({mix.var} + {q})")
            elif text(ident) in arrays:
                plan.rw.replace(ident, f"{text(ident)}[{q}]")
    count = 0
    for unit in mix.units:
        hoisted = _hoists(mix, unit)
        names = [f"{v}{count + i}" for i in range(len(hoisted))]
        count += len(hoisted)
        for h, name in zip(hoisted, names, strict=True):
            plan.rw.replace(h, name)
        plan.rw.replace_span(unit.start_byte, unit.end_byte,
                             make=_unit_text(unit, list(zip(hoisted, names, strict=True)), loop))
    for decl in mix.arrays:
        plan.rw.replace_span(decl.start_byte, decl.end_byte, make=_array_text(decl, co, q, loop))
    return count


def _emit_tail(plan: Plan, mix: _Mix, n: dict[str, str], extent: int, choices: list[int],
               slide: tuple[Slide, _Mix] | None, count: int,
               edges: interior.Copy | None = None) -> None:
    co = n[KNOB]
    arrays = {_declared(d) for d in mix.arrays}
    g = "xyz".index(mix.dim)
    grid = plan.grid[g]
    plan.grid[g] = f"{extent} // {co}" if mix.split is None else \
        f"{grid if grid.isidentifier() else f'({grid})'} // {co}"
    plan.add_param(co, {"kind": "choice", "values": choices, "default": 1,
                        "description": f"output channels per thread along grid {mix.dim} "
                                       "(each input value loaded once feeds them all; as "
                                       "written: 1)"},
                   f"{line(mix.decl)}: {text(mix.decl)[:60]}")
    if plan.launch_bounds is not None and not _author_minimum(plan):
        threads = plan.launch_bounds if " " not in plan.launch_bounds else \
            f"({plan.launch_bounds})"
        per = len(arrays)
        if slide is None:
            plan.constrain(f"MIN_BLOCKS_PER_SM == 0 or {threads} * MIN_BLOCKS_PER_SM * "
                           f"({per} * {co} + {_BASE_REGS}) <= 65536")
        else:
            # the register cap of __launch_bounds__ (BLOCK threads, or a minimum of blocks)
            # must hold the copies and the window. ptxas splits an SM's 65536 registers over
            # its 4 quarters, a warp in one: the cap is 512 / ceil(threads / 128) (320
            # threads: 168). 8 items over 1024 threads (64 registers) spilled, at 768 (80)
            # not; 16 channels x 4 items under 128 spilled, 16 x 8 under 256 not (ptxas -v,
            # sm_90)
            regs = f"{_slide_regs(mix, slide, co, n[T_KNOB])} + {_BASE_REGS}"
            plan.constrain(f"({threads} + 127) // 128 * 128 * ({regs}) <= 65536")
            plan.constrain(f"MIN_BLOCKS_PER_SM == 0 or ({threads} * MIN_BLOCKS_PER_SM + 127) "
                           f"// 128 * 128 * ({regs}) <= 65536")
    if slide is not None:
        _slide_param(plan, slide, n[T_KNOB])
    _unroll_knob(plan, mix, n[UNROLL], n["wb_mix_unroll"],
                 (edges, slide[0].loop) if edges is not None and slide is not None else None)
    _tap_knob(plan, mix, n[TAPS], slide[0].loop if slide is not None else None)
    plan.note(KNOB, True, f"`{mix.var}` = {text(mix.use)} is the output channel: "
              f"{len(mix.units)} statement(s) run per channel, {len(arrays)} local(s) become "
              f"one copy per channel, {count} read(s) loaded once for all channels; grid "
              f"{mix.dim} = {plan.grid[g]}", mix.decl)


def _unroll_knob(plan: Plan, mix: _Mix, name: str, const: str,
                 edges: tuple[interior.Copy, Node] | None = None) -> None:
    """MIX_UNROLL: ``#pragma unroll (N)`` on the outermost loop around the channels'
    accumulation (the input channels' loop of a convolution; known practice: unrolled
    channel and tap loops put the filter reads at constant offsets). 0 leaves the compiler's
    choice, as written; any value is correct. nvcc reads a constexpr there, not a macro.

    ``edges``: the loop has an interior copy (:mod:`.conv_mix_interior`; with the tap loop
    inside it): the knob unrolls that copy, and the general one, run only by the threads
    whose window crosses the signal's ends, keeps ``#pragma unroll 1`` (unrolled it would
    buy nothing and double the code ptxas compiles: 16 channels unrolled 16 times took
    ptxas twice as long)."""
    loops = [_outermost_loop(u, plan.body) for u in mix.units]
    loop = next((lp for lp in loops if lp is not None), None)
    if loop is None:
        return
    prev = loop.prev_sibling
    if prev is not None and prev.type in ("preproc_call", "comment") and \
            text(prev).startswith("#pragma") and "unroll" in text(prev):
        plan.note(UNROLL, False, "the loop has its own #pragma unroll", loop)
        return
    # unrolled 8 or more trips keep that many loads in flight: ptxas -v spilled them at its
    # own register choice (MIN_BLOCKS_PER_SM 0: 32 registers at blocks of 224 to 1024
    # threads) and under caps of 64; so they come with a cap of 128 or more registers
    # (MIN_BLOCKS_PER_SM set, at most 512 threads an SM), where none spilled
    budget = plan.launch_bounds is not None and not _author_minimum(plan)
    values = [0, 1, 2, 4, 8] if budget else [0, 1, 2, 4]
    trips = trip_count(loop)
    if budget and trips is not None and 8 < trips <= MAX_FULL_UNROLL:
        values.append(trips)  # the whole loop
    plan.helper(f"constexpr int {const} = {name};  // #pragma unroll reads a constant, "
                "not a macro")
    knob = f"\n#if {name} > 0\n#pragma unroll ({const})\n#endif\n"
    if edges is not None and edges[1] != loop:
        copy = edges[0]

        def pragma(_rw: Rewriter) -> str:
            return knob if copy.interior else "\n#pragma unroll 1\n"
        plan.rw.replace_span(loop.start_byte, loop.start_byte, make=pragma)
    else:
        plan.rw.insert(loop.start_byte, knob)
    plan.add_param(name, {"kind": "choice", "values": values, "default": 0,
                          "description": "unroll factor of the loop around the channels' "
                                         "accumulation (0: the compiler's choice, as written)"},
                   f"{line(loop)}: {text(loop).splitlines()[0][:60]}")
    if budget:
        assert plan.launch_bounds is not None
        threads = plan.launch_bounds if " " not in plan.launch_bounds else \
            f"({plan.launch_bounds})"
        plan.constrain(f"{name} < 8 or (MIN_BLOCKS_PER_SM > 0 and {threads} * "
                       "MIN_BLOCKS_PER_SM <= 512)")
    plan.note(UNROLL, True, "unroll factor of the loop around the channels' accumulation "
              "(any value is correct)", loop)


def _tap_knob(plan: Plan, mix: _Mix, name: str, window: Node | None = None) -> None:
    """TAP_UNROLL: 1 unrolls whole the loops inside the outermost one around the channels'
    accumulation (the taps) whose trips are known and few: with them and the channel loop
    unrolled, a filter indexed by loop counters and a constant channel is read at constant
    places. 0 leaves the compiler's choice, as written; any value is correct.

    A sliding window's tap loop (``window``) is unrolled whole in every config, no knob:
    the window's slots are registers only at constant indices, and a K-tap loop of few
    known trips unrolled whole (its slot and filter offsets constants) is the family's known
    practice, so the choice would only double the space the tuner searches."""
    inner: list[Node] = []
    for u in mix.units:
        outer = _outermost_loop(u, plan.body)
        up = u.parent
        while up is not None and up != outer:
            trips = trip_count(up) if up.type == "for_statement" else None
            prev = up.prev_sibling
            own = prev is not None and prev.type in ("preproc_call", "comment") and \
                text(prev).startswith("#pragma")
            if trips is not None and 1 < trips <= MAX_FULL_UNROLL and not own and up not in inner:
                inner.append(up)
            up = up.parent
    if window is not None and window in inner:
        inner.remove(window)
        plan.rw.insert(window.start_byte, "\n#pragma unroll\n")
    if not inner:
        return
    for loop in inner:
        plan.rw.insert(loop.start_byte, f"\n#if {name}\n#pragma unroll\n#endif\n")
    plan.add_param(name, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: the tap loops inside the channel loop unrolled "
                                         "whole (0: the compiler's choice, as written)"},
                   f"{line(inner[0])}: {text(inner[0]).splitlines()[0][:60]}")
    plan.note(TAPS, True, f"{len(inner)} loop(s) of known trips inside the channel loop "
              "unrolled whole at 1 (any value is correct)", inner[0])


def _outermost_loop(n: Node, body: Node) -> Node | None:
    found = None
    up = n.parent
    while up is not None and up != body:
        if up.type in LOOPS:
            found = up
        up = up.parent
    return found


def _author_minimum(plan: Plan) -> bool:
    """The kernel's own ``__launch_bounds__`` gives a minimum of blocks (no MIN_BLOCKS_PER_SM
    is lifted then)."""
    fn = plan.source.function_node(plan.kernel)
    bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
    return bounds is not None and len(bounds.named_children) > 1


def _is_declarator(ident: Node) -> bool:
    up = ident.parent
    while up is not None and up.type == "pointer_declarator":
        up = up.parent
    return up is not None and up.type == "init_declarator" and \
        up.child_by_field_name("declarator") in (ident, ident.parent)


def _declared(decl: Node) -> str:
    d = decl.child_by_field_name("declarator")
    return next(text(n) for n in walk(d) if n.type == "identifier") if d is not None else ""


def _unit_text(unit: Node, hoisted: list[tuple[Node, str]], loop: str) -> TextFn:
    def make(rw: Rewriter) -> str:
        loads = "".join(f"const auto {name} = {rw.render(h.start_byte, h.end_byte)}; "
                        for h, name in hoisted)
        return f"{{ {loads}{loop} {{ {_inside(rw, unit)} }}\n  }}"
    return make


def _inside(rw: Rewriter, unit: Node) -> str:
    """``unit``'s text with the edits inside it, but not the insertions at its two ends:
    those stand before or after it (the window's closing brace where ``unit`` is the tap
    loop's whole body, ``for (...) acc += ...;``), and the text around the unit's
    replacement renders them once already."""
    with rw.keeping(lambda e: e.start != e.end or e.start not in (unit.start_byte,
                                                                  unit.end_byte)):
        return rw.render(unit.start_byte, unit.end_byte)


def _local_parts(decl: Node) -> tuple[str, Node, Node | None, str]:
    """A local's declaration split for copies: its type (``const`` dropped unless it
    declares a pointer: the copies are set one by one), its declarator without the value,
    the value (None: none) and the name."""
    d = decl.child_by_field_name("declarator")
    assert d is not None
    inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    value = d.child_by_field_name("value") if d.type == "init_declarator" else None
    assert inner is not None
    pointer = inner.type == "pointer_declarator"
    typ = " ".join(text(c) for c in decl.children
                   if c != d and c.type != ";" and (pointer or text(c) != "const"))
    return typ, inner, value, _declared(decl)


def _array_text(decl: Node, co: str, q: str, loop: str) -> TextFn:
    def make(rw: Rewriter) -> str:
        typ, inner, value, name = _local_parts(decl)
        shape = text(inner).replace(name, f"{name}[{co}]", 1)
        head = f"{typ} {shape};"
        if value is None:
            return head
        return f"{head}{loop} {name}[{q}] = {rw.render(value.start_byte, value.end_byte)};\n"
    return make


# -- T_ITEMS with the channels (:mod:`.conv_mix_window`) ---------------------------------


def _emit_both(plan: Plan, mix: _Mix, both: tuple[Slide, _Mix], n: dict[str, str],
               loop: str) -> tuple[int, interior.Copy | None]:
    """The channels' rewrite with the sliding axis's items: a statement that depends on the
    item runs per item ``u`` under the item's own check, one that depends on the channel per
    channel ``q`` inside it; a local gets one copy per channel and/or item."""
    slide, axis = both
    co, q, v, ti, u = n[KNOB], n["wb_q"], n["wb_v"], n[T_KNOB], n["wb_u"]
    chans = {_declared(d) for d in mix.arrays}
    items = {_declared(d) for d in axis.arrays}
    data = plan.source.data
    live = _live(data, slide, lambda: f"({slide.var} * {ti} + {u})")
    copy = interior.Copy()
    per_item = f"\n#pragma unroll\n  for (int {u} = 0; {u} < {ti}; ++{u})"
    # the check at the thread's first item guards the rest (it bounds from above)
    for ident in walk(slide.cond):
        if ident.type == "identifier" and text(ident) == slide.var:
            plan.rw.replace(ident, f"({slide.var} * {ti})")
    done: set[tuple[int, int]] = set()
    for scope in [*mix.units, *mix.arrays, *axis.units, *axis.arrays]:
        for ident in walk(scope):
            key = (ident.start_byte, ident.end_byte)
            if ident.type != "identifier" or key in done:
                continue
            name = text(ident)
            if name in chans | items and _is_declarator(ident):
                continue
            if name == mix.var:
                new = f"({mix.var} + {q})"
            elif name == slide.var:
                new = f"({slide.var} * {ti} + {u})"
            elif name in chans | items:
                new = name + (f"[{q}]" if name in chans else "") + \
                    (f"[{u}]" if name in items else "")
            else:
                continue
            done.add(key)
            plan.rw.replace(ident, new)
    plan.rw.replace(slide.read, f"{n['wb_win']}[{u} + ({slide.k}) - ({slide.lo})]")
    count = 0
    item_ids = {(x.start_byte, x.end_byte) for x in axis.units}
    for unit in mix.units:
        hoisted = _hoists(mix, unit, slide.read)
        names = [f"{v}{count + i}" for i in range(len(hoisted))]
        count += len(hoisted)
        for h, name in zip(hoisted, names, strict=True):
            plan.rw.replace(h, name)
        make = _unit_text(unit, list(zip(hoisted, names, strict=True)), loop)
        if (unit.start_byte, unit.end_byte) in item_ids:
            make = _per_item(make, per_item, live, copy)
        plan.rw.replace_span(unit.start_byte, unit.end_byte, make=make)
    chan_ids = {(x.start_byte, x.end_byte) for x in mix.units}
    for unit in axis.units:
        if (unit.start_byte, unit.end_byte) not in chan_ids:
            plan.rw.replace_span(unit.start_byte, unit.end_byte, make=_per_item(
                _plain(unit), per_item, live, copy))
    decls = {(d.start_byte, d.end_byte): d for d in [*mix.arrays, *axis.arrays]}
    for decl in decls.values():
        plan.rw.replace_span(decl.start_byte, decl.end_byte, make=_array_both(
            decl, (co if _declared(decl) in chans else "", ti if _declared(decl) in items
                   else ""), (loop, q), (per_item, u, live), copy))
    outer = _outermost_loop(slide.loop, plan.body) or slide.loop
    why = interior.refusal(plan, slide, outer, mix.dep)
    if why is not None:
        plan.note(interior.NOTE, False, why[0], why[1])
    else:
        head, checks = _slots(plan, slide, n)
        interior.open_copies(plan, slide, outer, copy, n[interior.FLAG], head, checks)
    _window_text(plan, slide, n, copy)
    if why is not None:
        return count, None
    interior.close_copies(plan, outer, copy)
    plan.note(interior.NOTE, True, "the loop around the taps runs without the items' "
              "checks and the reads' conditions where every slot of the thread's window "
              "passes them (a test per thread before it)", outer)
    return count, copy


def _live(data: bytes, slide: Slide, at: Callable[[], str]) -> str:
    """The item's own check: the bounds check at ``at()`` (negated where it leaves)."""
    c = render(data, slide.cond, lambda m: at() if m.type == "identifier" and
               text(m) == slide.var else None)
    return f"!({c})" if slide.exits else f"({c})"


def _plain(unit: Node) -> TextFn:
    def make(rw: Rewriter) -> str:
        return _inside(rw, unit)
    return make


def _per_item(inner: TextFn, per_item: str, live: str, copy: interior.Copy) -> TextFn:
    """``inner`` per item under the item's check (known true in the interior copy)."""
    def make(rw: Rewriter) -> str:
        if copy.interior:
            return f"{{ {per_item} {{ {{ {inner(rw)} }} }}\n  }}"
        return f"{{ {per_item} {{ if ({live}) {{ {inner(rw)} }} }}\n  }}"
    return make


def _array_both(decl: Node, dims: tuple[str, str], chan: tuple[str, str],
                item: tuple[str, str, str], copy: interior.Copy) -> TextFn:
    """A local with one copy per channel and/or item, its value set per copy."""
    def make(rw: Rewriter) -> str:
        typ, inner, value, name = _local_parts(decl)
        extent = "".join(f"[{x}]" for x in dims if x)
        index = (f"[{chan[1]}]" if dims[0] else "") + (f"[{item[1]}]" if dims[1] else "")
        head = f"{typ} {text(inner).replace(name, name + extent, 1)};"
        if value is None:
            return head
        body = f"{name}{index} = {rw.render(value.start_byte, value.end_byte)};"
        if dims[0]:
            body = f"{chan[0]} {{ {body} }}\n"
        if dims[1]:
            check = "" if copy.interior else f"if ({item[2]}) "
            body = f"{item[0]} {{ {check}{{ {body} }} }}\n"
        return f"{head}{body}"
    return make


def _window_text(plan: Plan, slide: Slide, n: dict[str, str], copy: interior.Copy) -> None:
    """Before the tap loop: the window's slots, each loaded where the first item that reads
    it is live and passes the read's conditions (those of the kernel as written); in the
    interior copy (:mod:`.conv_mix_interior`) every slot passes them."""
    ti, win, j = n[T_KNOB], n["wb_win"], n["wb_j"]
    head, checks = _slots(plan, slide, n)
    read = render(plan.source.data, slide.read, slide.at(plan.source.data, f"({slide.var} * {n[T_KNOB]} + {n['wb_ur']})"))

    def make(_rw: Rewriter) -> str:
        load = f"    {win}[{j}] = {read};\n" if copy.interior else (
            f"    {win}[{j}] = ({slide.elem})0;\n    if ({checks}) {win}[{j}] = {read};\n")
        return (f"{{  // {slide.count} + {ti} - 1 inputs feed the {ti} items: each loaded "
                f"once\n  {slide.elem} {win}[{ti} + {slide.count - 1}];\n{head}{load}  }}\n")
    plan.rw.replace_span(slide.loop.start_byte, slide.loop.start_byte, make=make)
    plan.rw.insert(slide.loop.end_byte, "\n  }")


def _slots(plan: Plan, slide: Slide, n: dict[str, str]) -> tuple[str, str]:
    """The loop over the window's slots up to its body (the slot's first item ``ur`` and
    tap declared), and the checks a slot's load is made under."""
    data = plan.source.data
    ti, j, ur = n[T_KNOB], n["wb_j"], n["wb_ur"]
    last = slide.count - 1
    sub = slide.at(plan.source.data, f"({slide.var} * {n[T_KNOB]} + {n['wb_ur']})")
    checks = [_live(data, slide, lambda: f"({slide.var} * {ti} + {ur})")]
    checks += [f"({render(data, c, sub)})" if holds else f"!({render(data, c, sub)})"
               for c, holds in slide.conds]
    head = (f"#pragma unroll\n  for (int {j} = 0; {j} < {ti} + {last}; ++{j}) {{\n"
            f"    const int {ur} = {j} > {last} ? {j} - {last} : 0;  // the first item "
            "reading it\n"
            f"    const {slide.k_type} {slide.k} = ({slide.lo}) + {j} - {ur};\n")
    return head, " && ".join(checks)


def _slide_regs(mix: _Mix, both: tuple[Slide, _Mix], co: str, ti: str) -> str:
    """Registers the copies and the window hold: the register budget of a capped thread.
    A window slot counts twice (its value and its guarded load's address in flight), a
    channel twice (its filter's place and the weight loaded for the tap)."""
    slide, axis = both
    chans = {_declared(d) for d in mix.arrays}
    items = {_declared(d) for d in axis.arrays}
    terms = [f"{co} * {ti}" if x in chans and x in items else co if x in chans else ti
             for x in sorted(chans | items)]
    return " + ".join([*terms, f"2 * ({ti} + {slide.count - 1})", f"2 * {co}"])


def _slide_param(plan: Plan, both: tuple[Slide, _Mix], ti: str) -> None:
    slide, axis = both
    block = plan.block[0]
    scaled = scale_divisor(plan.grid[0], block, f"{block} * {ti}")
    assert scaled is not None  # checked by the analysis
    plan.grid[0] = scaled
    plan.add_param(ti, {"kind": "choice", "values": list(T_CHOICES), "default": 1,
                        "description": f"consecutive outputs along {slide.var} per thread; "
                                       f"the {slide.count} + {ti} - 1 inputs their taps read "
                                       "are loaded once per window (as written: 1)"},
                   f"{line(slide.decl)}: {text(slide.decl)[:60]}")
    plan.note(T_KNOB, True, f"`{slide.var}` slides: {len(axis.units)} statement(s) run per "
              f"item, {len(axis.arrays)} local(s) become one copy per item, "
              f"`{text(slide.read)[:50]}` read through a window of {slide.count} + {ti} - 1 "
              f"values; grid x = {plan.grid[0]}", slide.loop)
