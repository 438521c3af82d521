"""FAST_MATH's reciprocal square roots of any spelled type (:mod:`.ilp_fastmath`): ``T(1) /
sqrt(x)`` in a template over ``T``, ``float(1) / sqrt(x)``, ``1 / sqrtf(x)``,
``static_cast<T>(1) / sqrt(x)``, ``(T)1 / sqrt(x)``.

:mod:`.ilp_fastmath` reads ``1.0f / sqrtf(x)``, whose types the text fixes (float). A one
converted to a template's type parameter, or a root by the overloaded ``sqrt``, has the type
its instantiation or its argument gives it, which the text does not show: the rewrite leaves
the choice to the compiler's overload resolution, where the types are known. Each site
becomes ``WB_RECIP_ROOT(one, root, x)`` (``one`` and ``root`` the dividend and divisor as
written, ``x`` the root's argument): under ``FAST_MATH = 0`` the division as written;
under ``FAST_MATH = 1`` a call of ``wb_recip_root``, whose overload for a float one, a
float root and a float argument is ``rsqrtf(x)``, and whose template for any other types
(a double, an integer argument) divides as written. The root's argument is passed twice, so
it must be free of side effects (:func:`.purity.side_effect_free`); the unused root of the
float overload is a pure call the compiler drops.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.templater.analysis import strip, text, walk
from workbench.templater.plan import Plan
from workbench.templater.purity import conversion, conversion_types, side_effect_free
from workbench.templater.rewrite import TextFn

#: the FAST_MATH forms of WB_RECIP_ROOT (FAST_MATH's own macros define the knob's name)
HELPER = (
    "#if FAST_MATH  // 1 / sqrt of a float one, root and argument as rsqrtf; other types as "
    "written\n"
    "template <typename A, typename R, typename X>\n"
    "__device__ __forceinline__ auto wb_recip_root(A one, R root, X) -> decltype(one / root) "
    "{\n  return one / root;\n}\n"
    "__device__ __forceinline__ float wb_recip_root(float, float, float x) "
    "{ return rsqrtf(x); }\n"
    "#define WB_RECIP_ROOT(one, root, x) wb_recip_root(one, root, x)\n"
    "#else\n#define WB_RECIP_ROOT(one, root, x) ((one) / (root))\n#endif")
_ROOTS = ("sqrt", "sqrtf")
#: a dividend converted to double ((double)1, double(1), static_cast<double>(1))
_DOUBLE = re.compile(r"\bdouble\b")
#: ``1.0f / sqrtf(x)``: :mod:`.ilp_fastmath`'s own site (float by its text)
_FLOAT_ONES = ("1.0f", "1.f", "1.0F", "1.F", "1f")


def typed_reciprocal_roots(plan: Plan, body: Node) -> int:
    """Rewrite each ``one / sqrt(x)`` of ``body`` (see the module doc) as
    ``WB_RECIP_ROOT(one, root, x)``; how many."""
    types = conversion_types(plan.source, body)
    count = 0
    for n in walk(body):
        if n.type != "binary_expression" or text(n.child_by_field_name("operator")) != "/":
            continue
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if left is None or right is None:
            continue
        root = strip(right)
        arguments = root.child_by_field_name("arguments") if root.type == "call_expression" \
            else None
        args = [a for a in arguments.named_children if a.type != "comment"] \
            if arguments is not None else []
        callee = text(root.child_by_field_name("function")) if arguments is not None else ""
        if callee not in _ROOTS or len(args) != 1 or _DOUBLE.search(text(left)) or \
                not _one(strip(left), types) or (
                callee == "sqrtf" and text(strip(left)) in _FLOAT_ONES) or \
                not side_effect_free(plan.source, args[0]):
            continue
        plan.rw.replace_span(n.start_byte, n.end_byte, make=_site(left, right, args[0]))
        count += 1
    if count:
        plan.helper(HELPER)
    return count


def _site(one: Node, root: Node, arg: Node) -> TextFn:
    """``WB_RECIP_ROOT(one, root, x)`` (lazy: per-item names render inside)."""
    return lambda r: f"WB_RECIP_ROOT({r.text(one)}, {r.text(root)}, {r.text(arg)})"


def _one(node: Node, types: frozenset[str]) -> bool:
    """``node`` is the value one that may be a float: a literal (``1``, ``1.0f``), or one
    converted to a type (``T(1)``, ``float(1)``, ``static_cast<T>(1)``, ``(T)1``). A one
    whose spelling makes it a double (``1.0``, ``1e0``, ``(double)1``) is not: its division
    is a double's at every FAST_MATH, so the knob would change nothing (a conversion to
    double is refused by :func:`typed_reciprocal_roots` before the casts are stripped)."""
    if node.type == "number_literal":
        lowered = text(node).lower()
        if not lowered.startswith("0x") and any(c in lowered for c in ".e") and \
                not lowered.endswith("f"):
            return False  # a floating literal without its f: a double
        raw = lowered.rstrip("fl").rstrip("u")
        try:
            return not raw.startswith("0x") and float(raw) == 1.0
        except ValueError:
            return False
    if node.type == "call_expression" and conversion(node, types):
        arguments = node.child_by_field_name("arguments")
        inner = arguments.named_children if arguments is not None else []
        return len(inner) == 1 and _one(strip(inner[0]), types)
    if node.type == "cast_expression":
        value = node.child_by_field_name("value")
        return value is not None and _one(strip(value), types)
    return False
