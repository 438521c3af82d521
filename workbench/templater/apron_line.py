"""A one-dimensional apron tile: outputs per thread over a shared line with a halo.

The 2-D apron (:mod:`.apron`) read in one dimension: a 1-D launch block of literal size
``B``; one ``__shared__`` 1-D array ``win[E]``, ``E = B + H`` (the halo H); before the one
top-level ``__syncthreads()`` only declarations and a cooperative load ``for (s =
threadIdx.x; s < E; s += B) win[s] = V;`` (braces and loop locals optional); after it the
per-point work (a depthwise convolution along time: ``blockIdx.y`` the channel, nine taps
read at ``win[threadIdx.x + k]``). The analysis is the 2-D apron's, on integer polynomials
of the expressions (single-assignment locals expanded, :class:`.apron_loads.Deps`):

- the loaded value ``V`` depends on the position and the block only through the global
  position ``blockIdx.x * B + s`` and reads no thread index, so the line holds the same
  function of the global position at any tile length;
- the work after the barrier depends on the thread and the block only through the global
  point ``blockIdx.x * B + threadIdx.x``, and reads the line only at ``[threadIdx.x + a]``
  with ``a`` free of the thread and the block;
- ``blockIdx.x`` appears only as the tile offset ``blockIdx.x * B``, and B (as a number or
  a named constant) only there, in the line's extent and the load's bound and stride
  (after the barrier a number equal to B is only a number: the point check ties the work
  to the block); no ``blockDim``, ``gridDim``, y or z thread index, z block index, second
  barrier, or ``return`` inside a loop after the barrier. Other block indices (the plane,
  ``blockIdx.y``) are free: the line is the plane's, as written.

The rewrite (knobs BLOCK_THREADS, OUT_X): the line ``BLOCK_THREADS * OUT_X + H`` long, the
load's bound that extent and its stride the block, the tile offsets ``blockIdx.x *
(BLOCK_THREADS * OUT_X)`` and the grid's divisor the same; the work runs once per output of
the thread, columns ``threadIdx.x + ox * BLOCK_THREADS`` (the 2-D apron's OUT_X: a warp's
outputs stay consecutive), the thread's index locals re-declared for that output and an
early ``return`` made ``continue``. Each output is computed by the same code from the same
line values: every config gives the kernel's results; the defaults are the kernel as
written. Anything else is refused with the reason and the line.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    in_lambda,
    int_expr_value,
    int_value,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.apron import _mentions_thread, in_loop_or_switch
from workbench.templater.apron_loads import Check, Deps, Pair, base_array, only_statements
from workbench.templater.block import _shared_arrays
from workbench.templater.plan import Plan
from workbench.templater.regtile import (
    _ELEM,
    _MAX_SMEM,
    Refused,
    _is_sync,
    apply_or_note,
    fresh_names,
    render,
)
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.stencil import derivative, statements
from workbench.templater.tile_batch import in_c

KNOB = "OUT_X"
OUT_VALUES = [1, 2, 4, 8]


def lift_apron_line(plan: Plan) -> bool:
    """OUT_X outputs per thread over a 1-D apron line, the block apart from the line; False
    when the kernel is not of the family or the analysis refused (noted)."""
    if len(plan.block) != 1 or literal(plan.block[0]) is None or len(plan.grid) > 2:
        return False
    arrays = _shared_arrays(plan)
    if len(arrays) != 1 or len(arrays[0][2]) != 1 or \
            not any(_is_sync(s) for s in statements(plan.body)):
        return False
    return apply_or_note(plan, KNOB, lambda: _analyse(plan))


def _analyse(plan: Plan) -> Callable[[], None] | None:
    b = literal(plan.block[0]) or 0
    name, decl, (extent,) = _shared_arrays(plan)[0]
    stmts = statements(plan.body)
    syncs = [k for k, s in enumerate(stmts) if _is_sync(s)]
    barriers = [n for n in walk(plan.body) if n.type == "call_expression" and
                text(n.child_by_field_name("function")) == "__syncthreads"]
    if len(syncs) != 1 or len(barriers) != 1:
        raise Refused("the kernel has more than one barrier (one line load, then the work, "
                      "is modelled)", barriers[-1])
    for n in walk(plan.body):
        if n.type != "field_expression":
            continue
        if builtin(n, "gridDim") is not None or builtin(n, "blockDim") is not None or \
                builtin(n, "threadIdx") in ("y", "z") or builtin(n, "blockIdx") == "z":
            raise Refused(f"`{text(n)}`: the line's grid and block are modelled in x, the "
                          "plane by blockIdx.y", n)
    pre, post = stmts[:syncs[0]], stmts[syncs[0] + 1:]
    if not post:
        return None
    ctype = text(decl.child_by_field_name("type"))
    elem = _ELEM.get(ctype)
    consts = Deps(plan, set())

    def value_of(node: Node) -> int | None:  # macros of expressions too (``R (K / 2)``)
        p = consts.poly(node, [])
        return int_expr_value(node) if set(p) - {()} else p.get((), 0)
    e = value_of(extent)
    if elem is None or e is None or e < b:
        raise Refused(f"the line {name}[{text(extent)}] is not a compile-time extent of a "
                      "type of known size, the block plus a halo", decl)
    loads = [s for s in pre if s.type != "declaration"]
    if len(loads) != 1 or loads[0].type != "for_statement":
        raise Refused(f"before the barrier, one loop strided by the block loads the line "
                      f"{name} (and declarations) is modelled", (loads or stmts)[0])
    loop = loads[0]
    var, bound, step, store = _load(loop, name, b, e, value_of)
    deps = Deps(plan, {var})
    value = store.child_by_field_name("right")
    assert value is not None
    load_check = Check(deps, [Pair(var, "blockIdx.x", b)], {"threadIdx.x"})
    bad = load_check.bad(value)
    if bad is not None:
        raise Refused(f"`{text(bad)}` in the line's load depends on the position or the "
                      "block other than through blockIdx.x * B + s", bad)
    # -- the work after the barrier ---------------------------------------------------------
    reads: list[Node] = []

    def line_index(sub: Node) -> Node | None:
        idx = sub.child_by_field_name("indices")
        index = idx.named_children[0] if idx is not None and idx.named_children else sub
        p = deps.poly(index, [])
        if derivative(p, "threadIdx.x") != {(): 1} or derivative(p, "blockIdx.x") or \
                derivative(p, "blockIdx.y"):
            return index
        reads.append(sub)
        return None

    work = Check(deps, [Pair("threadIdx.x", "blockIdx.x", b)], set(), name, line_index)
    for s in post:
        bad = work.bad(s)
        if bad is not None:
            raise Refused(f"`{text(bad)}` depends on the thread or the block other than "
                          f"through the output point (or reads the line other than at "
                          f"[threadIdx.x + a])", bad)
        for n in walk(s):
            t = write_target(n) if n.type in ("assignment_expression",
                                              "update_expression") else None
            if t is not None and t.type != "identifier":
                root = t
                while root.type in ("subscript_expression", "pointer_expression"):
                    root = strip(root.child_by_field_name("argument") or root)
                    if root == t:
                        break
                if base_array(t) == name or not plan.pointer(text(root)):
                    raise Refused(f"`{text(n)}` writes other than a kernel argument after "
                                  "the barrier", n)
            if n.type == "goto_statement" or (n.type == "return_statement" and
                                               in_loop_or_switch(n, s)):
                raise Refused(f"`{text(n)}` leaves the work from inside a loop", n)
    # -- where B stands: tile offsets, the extent, the load's bound and stride --------------
    offsets = _offsets(plan, b)
    known = [extent, bound, step, *offsets]
    spans = [(s.start_byte, s.end_byte) for s in post]
    for n in walk(plan.body):
        if n.type in ("number_literal", "identifier") and int_value(n) == b and b > 1 and \
                not any(k.start_byte <= n.start_byte and n.end_byte <= k.end_byte
                        for k in known) and not any(a <= n.start_byte < z for a, z in spans):
            raise Refused(f"`{text(n)}` (the block size) is used where the analysis does not "
                          "know its meaning", n)
    grid_x = scale_divisor(plan.grid[0], str(b), "BLOCK_THREADS * OUT_X")
    if grid_x is None:
        raise Refused(f"the grid {plan.grid} does not divide by the block {b} (ceil_div)",
                      plan.body)
    redeclare = _redeclared(plan, pre, post, deps, decl)
    try:  # the planes as written: the grid's y (blockIdx.y below it)
        planes = in_c(plan.grid[1], plan) if len(plan.grid) == 2 else None
    except Refused:
        planes = None

    def emit() -> None:
        _emit(plan, b, e - b, elem, (extent, bound, step, offsets), post, redeclare, grid_x,
              name, value_of, "" if planes is None else f"if (wb_plane < {planes}) ")
        if planes is not None:
            _planes(plan, decl, loop, planes, e - b, elem)
    return emit


def _load(loop: Node, name: str, b: int, e: int, value_of: Callable[[Node], int | None]
          ) -> tuple[str, Node, Node, Node]:
    """(variable, bound, stride, store) of ``for (s = threadIdx.x; s < E; s += B) win[s] =
    V;`` (declarations before the store allowed)."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    declarators = init.children_by_field_name("declarator") if init is not None and \
        init.type == "declaration" else []
    start = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
    var = text(declarators[0].child_by_field_name("declarator")) if start is not None else ""
    parts = binary(cond) if cond is not None else None
    step = update.child_by_field_name("right") if update is not None and \
        update.type == "assignment_expression" and \
        text(update.child_by_field_name("operator")) == "+=" and \
        text(update.child_by_field_name("left")) == var else None
    body = only_statements(loop.child_by_field_name("body"))
    store = strip(body[-1].named_children[0]) if body and \
        body[-1].type == "expression_statement" and body[-1].named_children else None
    target = store.child_by_field_name("left") if store is not None and \
        store.type == "assignment_expression" and \
        text(store.child_by_field_name("operator")) == "=" else None
    index = target.child_by_field_name("indices") if target is not None and \
        target.type == "subscript_expression" else None
    if start is None or builtin(strip(start), "threadIdx") != "x" or parts is None or \
            parts[1] != "<" or text(strip(parts[0])) != var or step is None or \
            value_of(step) != b or value_of(parts[2]) != e or \
            store is None or target is None or base_array(target) != name or index is None or \
            text(strip(index.named_children[0])) != var or \
            any(s.type != "declaration" for s in body[:-1]):
        raise Refused(f"`{text(loop).splitlines()[0]}` is not the line's load `for (s = "
                      f"threadIdx.x; s < {e}; s += {b}) {name}[s] = V;`", loop)
    return var, strip(parts[2]), strip(step), store


