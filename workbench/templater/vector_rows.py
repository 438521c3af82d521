"""VEC along x for a 2-D block: each thread takes VEC consecutive x positions of its row.

The region is the 1-D family's exit form with a row's exit: ``T x = blockIdx.x * B +
threadIdx.x;`` at the body's top level, then ``if (x >= W || ..) return;`` (the other
disjuncts, ``y >= H``, never read ``x``) with the element's statements after it to the end of
the body. ``x`` becomes the first of the thread's VEC positions (``(blockIdx.x * B +
threadIdx.x) * VEC``, the grid's x extent ``ceil_div(ceil_div(W, VEC), B)``); the exit stays
as written (a thread leaves where its first position is past the row or its row is past the
frame), and after it the streams (accesses ``A[offset + x]``, through a local pointer such
as ``ys = luma + y * pitch`` or a cast ``((uchar4 *)rgba)``) move as one vector each, every
other read of ``x`` (``uv = chroma + (y >> 1) * pitch + (x & ~1u)``) reads the lane's own
position (:mod:`.vector_lanes`), and a thread whose vector would cross W takes its positions
one by one (:mod:`.vector_tail`) unless the offsets make W a multiple of VEC already. y and
the items families (ITEMS_X, ITEMS_Y wrap this code) are unchanged. Legal only where the
element's statements read no other place along x (``threadIdx.x``, ``blockIdx.x``,
``gridDim.x``, a local set from them): every lane would read the thread's one value.
"""

from __future__ import annotations

import ast

from tree_sitter import Node

from workbench.templater.analysis import (
    JUMPS,
    binary,
    builtin,
    declared_name,
    identifiers,
    strip,
    text,
    walk,
)
from workbench.templater.item_state import assigned_names
from workbench.templater.plan import Plan
from workbench.templater.vector import VEC_STRUCT, vector_moves, vectorize
from workbench.templater.vector_access import (
    Access,
    Illegal,
    base_name,
    reads_before_writes,
    region_accesses,
)
from workbench.templater.vector_regions import Region, x_indices
from workbench.templater.vector_tail import tail_text, whole_test


def apply_vector_rows(plan: Plan) -> bool:
    """VEC along x on a 2-D block's row region; a note says why where it is not legal."""
    try:
        decl, region = _row_region(plan)
        streams, _values = region_accesses(plan, region)
        _pointers_in_scope(plan, region, streams)
        grid = _grid_over_vec(plan.grid[0], plan.block[0])
        if grid is None:
            raise Illegal(f"grid rule {plan.grid[0]!r} is not ceil_div(W, {plan.block[0]})")
        reads_before_writes(region)
        constraints = vectorize(plan, region, split=False, render=_row_text, reads_first=True)
    except Illegal as exc:
        plan.note("VEC", False, exc.reason, exc.node)
        return False
    for c in constraints:
        plan.constrain(c)
    value = declared_name(decl)[2]
    assert value is not None  # _row_region found the index by its value
    plan.rw.replace_span(value.start_byte, value.end_byte,
                         make=lambda rw: f"({rw.text(value)}) * VEC")
    plan.grid[0] = grid
    plan.helper(VEC_STRUCT)
    plan.add_param("VEC", {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                           "description": f"consecutive {region.var} positions a thread moves "
                                          "as one vector load/store (as written: 1)"},
                   f"{decl.start_point.row + 1}: {text(decl)[:60]}")
    plan.note("VEC", True, f"row region over {region.var} vectorized along x (y as written)",
              region.node)
    return True


def _row_region(plan: Plan) -> tuple[Node, Region]:
    """The x index's declaration and the region after its row exit; Illegal naming why not."""
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    for k, decl, var, _offset in x_indices(plan, stmts):
        for s in stmts[k + 1:-1]:
            bound = _row_exit(s, var)
            if bound is not None:
                typ = text(decl.child_by_field_name("type"))
                region = Region(var, typ, plan.body, bound, "", "", False, s, exit=True)
                _one_place(plan, stmts, decl, region)
                return decl, region
            if any(n.type == "identifier" and text(n) == var for n in walk(s)):
                raise Illegal(f"`{text(s).splitlines()[0][:60]}` reads {var} before its row "
                              "exit: the index becomes the vector's first position", s)
        wrapped = _row_guard(stmts[-1], var) if len(stmts) > k + 1 else None
        if wrapped is not None:
            typ = text(decl.child_by_field_name("type"))
            body = stmts[-1].child_by_field_name("consequence")
            assert body is not None  # _row_guard found a braced consequence
            region = Region(var, typ, body, wrapped, "", "", False, stmts[-1])
            _one_place(plan, stmts, decl, region)
            return decl, region
        raise Illegal(f"no row exit `if ({var} >= W || ..) return;` after `{text(decl)}` "
                      "with statements after it", decl)
    raise Illegal("no x index `x = blockIdx.x * B + threadIdx.x` at the body's top level")


