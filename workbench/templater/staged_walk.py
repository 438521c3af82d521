"""JSPLIT: rows of threads split the walk of a staged tile (issue 28: nbody_accel).

The staged walk: a block stages a tile of an input range in ``__shared__`` memory (each
thread loads its element, a barrier), every thread walks the whole tile updating its own
running sums, a barrier, the next tile; after the last one each thread stores its outputs.
An all-pairs force, a potential, a kernel-density sum, a GEMV with x staged all read so::

    for (int base = 0; base < n; base += B) {
      tile[threadIdx.x] = base + threadIdx.x < n ? x[base + threadIdx.x] : pad;  // load
      __syncthreads();
      for (int k = 0; k < B; ++k) { ...; ax += term(tile[k]); }                 // walk
      __syncthreads();
    }

With few outputs (8192 bodies, 256 threads a block: 32 blocks on 132 SMs) the GPU idles.
``JSPLIT`` launches ``(BLOCK_THREADS, JSPLIT)`` threads: each row of the block runs the
kernel's loop body as written over its own tile of ``B`` elements (a slice of a shared array
``JSPLIT`` times as long) starting ``threadIdx.y * B`` on, the loop stepping
``B * JSPLIT``; a row whose tile starts past the end loads and walks nothing (the kernel as
written never reached it), but meets both barriers (``JSPLIT == 1 ||`` keeps the test off
the kernel as written). After the walk, rows 1.. hand their
sums to row 0 one row at a time, in row order, through shared memory, and only row 0 runs
what follows the loop (the stores). ``JSPLIT = 1`` is the kernel as written.

Legal only where the analysis shows (else refused with the line and the reason): a block
of one dimension whose size was lifted (``BLOCK_THREADS``; nothing else lifted but UNROLL
and BRANCHLESS, an ``if`` of the walk computed both ways: sph_lambda_struct's spline),
reading no ``threadIdx.y``/``z`` or ``blockDim.y``/``z``, no dynamic shared memory, no
atomics and no ``return`` before the walk's end; every ``__shared__`` array declared at the
top of the body, of one dimension; one loop at the top level ``for (T v = S; v < E; v +=
B)`` with ``B`` a constant or ``blockDim.x``, every shared array ``B`` long in every config
(both the block's size as lifted, or both one constant), ``E`` read from the parameters,
``v`` written only there, its body the load, a barrier, the walk, a barrier (names the load
declares are not read by the walk); the load writes only the shared arrays and its own
names; the walk writes only its own names and the running sums, each a local declared
before the loop as ``T s = 0`` (float, double or an integer), not written between there
and the loop, updated in the walk only by ``s += term`` or ``s -= term`` with terms that
read no running sum (so the rows' partial sums add up to the sum), or a running min or max
(``best = fminf(best, term)``, ``fmaxf``, ``min``, ``max``: set 18's haversine_nearest),
declared with any value and updated only so, whose rows' partials combine by the same
function to the same value, exactly, whatever each row started from; nothing before the loop
writes memory, nothing after it synchronises. Where these hold, :mod:`.staged_walk_items`
adds ITEMS (outputs a thread sharing each staged element) if its own rules hold, and a walk
whose one loop (over the tile) has no unroll pragma of the author's gets UNROLL
(:func:`.table_items.unroll_shared_loop`: any factor computes the same); the walk is each
output's compute loop, so FAST_MATH (:mod:`.ilp_fastmath`) applies to it.

The sums are taken in another order (row by row), so float outputs move by rounding: the
space-wide gate checks them against the folder's tolerances; integer sums, mins and maxes
are exact.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import builtin, declared_name, int_value, line, text, walk
from workbench.templater.ilp_fastmath import apply_fastmath
from workbench.templater.inline_bind import declared, statements, written
from workbench.templater.macros import followed_parameter
from workbench.templater.plan import Plan
from workbench.templater.records import LiftedParameter
from workbench.templater.rewrite import Rewriter, TextFn
from workbench.templater.staged_walk_items import NAME as ITEMS
from workbench.templater.staged_walk_items import Items, apply_items, find_items
from workbench.templater.staged_walk_items import target as written_name
from workbench.templater.table_items import unroll_shared_loop
from workbench.templater.vector import Illegal

NAME = "JSPLIT"
_SUM_BYTES = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4,
              "long long": 8, "unsigned long long": 8, "long long int": 8}
_ELEM_BYTES = {**_SUM_BYTES, "float2": 8, "float3": 12, "float4": 16, "double2": 16,
               "int2": 8, "int4": 16, "half": 2, "__half": 2, "__nv_bfloat16": 2,
               "short": 2, "char": 1, "unsigned char": 1}
#: The knobs lifted before the walk that it composes with: UNROLL, and BRANCHLESS (an ``if``
#: in the walk's step computed both ways: a lazy edit of the statement that renders the
#: sides with the rows' and items' names, which run it as written otherwise).
_ALONGSIDE = {"BLOCK_THREADS", "UNROLL", "BRANCHLESS"}
#: Shared memory a block may declare statically (bytes).
_STATIC_SMEM = 49152


@dataclass(frozen=True)
class _Tile:
    """A shared array of the block's size: its declaration's array declarator and type."""

    name: str
    declarator: Node
    extent: Node
    type: str
    elem_bytes: int


@dataclass(frozen=True)
class _Walk:
    loop: Node
    var: str
    var_type: str
    start: Node
    bound: Node
    step: Node
    count: str  # a tile's elements, in the parameters' terms (the shared-memory rule)
    first_sync: Node
    second_sync: Node
    sums: tuple[tuple[str, str], ...]  # (name, type) in the kernel's order
    tiles: tuple[_Tile, ...]
    before: tuple[Node, ...]  # the body's statements before the loop, the load, the walk,
    load: tuple[Node, ...]  # and those after the loop
    steps: tuple[Node, ...]
    after: tuple[Node, ...]
    ops: tuple[tuple[str, str], ...] = ()  # (name, "+" or the min/max function) per sum

    def op(self, name: str) -> str:
        return dict(self.ops).get(name, "+")


def apply_staged_walk(plan: Plan) -> bool:
    """Lift JSPLIT on a staged walk (see the module doc); True when applied."""
    if "BLOCK_THREADS" not in plan.params or set(plan.params) - _ALONGSIDE or \
            len(plan.block) != 1 or not any(
            n.type == "declaration" and "__shared__" in text(n) for n in walk(plan.body)):
        return False
    try:
        found = _staged_walk(plan)
    except Illegal as why:
        plan.note(NAME, False, why.reason, why.node)
        return False
    if found is None:
        return False
    items: Items | None = None
    try:
        items = find_items(plan, list(found.before), [found.start, found.bound],
                           list(found.load), list(found.steps), list(found.after),
                           [name for name, _ in found.sums], lambda n: _reads(plan, n))
    except Illegal as why:
        plan.note(ITEMS, False, why.reason, why.node)
    _rewrite(plan, found, items)
    walks = [s for s in found.steps if s.type == "for_statement"]
    if len(walks) == 1:  # the loop over the tile, which every item and row runs
        unroll_shared_loop(plan, walks[0])
    apply_fastmath(plan, taps=True)  # the walk is each output's compute loop
    return True


def _staged_walk(plan: Plan) -> _Walk | None:
    body = statements(plan.body)
    loops = [s for s in body if s.type == "for_statement" and
             (b := s.child_by_field_name("body")) is not None and
             b.type == "compound_statement" and any(_is_sync(c) for c in statements(b))]
    if len(loops) != 1:
        return None
    loop = loops[0]
    _check_kernel(plan, loop)
    var, var_type, start, bound, step = _header(plan, loop)
    inner = statements(_block(loop))
    syncs = [i for i, s in enumerate(inner) if _is_sync(s)]
    if len(syncs) != 2 or syncs[1] != len(inner) - 1:
        raise Illegal("the tile loop's body is not a load, a barrier, a walk and a barrier "
                      "closing it", loop)
    load, steps = inner[:syncs[0]], inner[syncs[0] + 1:syncs[1]]
    tiles = _tiles(plan)
    count = _count(plan, step, tiles)
    before = body[:body.index(loop)]
    outer = set(declared(plan.body)) - {n for s in [loop] for n in declared(s)}
    shared = {t.name for t in tiles}
    loaded = {n for s in load for n in declared(s)}
    for s in steps:
        hit = next((n for n in walk(s) if n.type == "identifier" and text(n) in loaded), None)
        if hit is not None:
            raise Illegal(f"the walk reads {text(hit)}, which the tile's load declares: the "
                          "rows run the load apart", hit)
    for s in load:
        _writes_only(s, shared | loaded, "the tile's load")
    sums, ops = _sums(before, steps, outer)
    for s in steps:
        _writes_only(s, {n for x in steps for n in declared(x)} | {name for name, _ in sums},
                     "the walk")
    if written(_block(loop), var):
        raise Illegal(f"the tile loop's body writes its variable {var}", loop)
    for s in before:
        _writes_no_memory(s)
    after = body[body.index(loop) + 1:]
    for s in after:
        hit = next((n for n in walk(s) if n.type == "call_expression" and
                    text(n.child_by_field_name("function")).startswith("__sync")), None)
        if hit is not None:
            raise Illegal(f"`{text(hit)}` after the walk: only the block's first row runs "
                          "what follows it", hit)
    return _Walk(loop, var, var_type, start, bound, step, count, inner[syncs[0]], inner[syncs[1]],
                 tuple(sums), tuple(tiles), tuple(before), tuple(load), tuple(steps),
                 tuple(after), tuple(ops.items()))


def _block(loop: Node) -> Node:
    b = loop.child_by_field_name("body")
    if b is None or b.type != "compound_statement":
        raise Illegal("the tile loop's body is not a block", loop)
    return b


def _is_sync(s: Node) -> bool:
    return s.type == "expression_statement" and " ".join(text(s).split()) in (
        "__syncthreads();", "__syncthreads ();")


def _check_kernel(plan: Plan, loop: Node) -> None:
    for n in walk(plan.body):
        if builtin(n, "threadIdx") in ("y", "z") or builtin(n, "blockDim") in ("y", "z"):
            raise Illegal(f"`{text(n)}`: the rows of JSPLIT take the block's y", n)
        if n.type == "call_expression" and "atomic" in text(n.child_by_field_name("function")):
            raise Illegal(f"`{text(n)[:40]}`: an atomic would run once per row", n)
        if n.type == "return_statement" and n.start_byte < loop.end_byte:
            raise Illegal("a return before the walk's end: the rows' barriers would not "
                          "match", n)
        if n.type == "declaration" and "extern" in text(n) and "__shared__" in text(n):
            raise Illegal("dynamic shared memory: the rows' tiles are static", n)


def _header(plan: Plan, loop: Node) -> tuple[str, str, Node, Node, Node]:
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    shape = "the tile loop is not `for (int v = start; v < end; v += block size)`"
    if init is None or init.type != "declaration" or cond is None or update is None or \
            len(init.children_by_field_name("declarator")) != 1:
        raise Illegal(shape, loop)
    var, _, start = declared_name(init)
    var_type = text(init.child_by_field_name("type"))
    if start is None or var_type not in ("int", "unsigned", "unsigned int", "long long"):
        raise Illegal(shape, loop)
    if cond.type != "binary_expression" or text(cond.child_by_field_name("operator")) != "<" \
            or text(cond.child_by_field_name("left")) != var:
        raise Illegal(shape, cond)
    bound = cond.child_by_field_name("right")
    assert bound is not None
    params = {p.name for p in plan.kernel.params}
    local = set(declared(plan.body))
    for n in [*walk(bound), *walk(start)]:
        if n.type == "identifier" and (text(n) in local and text(n) not in params):
            raise Illegal(f"the tile loop's bounds read {text(n)}, a local: every row must "
                          "take the same tiles", n)
    step = update.child_by_field_name("right")
    if update.type != "assignment_expression" or text(update.child_by_field_name("operator")) \
            != "+=" or text(update.child_by_field_name("left")) != var or step is None or \
            (int_value(step) is None and builtin(step, "blockDim") != "x"):
        raise Illegal(f"the tile loop steps by `{text(update)}`, not by a constant tile size "
                      "or blockDim.x", update)
    return var, var_type, start, bound, step


def _tiles(plan: Plan) -> list[_Tile]:
    out: list[_Tile] = []
    top = set(statements(plan.body))
    for n in walk(plan.body):
        if n.type != "declaration" or "__shared__" not in [text(c) for c in n.children]:
            continue
        d = n.child_by_field_name("declarator")
        kind = " ".join(w for w in text(n.child_by_field_name("type")).split()
                        if w not in ("const", "volatile"))
        name = d.child_by_field_name("declarator") if d is not None else None
        if n not in top or d is None or d.type != "array_declarator" or \
                len(n.children_by_field_name("declarator")) != 1 or name is None or \
                name.type != "identifier" or d.child_by_field_name("size") is None or \
                kind not in _ELEM_BYTES:
            raise Illegal(f"`{' '.join(text(n).split())}` is not a one-dimensional tile of a "
                          "known type declared at the kernel's top", n)
        size = d.child_by_field_name("size")
        assert size is not None
        out.append(_Tile(text(name), d, size, kind,
                         _ELEM_BYTES[kind]))
    return out


def _count(plan: Plan, step: Node, tiles: list[_Tile]) -> str:
    """A tile's elements in the parameters' terms: the block's size where the lift made the
    tiles and the step it (``blockDim.x`` is it too), else the constant every config keeps.
    Refused where the tiles and the step differ in some config."""
    now = _reads(plan, step)
    if builtin(step, "blockDim") == "x":
        now = "BLOCK_THREADS"
    for t in tiles:
        if _reads(plan, t.extent) != now:
            raise Illegal(f"the tile {t.name} holds `{text(t.extent)}` elements, read as "
                          f"`{_reads(plan, t.extent)}`, and the tile loop steps by "
                          f"`{text(step)}`, read as `{now}`: not one tile size in every "
                          "config", t.declarator)
    if now != "BLOCK_THREADS" and not now.isdigit():
        raise Illegal(f"the tile loop steps by `{text(step)}`, read as `{now}`: neither the "
                      "block size nor a constant", step)
    return now


def _reads(plan: Plan, node: Node) -> str:
    """What ``node`` reads in every config: its lifted text; for a name, the parameter its
    definition was bound to (:func:`.named.bind_block_constants`), or for a ``#define``, a
    file-scope constant or a named member the one parameter its uses were lifted to at its
    value (:func:`.macros.lift_macros` and :func:`.macros.follow_named` then make it read
    that); else its constant value."""
    now = " ".join(plan.rw.text(node).split())
    if now != " ".join(text(node).split()):
        return now
    value = int_value(node)
    if value is None or node.type != "identifier":
        return str(value) if value is not None else now
    name = text(node)
    followed = followed_parameter(plan, name, value)  # a named constant: each kind follows
    if followed is not None:
        return followed
    for d in walk(plan.source.tree.root_node):
        init = d.child_by_field_name("value") if d.type == "init_declarator" else None
        if init is None or text(d.child_by_field_name("declarator")) != name:
            continue
        bound = [e.text for e in plan.rw.edits if (e.start, e.end) == (init.start_byte,
                                                                        init.end_byte)]
        if bound and bound[0] in plan.params:
            return bound[0]
    return str(value)


def _writes_only(s: Node, names: set[str], what: str) -> None:
    for n in walk(s):
        if n.type in ("assignment_expression", "update_expression"):
            target = written_name(n)
            if target is None or text(target) not in names:
                raise Illegal(f"{what} writes `{text(n)[:60]}`: each row would run it", n)


def _writes_no_memory(s: Node) -> None:
    for n in walk(s):
        if n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and left.type not in ("identifier", "field_expression"):
                raise Illegal(f"`{text(n)[:60]}` before the walk writes memory: every row "
                              "would write it", n)


#: Running values a walk may keep besides sums: a min or a max, whose partials combine in
#: any order to the same value (no rounding), whatever value each row starts from.
_EXTREMA = frozenset({"fminf", "fmaxf", "fmin", "fmax", "min", "max"})


def _sums(before: list[Node], steps: list[Node],
          outer: set[str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The running values: the kernel's locals the walk writes, each checked (module doc),
    and how each is updated: "+" (``s += term``) or the function of ``s = fminf(s, term)``."""
    updated: list[str] = []
    for s in steps:
        for n in walk(s):
            if n.type in ("assignment_expression", "update_expression"):
                target = written_name(n)
                if target is not None and text(target) in outer and \
                        text(target) not in updated:
                    updated.append(text(target))
    found: dict[str, tuple[str, str]] = {}
    starts: dict[str, Node] = {}
    for i, s in enumerate(before):
        if s.type != "declaration":
            continue
        name, d, value = declared_name(s)
        if name not in updated:
            continue
        kind = " ".join(w for w in text(s.child_by_field_name("type")).split())
        if kind not in _SUM_BYTES or d is None or d.type != "identifier" or value is None:
            raise Illegal(f"`{' '.join(text(s).split())}`: the walk updates {name}, which is "
                          "not a number declared as 0", s)
        if any(written(x, name) for x in before[i + 1:]):
            raise Illegal(f"{name} is written between its declaration and the walk", s)
        found[name], starts[name] = (name, kind), s
    missing = [u for u in updated if u not in found]
    if missing:
        raise Illegal(f"the walk writes {missing[0]}, not a running sum declared before the "
                      "loop", steps[0])
    ops: dict[str, str] = {}
    for s in steps:
        for n in walk(s):
            if n.type not in ("assignment_expression", "update_expression"):
                continue
            target = written_name(n)
            if target is None or text(target) not in found:
                continue
            op, term = _update(n, target)
            if op is None or term is None:
                raise Illegal(f"`{text(n)}` updates the running sum {text(target)} other "
                              "than by += or -= of a term (or by a min or max of it and a "
                              "term)", n)
            if ops.setdefault(text(target), op) != op:
                raise Illegal(f"`{text(n)}` updates {text(target)} by {op}, and the walk "
                              f"elsewhere by {ops[text(target)]}", n)
            hit = next((m for m in walk(term) if m.type == "identifier" and
                        text(m) in found), None)
            if hit is not None:
                raise Illegal(f"`{text(n)}`: its term reads the running sum {text(hit)}: "
                              "the rows' partial sums would not add up to it", n)
    for name, decl in starts.items():
        value = declared_name(decl)[2]
        if ops.get(name) == "+" and (value is None or not _zero(value)):
            raise Illegal(f"`{' '.join(text(decl).split())}`: the walk updates {name}, which "
                          "is not a number declared as 0", decl)
    return [found[name] for name in _declared_order(before, found)], ops