def _offsets(plan: Plan, b: int) -> list[Node]:
    """The size node of every ``blockIdx.x * B``; raises at another use of blockIdx.x."""
    out = []
    for n in walk(plan.body):
        if n.type != "field_expression" or builtin(n, "blockIdx") != "x":
            continue
        parent = n.parent
        while parent is not None and parent.type in ("parenthesized_expression",
                                                     "cast_expression"):
            parent = parent.parent
        parts = binary(parent) if parent is not None else None
        other = (parts[2] if strip(parts[0]) == n else parts[0]) if parts is not None and \
            parts[1] == "*" else None
        if other is None or int_value(other) != b:
            raise Refused(f"`{text(parent or n)}` is not a tile offset blockIdx.x * {b}", n)
        out.append(strip(other))
    return out


def _redeclared(plan: Plan, pre: list[Node], post: list[Node], deps: Deps,
                line_decl: Node) -> list[Node]:
    """The declarations before the barrier that the work reads (or a local it reads does)
    and that read the thread index: re-declared per output, each a single-assignment
    local (the 2-D apron's rule)."""
    post_reads = {text(n) for s in post for n in walk(s) if n.type == "identifier"}
    needed = set(post_reads)
    for s in reversed(pre):
        if s.type == "declaration" and needed & _names(s):
            needed |= {text(n) for n in walk(s) if n.type == "identifier"}
    out = []
    for s in pre:
        if s.type != "declaration" or s == line_decl or not needed & _names(s) or \
                not any(_mentions_thread(deps, d) for d in s.children_by_field_name("declarator")):
            continue
        for name in _names(s):
            if name not in deps.values and name in post_reads:
                raise Refused(f"`{name}` (read after the barrier) is assigned more than once",
                              s)
        out.append(s)
    return out