def _row_exit(statement: Node, var: str) -> Node | None:
    """W where ``statement`` is ``if (var >= W || ..) return;`` (``W <= var`` too), the other
    disjuncts reading no ``var``; None otherwise."""
    from workbench.templater.inline_exits import _condition  # it reads vector_regions

    cond = _condition(statement)
    return None if cond is None else _one_bound(_disjuncts(cond), var, ">=")


def _row_guard(statement: Node, var: str) -> Node | None:
    """W where ``statement`` (the body's last) is ``if (var < W && ..) { .. }`` (``W > var``
    too), no else, the other conjuncts reading no ``var``: the body runs exactly where the
    row exit ``if (var >= W || ..) return;`` would let it (round 31b's wrapped nv12); None
    otherwise."""
    if statement.type != "if_statement" or \
            statement.child_by_field_name("alternative") is not None:
        return None
    body = statement.child_by_field_name("consequence")
    cond = statement.child_by_field_name("condition")
    value = cond.child_by_field_name("value") if cond is not None else None
    if cond is None or body is None or body.type != "compound_statement" or value is None or \
            any(n.type == "init_declarator" for n in cond.named_children):
        return None
    return _one_bound(_conjuncts(value), var, "<")


_MIRRORED = {">=": "<=", "<": ">"}


def _one_bound(parts: list[Node], var: str, op: str) -> Node | None:
    """W where exactly one of ``parts`` is ``var OP W`` (or ``W`` mirrored ``var``: ``W <=
    var`` for ``>=``, ``W > var`` for ``<``), W not reading ``var``, and no other part reads
    ``var``; None otherwise."""
    bounds: list[Node] = []
    for part in parts:
        sides = binary(part)
        if sides is not None:
            left, how, right = sides
            if how == _MIRRORED[op]:
                left, right, how = right, left, op
            if how == op and strip(left).type == "identifier" and text(strip(left)) == var \
                    and var not in {text(i) for i in identifiers(right)}:
                bounds.append(right)
                continue
        if var in {text(i) for i in identifiers(part)}:
            return None
    return bounds[0] if len(bounds) == 1 else None


def _conjuncts(cond: Node) -> list[Node]:
    cond = strip(cond)
    parts = binary(cond)
    if parts is None or parts[1] != "&&":
        return [cond]
    return _conjuncts(parts[0]) + _conjuncts(parts[2])


def _disjuncts(cond: Node) -> list[Node]:
    cond = strip(cond)
    parts = binary(cond)
    if parts is None or parts[1] != "||":
        return [cond]
    return _disjuncts(parts[0]) + _disjuncts(parts[2])


def _one_place(plan: Plan, stmts: list[Node], decl: Node, region: Region) -> None:
    """Each lane's statements read no place along x but its own position: not
    ``threadIdx.x``, ``blockIdx.x`` or ``gridDim.x`` (VEC changes the grid), nor a local
    set from them before the exit, in the exit's other disjuncts or after it; no exit
    before the row exit."""
    for n in walk(plan.body):
        if n.type == "field_expression" and builtin(n, "gridDim") == "x":
            raise Illegal("the kernel reads gridDim.x, which VEC divides", n)
    placed: set[str] = set()
    for s in stmts:
        if s.start_byte >= region.node.start_byte:
            break
        if s.start_byte != decl.start_byte and any(n.type in JUMPS for n in walk(s)):
            raise Illegal(f"`{text(s).splitlines()[0][:60]}` leaves before the row exit: "
                          "every vector lane would leave with it", s)
        names = {text(n) for n in walk(s) if n.type == "identifier"}
        if s.start_byte != decl.start_byte and (names & placed or any(
                builtin(n, "threadIdx") == "x" or builtin(n, "blockIdx") == "x"
                for n in walk(s))):
            placed |= assigned_names(s)
    for n in [*walk(region.node), *region.walk()]:  # the exit's other disjuncts too
        if (n.type == "field_expression" and "x" in (builtin(n, "threadIdx"),
                                                     builtin(n, "blockIdx"))) or \
                (n.type == "identifier" and text(n) in placed):
            raise Illegal(f"the element's statements read `{text(n)}`, the thread's place "
                          "along x: each vector lane would read the thread's one value", n)