def _update(n: Node, target: Node) -> tuple[str | None, Node | None]:
    """("+", term) of ``s += term`` / ``s -= term``; (f, term) of ``s = f(s, term)`` or
    ``s = f(term, s)`` with ``f`` a min or max; (None, None) otherwise."""
    if n.type != "assignment_expression" or n.child_by_field_name("left") != target:
        return None, None
    op, right = text(n.child_by_field_name("operator")), n.child_by_field_name("right")
    if op in ("+=", "-="):
        return "+", right
    args = right.child_by_field_name("arguments") if right is not None and \
        right.type == "call_expression" else None
    fn = text(right.child_by_field_name("function")) if right is not None else ""
    if op != "=" or args is None or fn not in _EXTREMA or len(args.named_children) != 2:
        return None, None
    first, second = args.named_children
    if first.type == "identifier" and text(first) == text(target):
        return fn, second
    if second.type == "identifier" and text(second) == text(target):
        return fn, first
    return None, None


def _declared_order(before: list[Node], found: dict[str, tuple[str, str]]) -> list[str]:
    return [declared_name(s)[0] for s in before if s.type == "declaration" and
            declared_name(s)[0] in found]


def _zero(value: Node) -> bool:
    raw = text(value).strip().rstrip("fFlLuU")
    try:
        return float(raw) == 0.0
    except ValueError:
        return False


