"""TILE: a walk every thread of the block reads at the same index, staged in shared memory.

A pairwise kernel (``for (int j = 0; j < m; ++j) { float4 c = charges[j]; ... }``, one
output a thread) reads the same element of the walked array in every thread of the block at
once, straight from global memory: each thread waits on the load, and the block loads the
array once per thread. The transform stages the walk ``TILE`` elements at a time: when the
walk reaches a multiple of ``TILE`` the block syncs, fills ``__shared__ wb_tile_P`` with the
next ``min(TILE, m - j)`` elements by a block-stride copy and syncs again; the body reads
``wb_tile_P`` in place of ``P``. The walk's order and arithmetic are unchanged (bit for
bit). ``TILE = 0`` is the kernel as written (the default).

Legal only where the analysis shows (else a note with the line): a 1-D block
(``BLOCK_THREADS``); ITEMS_PER_THREAD gave the thread its items (:func:`.ilp.gave_items`), so
a guard's ``return`` is a live flag and every thread reaches the walk; a top-level
``for (int j = 0; j < m; ++j | j++ | j += 1)``, ``m`` a scalar kernel parameter never assigned
or an integer literal, ``j`` not written, no jump in the body; every read of a walked pointer
is ``P[j]``, ``P[C * j + c]`` or ``P[j * C + c]`` (integer literals ``0 <= c < C``, one ``C`` a
pointer), a pointer no statement of the kernel writes through; the body writes no memory and
calls no barrier, atomic or warp intrinsic; the kernel has no shared memory of its own. The
barriers sit in the walk, which every thread runs the same number of times; ITEMS' all-live
copy of a loop (:meth:`.ilp._Render.splits`) is not made for a loop holding a barrier.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    calls,
    declared_name,
    int_value,
    line,
    strip,
    subscript_index,
    text,
    walk,
)
from workbench.templater.ilp import gave_items
from workbench.templater.plan import Plan
from workbench.templater.vector import Illegal

NAME = "TILE"
#: Bytes of the element types a walked pointer may have.
_BYTES = {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "double": 8, "float2": 8,
          "int2": 8, "float4": 16, "int4": 16, "double2": 16}
_SYNC_CALLS = ("__syncthreads", "__syncwarp", "__shfl", "atomic", "__ballot", "__any", "__all",
               "__reduce", "__match", "__activemask")
_JUMPS = ("return_statement", "break_statement", "continue_statement", "goto_statement")
_SHARED_BYTES = 48 * 1024


def apply_walk_tile(plan: Plan) -> None:
    """Apply TILE where legal; otherwise note why not (only for a kernel with a candidate:
    a top-level counted walk after ITEMS_PER_THREAD applied)."""
    if plan.block != ["BLOCK_THREADS"] or not gave_items(plan):
        return
    loop = next((s for s in plan.body.named_children if s.type == "for_statement"), None)
    if loop is None:
        return
    try:
        var, bound = _counted(plan, loop)
        walked = _walked(plan, loop, var)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node or loop)
        return
    _rewrite(plan, loop, var, bound, walked)


def _counted(plan: Plan, loop: Node) -> tuple[str, str]:
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
    if not scalar and int_value(bound) is None:
        raise Illegal(f"the walk's bound `{text(bound)}` is not a scalar parameter or a "
                      "literal (the same in every thread)", bound)
    assigned = [n for n in walk(plan.body)
                if n.type in ("assignment_expression", "update_expression") and
                text(n.child_by_field_name("left") or n.child_by_field_name("argument"))
                == text(bound)]
    if assigned:
        raise Illegal(f"the walk's bound `{text(bound)}` is assigned", assigned[0])
    body = loop.child_by_field_name("body")
    assert body is not None
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
    used = [c for c in calls(body) if c.startswith(_SYNC_CALLS)]
    if used:
        raise Illegal(f"the walk calls {used[0]}", body)
    if any(d.is_shared for d in plan.facts.defs.values()):
        raise Illegal("the kernel has shared memory of its own", loop)
    return var, text(bound)


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


def _walked(plan: Plan, loop: Node, var: str) -> dict[str, tuple[int, str, list[Node]]]:
    """Walked pointer -> (C, element type, its subscripts in the walk)."""
    body = loop.child_by_field_name("body")
    assert body is not None
    found: dict[str, tuple[int, str, list[Node]]] = {}
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
        c_old = found.get(name, (stride[0], _element(plan, name, n), []))
        if c_old[0] != stride[0]:
            raise Illegal(f"`{name}` is read at two strides of `{var}`", n)
        c_old[2].append(n)
        found[name] = c_old
    if not found:
        raise Illegal(f"the walk reads no pointer at `{var}`", loop)
    for name in found:
        for n in walk(plan.body):
            if n.type in ("assignment_expression", "update_expression"):
                target = strip(n.child_by_field_name("left") or
                               n.child_by_field_name("argument") or n)
                if any(x.type == "identifier" and text(x) == name for x in walk(target)):
                    raise Illegal(f"the kernel writes through or to `{name}`", n)
    return found


def _element(plan: Plan, name: str, node: Node) -> str:
    """The element type of the pointer ``name`` (a parameter or a local), one of _BYTES."""
    d = plan.facts.defs.get(name)
    if d is not None:
        typ = d.decl.child_by_field_name("type")
        written = text(typ) if d.is_pointer and typ is not None else ""
    else:
        written = next((p.type_text for p in plan.kernel.params if p.name == name and p.is_pointer),
                       "") if any(p.name == name for p in plan.kernel.params) else ""
    element = " ".join(w for w in written.replace("*", " ").split()
                       if w not in ("const", "__restrict__", "volatile"))
    if element not in _BYTES:
        raise Illegal(f"`{name}`'s element type `{written}` is not one this transform "
                      "stages", node)
    return element


def _rewrite(plan: Plan, loop: Node, var: str, bound: str,
             walked: dict[str, tuple[int, str, list[Node]]]) -> None:
    body = loop.child_by_field_name("body")
    assert body is not None and body.type == "compound_statement"
    first = next(c for c in body.named_children if c.type != "comment")
    tile = "wb_tile"
    fills = []
    for name, (c, typ, reads) in walked.items():
        arr = f"wb_tile_{name}"
        fills.append(f"__shared__ {typ} {arr}[{tile} * {c}];\n    if ({NAME} > 0 && "
                     f"{var} % {tile} == 0) {{  // the next tile of {name}, the whole block\n"
                     f"      __syncthreads();\n      for (int wb_k = threadIdx.x; wb_k < "
                     f"min({tile}, {bound} - {var}) * {c}; wb_k += blockDim.x)\n        "
                     f"{arr}[wb_k] = {name}[{var} * {c} + wb_k];\n      __syncthreads();\n"
                     f"    }}\n    ")
        for r in reads:
            index = subscript_index(r)
            plan.rw.replace(r, f"({NAME} > 0 ? {arr}[({text(index)}) - ({var} - {var} % "
                               f"{tile}) * {c}] : {text(r)})")
    plan.rw.insert(first.start_byte, "".join(fills))
    plan.helper(f"constexpr int {tile} = {NAME} > 0 ? {NAME} : 1;  // staged walk elements")
    elements = " + ".join(f"{_BYTES[t]} * {c}" for c, t, _r in walked.values())
    plan.constrain(f"{NAME} * ({elements}) <= {_SHARED_BYTES}")
    plan.add_param(NAME, {"kind": "choice", "values": [0, 128, 256, 512, 1024], "default": 0,
                          "description": f"elements of the walk over `{var}` staged in shared "
                                         "memory a round by the whole block (0: read from "
                                         "global memory, as written)"},
                   f"{line(loop)}: {text(loop)[:60]}")
    plan.note(NAME, True, f"the walk over `{var}` reads {', '.join(walked)} at the same index "
              "in every thread: staged TILE at a time in shared memory, same order (bit for "
              "bit)", loop)
