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

Each site becomes ``WB_INDEX_MASK(x, N)``: ``INDEX_MASK = 0`` (the default) the remainder as
written, ``1`` the mask. A knob rather than a rewrite, so the default stays the kernel as
written; offered only where the items share compute loops (as FAST_MATH is: the integer
work of a memory walk is not its cost). ``x`` is evaluated once either way.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    inside,
    int_value,
    strip,
    subscript_index,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.rewrite import TextFn

NAME = "INDEX_MASK"
HELPER = ("#if INDEX_MASK  // x % N of a power of two N indexing an array: x & (N - 1)\n"
          "#define WB_INDEX_MASK(x, n) ((x) & ((n) - 1))\n"
          "#else\n#define WB_INDEX_MASK(x, n) ((x) % (n))\n#endif")


def apply_index_mask(plan: Plan) -> int:
    """Give each ``array[x % N]`` site of the kernel's body (see the module doc) its
    INDEX_MASK form; how many."""
    arrays = _arrays(plan)
    count = 0
    for n in walk(plan.body):
        target = n.child_by_field_name("argument") if n.type == "subscript_expression" \
            else None
        if target is None or strip(target).type != "identifier" or \
                text(strip(target)) not in arrays:
            continue
        rem = strip(subscript_index(n))
        parts = binary(rem)
        modulus = int_value(parts[2]) if parts is not None and parts[1] == "%" else None
        if parts is None or modulus is None or modulus < 2 or modulus & (modulus - 1):
            continue
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