def _rewrite(plan: Plan, w: _Walk, items: Items | None) -> None:
    for t in w.tiles:
        plan.rw.replace_span(t.declarator.start_byte, t.declarator.end_byte, make=_rows(t))
    loop = w.loop

    def make(rw: Rewriter) -> str:
        var, bound, step = w.var, rw.text(w.bound), f"({rw.text(w.step)})"
        views = "".join(f"\n    {t.type}* const {t.name} = wb_rows_{t.name} + threadIdx.y * "
                        f"{step};" for t in w.tiles)
        live = f"if (JSPLIT == 1 || {var} < {bound}) {{"
        sync1, sync2 = w.first_sync, w.second_sync
        body = _block(loop)
        head, close = body.children[0].end_byte, body.children[-1].start_byte
        return (f"for ({w.var_type} wb_{var} = {rw.text(w.start)}; wb_{var} < {bound}; "
                f"wb_{var} += {step} * JSPLIT) {{\n"
                f"    const {w.var_type} {var} = wb_{var} + ({w.var_type})threadIdx.y * {step};"
                f"{views}\n    {live}{rw.render(head, sync1.start_byte)}}}\n    "
                f"{rw.text(sync1)}\n    {live}{rw.render(sync1.end_byte, sync2.start_byte)}}}\n"
                f"    {rw.text(sync2)}{rw.render(sync2.end_byte, close)}}}")
    plan.rw.replace_span(loop.start_byte, loop.end_byte, make=make)
    plan.rw.insert(loop.end_byte, _combine(w, items is not None))
    if items is not None:
        apply_items(plan, items, loop)
    plan.block = [*plan.block, "JSPLIT"]
    plan.launch_bounds = "BLOCK_THREADS * JSPLIT"
    _powers_of_two(plan)
    extrema = sorted({w.op(name) for name, _ in w.sums} - {"+"})
    ops = ["+"] * any(w.op(name) == "+" for name, _ in w.sums) + extrema
    joined = f"their partial values combined ({', '.join(ops)})" if extrema else \
        "their sums added"
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": "rows of threads splitting the walk of each staged "
                                         f"tile, {joined} in row order (1: as "
                                         "written)"}, f"{line(loop)}: {_head(loop)}")
    tile_bytes = sum(t.elem_bytes for t in w.tiles)
    sum_bytes = sum(_SUM_BYTES[kind] for _, kind in w.sums)
    plan.constrain("BLOCK_THREADS * JSPLIT <= 1024")
    per = f" * {ITEMS}" if items is not None else ""
    plan.constrain(f"{tile_bytes} * {w.count} * JSPLIT + ({sum_bytes} * BLOCK_THREADS{per} "
                   f"if JSPLIT > 1 else 0) <= {_STATIC_SMEM}")
    floats = [name for name, kind in w.sums if kind in ("float", "double") and
              w.op(name) == "+"]
    if extrema:
        plan.note(NAME, True, "the walk over each tile split over JSPLIT rows of threads, "
                  + ", ".join(f"{n} by {w.op(n)}" for n, _ in w.sums) + " combined in row "
                  "order by row 0" + (" (float sums within the folder's tolerances: the gate "
                                      "checks them)" if floats else " (exact: a min or max "
                                      "of the same values, in any order)"), loop)
        return
    plan.note(NAME, True, f"the walk over each tile split over JSPLIT rows of threads, the "
              f"sums of {', '.join(n for n, _ in w.sums)} added in row order by row 0"
              + (" (floats within the folder's tolerances: the gate checks them)"
                 if floats else " (integer sums: exact)"), loop)


