"""VEC for a warp family's segment loops: a segment's 16-byte-aligned middle read as float4.

A segment loop (:mod:`.warp_segments`) ``for (p = base + lane; p < end; p += LANES) acc +=
*p;`` starts at a run-time offset, so its vectors' alignment is not known when the kernel is
written. Practice for such sums (segmented reductions, CSR rows read whole) is to peel: the
elements before the first 16-byte boundary one a lane (the head, at most 3), the whole
quads after it as ``float4`` one a lane (``ILP`` of them in flight), the elements after the
last whole quad one a lane (the tail, at most 3). The boundary is found from the segment's
address at run time, so the split is right for any start and any length: an empty segment
has no head, quads or tail; one shorter than the head is all head.

Legal where the loop's one statement is ``acc += E`` (:mod:`.warp_chains`' form) with ``E``
exactly the element the counter reads, of type ``float``: ``*p`` or ``p[0]`` for a pointer
counter, ``a[i]`` for an index counter over an array ``a``; each lane then adds the same
elements' values in another order (a reassociation the gate's tolerance checks, as LANES
does). Refused, with the line, for any other term (a product, a gather, another type).
Only where every lane loop of the kernel is a segment loop (the family's own VEC names the
knob for loops that start at the lane).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import strip, text
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import Illegal

NAME = "VEC"
#: The vector a lane reads from the aligned middle, its width and components.
_VECTOR, _WIDTH, _PARTS = "float4", 4, ("x", "y", "z", "w")


@dataclass(frozen=True)
class SegmentWalk:
    """The element walk of a segment loop: ``array`` indexed by the counter (index form),
    or None where the counter is the element's pointer."""

    array: str | None


def segment_walk(plan: Plan, var: str, var_type: str, term: Node) -> SegmentWalk:
    """The walk of a segment loop whose counter ``var`` (declared ``var_type``) reads ``term``
    each step; raises Illegal where the term is not the float element at the counter."""
    term = strip(term)
    if var_type.endswith("*"):
        if " ".join(var_type.replace("const", " ").replace("*", " ").split()) != "float":
            raise Illegal(f"the segment walk `{var_type} {var}` reads no float elements", term)
        if _reads_at(term, var, "0") or (term.type == "pointer_expression" and text(
                term.child_by_field_name("operator")) == "*" and _is(term, "argument", var)):
            return SegmentWalk(None)
    elif term.type == "subscript_expression" and _reads_at(term, None, var):
        array = text(strip(term.child_by_field_name("argument") or term))
        if _float_array(plan, array):
            return SegmentWalk(array)
    raise Illegal(f"the segment loop adds `{text(term)[:40]}`, not the float element its "
                  f"counter `{var}` reads", term)


def _is(node: Node, field: str, name: str) -> bool:
    child = node.child_by_field_name(field)
    return child is not None and text(strip(child)) == name


def _reads_at(sub: Node, array: str | None, index: str) -> bool:
    """``sub`` is ``array[index]`` (any identifier for ``array`` None)."""
    if sub.type != "subscript_expression":
        return False
    arg = strip(sub.child_by_field_name("argument") or sub)
    idx = sub.child_by_field_name("indices") or sub.child_by_field_name("index")
    inner = [c for c in idx.named_children] if idx is not None and \
        idx.type == "subscript_argument_list" else ([idx] if idx is not None else [])
    return arg.type == "identifier" and (array is None or text(arg) == array) and \
        len(inner) == 1 and text(strip(inner[0])) == index


def _float_array(plan: Plan, name: str) -> bool:
    d = plan.facts.defs.get(name)
    if d is not None:
        kind = d.decl.child_by_field_name("type")
        return d.is_pointer and kind is not None and text(kind) == "float"
    try:
        param = plan.kernel.param(name)
    except KeyError:
        return False
    return param.is_pointer and param.base_type == "float"


def vector_walk(rw: Rewriter, walk: SegmentWalk, start: Node, bound: Node, acc: str,
                loaded: str, lanes: str, ilp: str) -> str:
    """The loop's text under ``VEC > 1``: head, ``float4`` middle (``ilp`` loads in flight a
    lane), tail; ``loaded`` is the term as rendered (``WB_RO(..)`` where LDG reads it)."""
    lane = f"(int)(threadIdx.x % {lanes})"
    first = f"(({rw.render(start.start_byte, start.end_byte)}) - {lane})"
    end = f"({rw.render(bound.start_byte, bound.end_byte)})"
    if walk.array is not None:
        first, end = f"{walk.array} + {first}", f"{walk.array} + {end}"
    load = "WB_RO(*{})" if loaded.startswith("WB_RO(") else "*{}"
    adds = " ".join(f"{acc} += wb_q{{}}.{c};" for c in _PARTS)
    return (f"  {{  // the segment's 16-byte-aligned middle as {_VECTOR} (head and tail one "
            "float a lane)\n"
            f"    const float* const wb_lo = {first};\n"
            f"    const float* const wb_hi = {end};\n"
            "    const long long wb_head = (long long)((16u - (unsigned)((unsigned long long)"
            "wb_lo % 16u)) % 16u / sizeof(float));\n"
            "    const float* const wb_mid = wb_lo + (wb_head < wb_hi - wb_lo ? wb_head : "
            "wb_hi - wb_lo);\n"
            f"    for (const float* wb_p = wb_lo + {lane}; wb_p < wb_mid; wb_p += {lanes}) "
            f"{acc} += {load.format('wb_p')};\n"
            f"    const {_VECTOR}* wb_v = reinterpret_cast<const {_VECTOR}*>(wb_mid) + {lane};\n"
            f"    const {_VECTOR}* const wb_vend = reinterpret_cast<const {_VECTOR}*>(wb_mid) + "
            f"(wb_hi - wb_mid) / {_WIDTH};\n"
            f"    for (; wb_v + ({ilp} - 1) * {lanes} < wb_vend; wb_v += {ilp} * {lanes}) {{\n"
            f"      {_VECTOR} wb_q[{ilp}];\n"
            "#pragma unroll\n"
            f"      for (int wb_u = 0; wb_u < {ilp}; ++wb_u) wb_q[wb_u] = "
            f"{load.format(f'(wb_v + wb_u * {lanes})')};\n"
            "#pragma unroll\n"
            f"      for (int wb_u = 0; wb_u < {ilp}; ++wb_u) {{ {adds.format(*['[wb_u]'] * 4)} }}\n"
            "    }\n"
            f"    for (; wb_v < wb_vend; wb_v += {lanes}) {{\n"
            f"      const {_VECTOR} wb_q = {load.format('wb_v')};\n"
            f"      {adds.format(*[''] * 4)}\n"
            "    }\n"
            f"    for (const float* wb_p = reinterpret_cast<const float*>(wb_vend) + {lane}; "
            f"wb_p < wb_hi; wb_p += {lanes}) {acc} += {load.format('wb_p')};\n"
            "  }\n")