def _names(decl: Node) -> set[str]:
    return {text(d.child_by_field_name("declarator") or d)
            for d in decl.children_by_field_name("declarator")}


def _emit(plan: Plan, b: int, halo: int, elem: int, places: tuple[Node, Node, Node, list[Node]],
          post: list[Node], redeclare: list[Node], grid_x: str, name: str,
          value_of: Callable[[Node], int | None], guard: str) -> None:
    """The rewrite (module doc); ``guard``: a test the outputs' loop runs under (PLANES:
    the thread's plane inside the written grid)."""
    names = fresh_names(plan, ["BLOCK_THREADS", "OUT_X"])
    bt, ox = names["BLOCK_THREADS"], names["OUT_X"]
    extent, bound, step, offsets = places
    length = f"{bt} * {ox}"
    for node in (extent, bound):
        parts = binary(node)
        if parts is not None and parts[1] == "+" and value_of(parts[0]) == b:
            plan.rw.replace(strip(parts[0]), length)  # the author's halo kept as written
        else:
            plan.rw.replace(node, f"{length} + {halo}")
    plan.rw.replace(step, bt)
    for size in offsets:
        plan.rw.replace(size, f"({length})")
    data = plan.source.data
    spans = {(n.start_byte, n.end_byte) for n in offsets}

    def sub(n: Node) -> str | None:
        if (n.start_byte, n.end_byte) in spans:
            return f"({length})"
        if n.type == "field_expression" and builtin(n, "blockIdx") == "y" and \
                len(plan.grid) == 2:
            return "wb_plane"  # :func:`_planes`' (a re-declared local reads it so)
        return "wb_lx" if n.type == "field_expression" and builtin(n, "threadIdx") == "x" \
            else None

    for s in post:
        for n in walk(s):
            if n.type == "field_expression" and builtin(n, "threadIdx") == "x":
                plan.rw.replace(n, "wb_lx")
            if n.type == "return_statement" and not in_lambda(n, s):
                plan.rw.replace(n, "continue;  // this output is outside: the next one")
    again = "".join(f"\n    {render(data, s, sub)}" for s in redeclare)
    plan.rw.insert(post[0].start_byte,
                   f"{guard}for (int wb_ox = 0; wb_ox < {ox}; ++wb_ox) {{\n"
                   f"    const unsigned wb_lx = threadIdx.x + wb_ox * {bt};{again}\n    ")
    plan.rw.insert(post[-1].end_byte, "\n    }")
    plan.block = [bt]
    plan.grid[0] = grid_x
    where = plan.source.line_of(plan.body)
    plan.add_param(bt, {"kind": "choice", "values": sorted({64, 128, 256, 512, b}),
                        "default": b, "description": f"threads a block along the line "
                                                     f"(as written: {b})"},
                   f"{where}: block {b}")
    plan.add_param(ox, {"kind": "choice", "values": OUT_VALUES, "default": 1,
                        "description": f"outputs a thread, {bt} apart (as written: 1)"},
                   f"{where}: __shared__ {name}")
    plan.constrain(f"({bt} * {ox} + {halo}) * {elem} <= {_MAX_SMEM}")
    plan.launch_bounds = bt
    plan.note(KNOB, True, f"a 1-D apron line {name} of the block plus a {halo}-element halo: "
              f"{ox} outputs a thread, {bt} apart, the line {bt} * {ox} + {halo} long, its "
              "load, the tile offsets and the grid following")