def _powers_of_two(plan: Plan) -> None:
    """The rows and items multiply the block's sizes by 12: a block lifted to any multiple
    of 32 (32 sizes) keeps to powers of two (6), where the kernel as written is one, so the
    space stays hundreds of configs (nbody_accel: 708 at its shapes, 2400 with any multiple;
    the kernel's lift before the rows had 424)."""
    block = plan.params["BLOCK_THREADS"]
    default = block.spec.get("default")
    if block.spec.get("kind") == "pow2" or not isinstance(default, int) or \
            default & (default - 1):
        return
    spec = {**block.spec, "kind": "pow2", "min": 32, "max": 1024,
            "description": f"threads per block along x (as written: {default}; powers of "
                           "two beside the rows of JSPLIT)"}
    spec.pop("step", None)
    plan.params["BLOCK_THREADS"] = LiftedParameter(block.name, spec, block.origin)


def _rows(t: _Tile) -> TextFn:
    """The shared array of ``t`` made JSPLIT tiles long (its extent as lifted, at render)."""
    return lambda rw: f"wb_rows_{t.name}[{rw.text(t.extent)} * JSPLIT]"


def _head(loop: Node) -> str:
    body = loop.child_by_field_name("body")
    end = body.start_byte if body is not None else loop.end_byte
    return " ".join((loop.text or b"")[:end - loop.start_byte].decode().split())


