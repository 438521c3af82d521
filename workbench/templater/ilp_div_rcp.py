"""DIV_RCP: a double division by a value the loop recomputes each trip (a Newton step's
slope ``3 y^2``) as one reciprocal and a multiply, a knob of compute-bound per-element
kernels (issue 28: set 17's cbrt_newton_f64, whose expert's RCP is this).

A double division is a long software sequence on the GPU (a reciprocal seed, refinement
steps, a test branching to a slow path for extreme operands); ``a * (1.0 / d)`` is nvcc's
double reciprocal sequence, shorter, and a multiply. Where the divisor reads only a loop's
counter, :mod:`.ilp_rcp_counter` owns the division (its reciprocals fold or are shared by
every thread: its ``_counter_division`` and ``_owned`` leave those to it); this module takes
the divisions whose divisor reads a local the loop assigns (a value per item and per trip),
and those whose divisor reads only variables the kernel never writes (set 18's
besselj0_miller_f64: ``2.0 * k / x`` a trip, the expert's RCP taking ``2 / x`` once): the
reciprocal is then loop-invariant and the compiler takes it once, outside the loop.

Which divisions: a ``/`` in the kernel's body inside a loop (or in a ``__device__`` helper
the kernel calls inside a loop, :func:`.helper_scope`'s, whose divisor reads the helper's
own parameters or locals: a value each call computes anew; or in a loop of any helper the
kernel reaches, whose divisor reads a local that loop assigns or declares: a solver called
once an item, set 25's ``colebrook(re, rel)``), whose value is double (a leaf
a ``double`` local or parameter, a cast to ``double``, an unsuffixed floating literal:
:func:`.ilp_fastdiv._double_leaf`), whose dividend is not the literal one, and whose divisor
reads a local assigned in the body of a loop around it (by ``=`` or a compound assignment)
(``1.0 / d`` is the reciprocal already); or whose divisor reads variables only (no call, no
element) none of which the kernel's body writes after its declaration.
``DIV_RCP = 0`` is the kernel as written.

How far the result moves: ``1.0 / d`` and the product are two roundings where ``a / d`` is
one, so each quotient is within 1 ulp of double (2^-52 relative) of the quotient as written,
and it is allowed only where every store of the kernel is to a ``float`` array (a rounding of
2^-24, 2^28 times coarser). A zero divisor gives an infinity or NaN either way. The gate
checks the folder's tolerance at ``DIV_RCP = 1`` on the GPU; the host tests check it
against the kernel as written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, inside_loop, line, strip, text, walk
from workbench.templater.ilp_fastdiv import _double_leaf, _types
from workbench.templater.ilp_fastmath_helpers import helper_scope
from workbench.templater.ilp_rcp_counter import _counter_division, _owned, _rewrite
from workbench.templater.inline_bind import callee_name
from workbench.templater.item_objects import method_name
from workbench.templater.plan import Plan
from workbench.templater.table_open import _check_float_stores
from workbench.templater.vector import Illegal

NAME = "DIV_RCP"
_MACRO = (f"#if {NAME}\n#define WB_DRCP(a, d) ((a) * (1.0 / (d)))\n#else\n"
          "#define WB_DRCP(a, d) ((a) / (d))\n#endif")

def apply_div_rcp(plan: Plan) -> bool:
    """Route every double division of the kernel's loops by a value a loop recomputes, or
    by variables the kernel never writes, through ``WB_DRCP``; True when one was."""
    if NAME in plan.params:
        return False
    types = {**_types(plan.source.tree.root_node, top_only=True),
             **_types(plan.body.parent or plan.body, top_only=False)}
    fn = plan.body.parent or plan.body
    divisions = [n for n in walk(plan.body) if n.type == "binary_expression"
                 and text(n.child_by_field_name("operator")) == "/"
                 and inside_loop(n, plan.body) and _double_leaf(n, types)
                 and not _one(n.child_by_field_name("left"))
                 and (_recomputed(n) or _invariant(n, plan.body))
                 and _counter_division(n, fn) is None and not _owned(plan, n)]
    helpers = _helper_divisions(plan)
    divisions += helpers
    if not divisions:
        return False
    try:
        _check_float_stores(plan)
    except Illegal as e:
        plan.note(NAME, False, f"a double division by a value the loop recomputes as a "
                  f"reciprocal: {e}", e.node if isinstance(e.node, Node) else divisions[0])
        return False
    for div in divisions:
        if not any(d.start_byte < div.start_byte and div.end_byte < d.end_byte
                   for d in divisions):  # an inner one rides in its outer one's operands
            _rewrite(plan, div, "WB_DRCP")
    plan.helper(_MACRO)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: the {len(divisions)} double division(s) by a "
                                         "value the loop recomputes (or never changes) as a "
                                         "multiply by its reciprocal (1 ulp of double a "
                                         "quotient; the gate checks the tolerance); 0: as "
                                         "written"},
                   f"{plan.kernel.line}: double divisions")
    plan.note(NAME, True, f"{len(divisions)} double division(s) by a value the loop "
              "recomputes (or never changes) as a multiply by its reciprocal behind the knob "
              "(every store a float; the gate checks the tolerance)" + (
                  f"; {len(helpers)} of them in the helpers the kernel calls (in its loops, or "
                  "whose own loops recompute the divisor): "
                  + ", ".join(sorted({f"`{_function_name(d)}` (line {line(d)})"
                                      for d in helpers})) if helpers else ""), divisions[0])
    return True


def _helper_divisions(plan: Plan) -> list[Node]:
    """The double divisions of the ``__device__`` helpers the kernel calls inside one of
    its loops (directly, or through a helper so called: :func:`.helper_scope`'s functions),
    whose divisor reads a parameter or a local of that helper: a value each call computes
    anew, as a local a loop assigns is in the kernel's body (a Newton step's
    ``f / df`` kept in ``newton_step(x, t)``)."""
    scope = helper_scope(plan).functions
    looped: set[str] = set()
    todo = [(plan.body, False)]
    while todo:
        body, in_loop = todo.pop()
        for n in walk(body):
            name = n.type == "call_expression" and (callee_name(n) or method_name(n))
            if name and name in scope and name != plan.kernel.name and name not in looped \
                    and (in_loop or inside_loop(n, body)):
                looped.add(name)
                todo.append((scope[name], True))
    top = _types(plan.source.tree.root_node, top_only=True)
    found: list[Node] = []
    for name in sorted(looped | _reached(plan, scope)):
        body = scope[name]
        fn = body.parent or body
        own = _types(fn, top_only=False)
        types = {**top, **own}
        # a helper called in a loop: each division by its own values; any other helper the
        # kernel reaches: the divisions of its own loops by a value they recompute (a
        # solver's Newton step, colebrook(re, rel) called once an item)
        found += [n for n in walk(body) if n.type == "binary_expression"
                  and text(n.child_by_field_name("operator")) == "/"
                  and _double_leaf(n, types) and not _one(n.child_by_field_name("left"))
                  and (_reads(n.child_by_field_name("right"), set(own)) if name in looped
                       else inside_loop(n, body) and (_recomputed(n) or _declared_in_loop(n)))
                  and _counter_division(n, fn) is None and not _owned(plan, n)]
    return found


def _reached(plan: Plan, scope: dict[str, Node]) -> set[str]:
    """The helpers of ``scope`` the kernel calls, directly or through one another."""
    found: set[str] = set()
    todo = [plan.body]
    while todo:
        for n in walk(todo.pop()):
            name = n.type == "call_expression" and (callee_name(n) or method_name(n))
            if name and name in scope and name != plan.kernel.name and name not in found:
                found.add(name)
                todo.append(scope[name])
    return found


def _function_name(node: Node) -> str:
    """The name of the function definition around ``node``."""
    up = node.parent
    while up is not None and up.type != "function_definition":
        up = up.parent
    declarator = up.child_by_field_name("declarator") if up is not None else None
    inner = declarator.child_by_field_name("declarator") if declarator is not None else None
    return text(inner) if inner is not None else "?"


def _reads(node: Node | None, names: set[str]) -> bool:
    """``node`` reads one of ``names`` (as a name, not a member's field)."""
    return node is not None and any(n.type == "identifier" and text(n) in names
                                    for n in walk(node))


def _one(left: Node | None) -> bool:
    """``left`` is the literal one (``1.0 / d`` is already the reciprocal)."""
    if left is None or strip(left).type != "number_literal":
        return False
    try:
        return float(text(strip(left)).rstrip("fFlLuU")) == 1.0
    except ValueError:
        return False


def _invariant(div: Node, body: Node) -> bool:
    """The divisor of ``div`` reads variables only (no call, no element, no literal alone)
    that no statement of the kernel's body writes after their declaration: its reciprocal
    is the same every trip (a Miller recurrence's ``2k / x``), taken once where the compiler
    hoists it."""
    right = div.child_by_field_name("right")
    if right is None or any(n.type in ("call_expression", "subscript_expression",
                                       "field_expression", "pointer_expression")
                            for n in walk(right)):
        return False
    names = {text(n) for n in walk(right) if n.type == "identifier"}
    return bool(names) and not any(_writes(n, names) for n in walk(body))


def _writes(node: Node, names: set[str]) -> bool:
    """``node`` assigns (``=``, ``op=``), increments or takes the address of one of
    ``names``."""
    target = node.child_by_field_name("left") if node.type == "assignment_expression" else \
        node.child_by_field_name("argument") if node.type == "update_expression" or (
            node.type == "pointer_expression" and
            text(node.child_by_field_name("operator")) == "&") else None
    return target is not None and strip(target).type == "identifier" and \
        text(strip(target)) in names


def _declared_in_loop(div: Node) -> bool:
    """The divisor of ``div`` reads a local declared in the body of a loop around ``div``
    (a value each trip computes anew: ``double dg = ..;`` in a Newton step)."""
    right = div.child_by_field_name("right")
    names = {text(n) for n in walk(right) if n.type == "identifier"} if right is not None \
        else set()
    loop = div.parent
    while loop is not None:
        body = loop.child_by_field_name("body") if loop.type in LOOPS else None
        if body is not None and any(
                n.type in ("init_declarator", "declaration") and
                text(n.child_by_field_name("declarator")) in names for n in walk(body)):
            return True
        loop = loop.parent
    return False


def _recomputed(div: Node) -> bool:
    """The divisor of ``div`` reads a local assigned (``=``, ``op=``) in the body of a loop
    around ``div``."""
    right = div.child_by_field_name("right")
    names = {text(n) for n in walk(right)} if right is not None else set()
    loop = div.parent
    while loop is not None:
        if loop.type in LOOPS:
            body = loop.child_by_field_name("body")
            for n in walk(body) if body is not None else ():
                left = n.child_by_field_name("left") if n.type == "assignment_expression" \
                    else None
                if left is not None and left.type == "identifier" and text(left) in names:
                    return True
        loop = loop.parent
    return False