def _planes(plan: Plan, decl: Node, loop: Node, planes: str, halo: int, elem: int) -> None:
    """PLANES planes a block (``blockIdx.y``, the channel) along ``threadIdx.y``: each its
    own row of the line, ``wb_plane = blockIdx.y * PLANES + threadIdx.y`` read wherever the
    kernel reads ``blockIdx.y``; a plane past the written grid's (``planes``, in C) loads
    nothing and computes nothing (the outputs' loop is under the same test: :func:`_emit`),
    yet meets the barrier. At PLANES = 1 the kernel as written (its planes all below the
    grid's)."""
    name = fresh_names(plan, ["PLANES"])["PLANES"]
    bt, ox = plan.block[0], next(p for p in plan.params if p.endswith("OUT_X"))
    line = decl.child_by_field_name("declarator")
    while line is not None and line.type != "identifier":
        line = line.child_by_field_name("declarator")
    assert line is not None
    plan.rw.insert(line.end_byte, f"[{name}]")
    for use in plan.uses(text(line)):
        if use != line:
            plan.rw.insert(use.end_byte, "[threadIdx.y]")
    for n in walk(plan.body):
        if n.type == "field_expression" and builtin(n, "blockIdx") == "y":
            plan.rw.replace(n, "wb_plane")
    plan.rw.insert(plan.body.children[0].end_byte,
                   f"\n    const unsigned wb_plane = blockIdx.y * {name} + threadIdx.y;")
    plan.rw.insert(loop.start_byte, f"if (wb_plane < {planes}) ")
    plan.block = [bt, name]
    plan.grid[1] = f"ceil_div({plan.grid[1]}, {name})"
    plan.add_param(name, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                          "description": "planes (blockIdx.y) a block, one a threadIdx.y, "
                                         "each its own line (as written: 1)"},
                   f"{plan.source.line_of(plan.body)}: blockIdx.y")
    plan.constrain(f"{bt} * {name} <= 1024")
    plan.constrain(f"{name} * ({bt} * {ox} + {halo}) * {elem} <= {_MAX_SMEM}")
    plan.launch_bounds = f"{bt} * {name}"
    plan.note(name, True, f"{name} planes a block along threadIdx.y, each its own line; a "
              f"plane past the written grid's {planes} loads and computes nothing")