def _combine(w: _Walk, items: bool) -> str:
    """Rows 1.. hand their sums to row 0, one row at a time in row order; then only row 0
    goes on (``items``: each sum an array of one element an item)."""
    count = f"{ITEMS} * BLOCK_THREADS" if items else "BLOCK_THREADS"
    at = "wb_u * BLOCK_THREADS + threadIdx.x" if items else "threadIdx.x"
    mine = "[wb_u]" if items else ""
    loop = f"\n#pragma unroll\n        for (int wb_u = 0; wb_u < {ITEMS}; ++wb_u)" if items else ""
    decls = "".join(f"\n    __shared__ {kind} wb_part_{name}[{count}];" for name, kind in w.sums)
    give = " ".join(f"wb_part_{name}[{at}] = {name}{mine};" for name, _ in w.sums)
    take = " ".join(f"{name}{mine} += wb_part_{name}[{at}];" if w.op(name) == "+" else
                    f"{name}{mine} = {w.op(name)}({name}{mine}, wb_part_{name}[{at}]);"
                    for name, _ in w.sums)
    return (f"\n#if JSPLIT > 1\n  {{{decls}\n    for (int wb_r = 1; wb_r < JSPLIT; ++wb_r) {{\n"
            f"      if (threadIdx.y == wb_r) {{{loop} {{ {give} }}\n      }}\n"
            "      __syncthreads();\n"
            f"      if (threadIdx.y == 0) {{{loop} {{ {take} }}\n      }}\n"
            "      __syncthreads();\n    }\n  }\n"
            "  if (threadIdx.y != 0) return;\n#endif")
