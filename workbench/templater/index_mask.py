"""INDEX_MASK: a signed remainder by a power of two that subscripts an array read as a mask.

``a[x % N]`` with ``a`` declared as an array (``__shared__ float a[64]``, a local or
``__constant__`` array: not a pointer, which may point into the middle of a buffer) and
``N`` a power of two (a literal, a macro or a file constant): for a signed ``x`` the
remainder is negative when ``x`` is, and a negative subscript of an array reads outside
it, which the kernel as written never does in a run that is defined. So wherever the
kernel as written is defined ``x % N`` equals ``x & (N - 1)``, which costs one instruction
where the signed remainder costs several (a periodic table's neighbours,
``knots[(i + 1) % kKnots]``: crspline_rotmean's lift at the expert's pick had 612 integer
instructions against 302 with the mask, the expert's 157 a copy; sm_90).

A helper's pointer parameter that every call (all in the kernel's body) binds to such an
array, and that the helper never writes, steps nor addresses, is the array's start
(``spline_at(knots, t)``): its subscripts are masked the same way.

A helper written over a template parameter reads it as the constants its instantiations in
the file bind it to (:mod:`.template_values`): ``template <int N> .. catmull_rom(const float*
knot, ..)`` called as ``catmull_rom<kKnots>(knots, t)`` (``constexpr int kKnots = 64``) has
``N`` 64, so ``knot[(seg + 1) % N]`` is a site (a power of two in every instantiation). A
helper that is one ``return x % N;`` (``ring<N>(i)``), every call of which is the whole
subscript of such an array or array-bound parameter (``knot[ring<N>(seg + 1)]``), gives its
remainder to that subscript: the site is its ``x % N``.

Each site becomes ``WB_INDEX_MASK(x, N)``: ``INDEX_MASK = 0`` (the default) the remainder as
written, ``1`` the mask. A knob rather than a rewrite, so the default stays the kernel as
written; offered only where the items share compute loops (as FAST_MATH is: the integer
work of a memory walk is not its cost). ``x`` is evaluated once either way.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import function_definitions
from workbench.templater.analysis import (
    binary,
    inside,
    int_value,
    strip,
    subscript_index,
    text,
    walk,
    writer,
)
from workbench.templater.inline_bind import declarator_name
from workbench.templater.plan import Plan
from workbench.templater.rewrite import TextFn
from workbench.templater.template_values import template_values

NAME = "INDEX_MASK"
HELPER = ("#if INDEX_MASK  // x % N of a power of two N indexing an array: x & (N - 1)\n"
          "#define WB_INDEX_MASK(x, n) ((x) & ((n) - 1))\n"
          "#else\n#define WB_INDEX_MASK(x, n) ((x) % (n))\n#endif")


def apply_index_mask(plan: Plan) -> int:
    """Give each ``array[x % N]`` site of the kernel's body (see the module doc) its
    INDEX_MASK form; how many."""
    arrays = _arrays(plan)
    count = 0
    scopes = [(plan.body, arrays), *_helpers(plan, arrays)]
    for scope, names in scopes:
        count += _apply(plan, scope, names)
    for rem in _index_helpers(plan, scopes):
        parts = binary(rem)
        assert parts is not None
        plan.rw.replace_span(rem.start_byte, rem.end_byte, make=_site(parts[0], parts[2]))
        count += 1
    if count:
        plan.helper(HELPER)
        plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                              "description": "1: x % N of a power of two N that indexes an "
                                             "array as x & (N - 1) (the same wherever the "
                                             "kernel is defined); 0: as written"},
                       f"{plan.kernel.line}: array[x % N]")
        plan.note(NAME, True, f"{count} array subscript(s) x % N of a power of two N: a "
                  "negative x would read outside the array, so x & (N - 1) is the same value "
                  "wherever the kernel as written is defined")
    return count


def _apply(plan: Plan, scope: Node, arrays: set[str]) -> int:
    """Give each ``array[x % N]`` site in ``scope`` of an array named in ``arrays`` its
    INDEX_MASK form; how many."""
    count = 0
    for n in walk(scope):
        target = n.child_by_field_name("argument") if n.type == "subscript_expression" \
            else None
        if target is None or strip(target).type != "identifier" or \
                text(strip(target)) not in arrays:
            continue
        rem = strip(subscript_index(n))
        parts = binary(rem)
        if parts is None or parts[1] != "%" or not _power_of_two(plan, scope, parts[2]):
            continue
        plan.rw.replace_span(rem.start_byte, rem.end_byte, make=_site(parts[0], parts[2]))
        count += 1
    return count


def _power_of_two(plan: Plan, scope: Node, modulus: Node) -> bool:
    """``modulus`` is a power of two of at least 2: a constant, or a template parameter of
    the function ``scope`` is the body of that every instantiation binds to one."""
    value = int_value(modulus)
    if value is not None:
        return value >= 2 and not value & (value - 1)
    fn = scope.parent
    if strip(modulus).type != "identifier" or fn is None or fn == plan.body.parent or \
            fn.type != "function_definition":
        return False
    name = text(strip(modulus))
    values = template_values(plan.source.tree.root_node, fn, name)
    if values is not None and all(v >= 2 and not v & (v - 1) for v in values):
        return True
    if _template_param(fn, name):
        why = "an instantiation spells it other than as a constant" if values is None else \
            f"its instantiations bind it to {', '.join(map(str, sorted(values)))}"
        _note_once(plan, f"`% {name}`: the template parameter `{name}` is not a power of two in "
                   f"every instantiation ({why})", modulus)
    return False


def _template_param(fn: Node, name: str) -> bool:
    """``name`` is one of the template parameters of ``fn``."""
    outer = fn.parent
    plist = outer.child_by_field_name("parameters") if outer is not None and \
        outer.type == "template_declaration" else None
    return plist is not None and any(
        d.type == "identifier" and text(d) == name
        for p in plist.named_children for d in p.named_children)


def _note_once(plan: Plan, reason: str, node: Node) -> None:
    """A refusal of this transform, once per reason and line."""
    row = node.start_point.row + 1
    if not any(f.transform == NAME and f.reason == reason and f.line == row
               for f in plan.findings):
        plan.note(NAME, False, reason, node)


def _index_helpers(plan: Plan, scopes: list[tuple[Node, set[str]]]) -> list[Node]:
    """The ``x % N`` of each helper that is one ``return x % N;`` (N a power of two, above)
    and whose every call (``ring<N>(i)`` or ``ring(i)``) is the whole subscript of a name in
    ``scopes`` read in that scope: the remainder indexes the array."""
    root = plan.source.tree.root_node
    found: dict[str, list[Node]] = {}
    for name, fn in function_definitions(root):
        found.setdefault(name, []).append(fn)
    out: list[Node] = []
    for name, fns in found.items():
        body = fns[0].child_by_field_name("body")
        stmts = [c for c in body.named_children if c.type != "comment"] if body else []
        value = stmts[0].named_children[0] if len(stmts) == 1 and \
            stmts[0].type == "return_statement" and stmts[0].named_child_count == 1 else None
        parts = binary(value) if value is not None else None
        if len(fns) != 1 or body is None or value is None or parts is None or \
                parts[1] != "%" or not _power_of_two(plan, body, parts[2]):
            continue
        uses = [n for n in walk(root) if n.type == "identifier" and text(n) == name and
                not inside(n, fns[0])]
        other = next((u for u in uses if not _indexes(u, scopes)), None)
        if uses and other is None:
            out.append(strip(value))
        elif other is not None:
            _note_once(plan, f"`{name}` returns a remainder, but `{text(other.parent)[:40]}` "
                       "is not the whole subscript of an array (its value may be negative "
                       "where it is read)", other)
    return out


def _indexes(use: Node, scopes: list[tuple[Node, set[str]]]) -> bool:
    """``use`` (a helper's name) is called as the whole subscript of a name in the scope
    holding the call."""
    call = _called(use)
    at = call
    while at is not None and at.parent is not None and \
            at.parent.type == "parenthesized_expression":
        at = at.parent
    sub = at.parent if at is not None else None
    if sub is not None and sub.type == "subscript_argument_list":
        sub = sub.parent
    if call is None or sub is None or sub.type != "subscript_expression" or \
            strip(subscript_index(sub)) != call:
        return False
    target = sub.child_by_field_name("argument")
    return target is not None and strip(target).type == "identifier" and any(
        inside(sub, scope) and text(strip(target)) in names for scope, names in scopes)


def _helpers(plan: Plan, arrays: set[str]) -> list[tuple[Node, set[str]]]:
    """The bodies of the file's helpers (defined once, named only by calls in the kernel's
    body) with their pointer parameters that every call binds to one of ``arrays`` (a
    ``__shared__`` table passed whole: ``spline_at(knots, t)``) and the body never writes
    nor takes the address of: such a parameter is the array's start, so a negative
    subscript of it reads outside the array too."""
    root = plan.source.tree.root_node
    found: dict[str, list[Node]] = {}
    for name, fn in function_definitions(root):
        found.setdefault(name, []).append(fn)
    out: list[tuple[Node, set[str]]] = []
    for name, fns in found.items():
        fn, body = fns[0], fns[0].child_by_field_name("body")
        declarator = fn.child_by_field_name("declarator")
        if len(fns) != 1 or fn == plan.body.parent or body is None or declarator is None:
            continue
        uses = [n for n in walk(root) if n.type == "identifier" and text(n) == name and
                not inside(n, declarator)]
        calls = [c for c in (_called(u) for u in uses) if c is not None and
                 inside(c, plan.body)]
        if not calls or len(calls) != len(uses):
            continue
        names = {text(p) for k, p in _pointer_params(declarator) if
                 all(_argument(c, k) in arrays for c in calls) and not _written(body, text(p))}
        if names:
            out.append((body, names))
    return out


def _called(use: Node) -> Node | None:
    """The call ``use`` (a function's name) is the callee of, ``f(..)`` or ``f<A>(..)``."""
    callee = use.parent if use.parent is not None and \
        use.parent.type == "template_function" else use
    call = callee.parent
    return call if call is not None and call.type == "call_expression" and \
        call.child_by_field_name("function") == callee else None


def _pointer_params(declarator: Node) -> list[tuple[int, Node]]:
    """(position, name) of each pointer parameter of a function's ``declarator``."""
    plist = next((d.child_by_field_name("parameters") for d in walk(declarator)
                  if d.type == "function_declarator"), None)
    params = [c for c in plist.named_children if c.type != "comment"] if plist else []
    out = []
    for k, p in enumerate(params):
        d = p.child_by_field_name("declarator")
        name = declarator_name(d) if d is not None and d.type == "pointer_declarator" else None
        if name is not None:
            out.append((k, name))
    return out


def _argument(call: Node, k: int) -> str | None:
    """The name ``call`` passes as its ``k``-th argument (None for anything else)."""
    args = call.child_by_field_name("arguments")
    values = [a for a in args.named_children if a.type != "comment"] if args else []
    return text(strip(values[k])) if k < len(values) and \
        strip(values[k]).type == "identifier" else None


def _written(body: Node, name: str) -> bool:
    """``body`` assigns, steps, takes the address of or declares ``name`` again."""
    return any(n.type == "identifier" and text(n) == name and (
        writer(n, address=True) is not None or
        (n.parent is not None and n.parent.type in ("init_declarator", "declaration",
                                                    "pointer_declarator", "array_declarator")))
        for n in walk(body))


def _arrays(plan: Plan) -> set[str]:
    """Names the kernel sees as arrays: declared with an array declarator in the kernel (its
    parameters and body) or at file scope, and declared no other way there (a pointer or a
    scalar of the same name would make the name ambiguous)."""
    root = plan.source.tree.root_node
    functions = [n for n in walk(root) if n.type == "function_definition"]
    kernel = plan.body.parent
    nodes = list(walk(kernel)) if kernel is not None else []
    for top in walk(root):
        if top.type == "declaration" and not any(inside(top, fn) for fn in functions):
            nodes += list(walk(top))
    arrays: set[str] = set()
    others: set[str] = set()
    for n in nodes:
        if n.type == "array_declarator":
            inner = n.child_by_field_name("declarator")
            while inner is not None and inner.type == "array_declarator":
                inner = inner.child_by_field_name("declarator")
            if inner is not None and inner.type == "identifier":
                arrays.add(text(inner))
        elif n.type in ("init_declarator", "parameter_declaration", "declaration",
                        "pointer_declarator", "reference_declarator"):
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                others.add(text(d))
    return arrays - others


def _site(left: Node, right: Node) -> TextFn:
    """``WB_INDEX_MASK(x, N)`` (lazy: per-item names render inside)."""
    return lambda r: f"WB_INDEX_MASK({r.text(left)}, {r.text(right)})"