def _pointers_in_scope(plan: Plan, region: Region, streams: list[Access]) -> None:
    """Each vector loads before the element's statements and stores after them, so its
    address reads nothing they declare: not its index (``out[y * w + x]`` with ``y``
    declared after the exit), nor the value of a local pointer declared there, through
    which it loads (``&(luma + y * pitch)[x]``)."""
    for a in streams:
        names = list(identifiers(a.index))
        d = plan.facts.defs.get(base_name(a.array))
        if d is not None and d.value is not None and region.holds(d.decl):
            names += identifiers(d.value)
        for i in names:
            inner = plan.facts.defs.get(text(i))
            if text(i) != region.var and inner is not None and region.holds(inner.decl):
                raise Illegal(f"`{text(a.node)}` reads {text(i)}, declared after the row exit: "
                              "the vector load or store outside the lanes cannot read it",
                              a.node)


def _address(plan: Plan, region: Region, access: Access) -> str:
    """``&A[index]`` as the vector's load or store spells it before the lanes' statements."""
    rw = plan.rw
    index = rw.text(access.index)
    base = base_name(access.array)
    d = plan.facts.defs.get(base)
    argument = access.node.child_by_field_name("argument")
    if d is None or d.value is None or not region.holds(d.decl):
        return f"&{rw.text(argument) if argument is not None else access.array}[{index}]"
    pointer = f"({rw.text(d.value)})"
    array = access.array.replace(base, pointer) if access.array != base else pointer
    return f"&{array}[{index}]"


def _row_text(plan: Plan, region: Region, by_array: dict[str, list[Access]],
              scalar: str | None) -> str:
    """The element's statements after the row exit, VEC positions a thread."""
    var, typ = region.var, region.var_type
    bound = plan.rw.text(region.bound)
    decls, loads, stores = vector_moves(plan, by_array, "1", "0",
                                        lambda a: _address(plan, region, a), 6)
    whole = whole_test(var, bound, scalar is not None)
    tail = tail_text(var, typ, bound, scalar) if scalar is not None else ""
    # a wrapped region keeps its test, on the thread's first position (as an exit would)
    test = "" if region.exit else \
        f"if {plan.rw.text(region.node.child_by_field_name('condition'))}"  # type: ignore[arg-type]
    return (f"\n    {test}{{  // VEC consecutive {var} a thread, from {var}\n{decls}"
            f"    const int wb_i = 0;  // one vector a thread\n"
            f"    if ({whole}) {{\n{loads}#pragma unroll\n"
            f"      for (int wb_v = 0; wb_v < VEC; ++wb_v) {region.text(plan.rw)}\n"
            f"{stores}    }}{tail}\n  }}")


def _grid_over_vec(rule: str, block: str) -> str | None:
    """``ceil_div(W, B)`` -> ``ceil_div(ceil_div(W, VEC), B)`` (B the block's x rule): the
    items families scale B as written; None where the rule has no such term."""
    tree = ast.parse(rule, mode="eval")
    want = ast.unparse(ast.parse(block, mode="eval").body)
    hits = 0

    class Over(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal hits
            if isinstance(node.func, ast.Name) and node.func.id == "ceil_div" and \
                    len(node.args) == 2 and ast.unparse(node.args[1]) == want:
                hits += 1
                node.args[0] = ast.Call(ast.Name("ceil_div", ast.Load()),
                                        [node.args[0], ast.Name("VEC", ast.Load())], [])
                return node
            return self.generic_visit(node)

    out = Over().visit(tree)
    return ast.unparse(out) if hits == 1 else None
