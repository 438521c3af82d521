"""Byte dot products four at a time: ``__dp4a`` where a reduction's VEC-wide loads are bytes.

An int8 (or uint8) dot product written per element, ``s += (int)a[i] * (int)b[i]`` into an
``int`` (or ``unsigned``) accumulator, is what ``__dp4a(x, y, s)`` computes for four packed
bytes of each: the four byte products, each byte sign- (or zero-) extended, added to ``s``.
Integer sums wrap alike in any order, so the result is exact, bit for bit. Where the
reduction family (:mod:`.reduce_rewrite`) already loads VEC bytes of each array per step,
a whole-vector step with ``VEC % 4 == 0`` runs ``VEC / 4`` ``__dp4a`` on the vectors'
32-bit words instead of ``VEC`` byte products (the known practice for int8 dot products
on GPUs since sm_61: one instruction instead of four extractions, four conversions and four
multiply-adds); the tail elements after the last whole vector keep the kernel's own
expression, and ``VEC`` of 1 or 2 run as written. It is not a knob: the two forms give the
same bits, and the packed one does strictly less work per byte.

Recognised on the parse: the operator a sum (``s += E`` / ``s = s + E``), the accumulator
``int``, ``unsigned`` or ``unsigned int``, ``E`` exactly ``X * Y`` where each of X, Y is an
access ``A[i]`` the vector rewrite loads (optionally cast to ``int`` / ``unsigned``, the
promotion C already applies), of arrays of one signedness of byte (``signed char``,
``int8_t``, ``char`` as nvcc's signed char; or ``unsigned char``, ``uint8_t``). Anything else
keeps the per-element form.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, strip, text
from workbench.templater.plan import Plan
from workbench.templater.reduce_records import Reduction

_SIGNED = {"signed char", "int8_t", "char"}
_UNSIGNED = {"unsigned char", "uint8_t"}
_CASTS = {"int", "unsigned", "unsigned int", "int32_t", "uint32_t", "signed int"}
_ACCS = {"int", "unsigned", "unsigned int"}


@dataclass(frozen=True)
class Dp4a:
    """The two arrays whose packed words a ``__dp4a`` multiplies, and their signedness."""

    left: str
    right: str
    signed: bool


def _operand(node: Node, accesses: dict[tuple[int, int], str]) -> str | None:
    """The array of an access ``A[i]``, optionally cast to a 32-bit integer type."""
    node = strip(node)
    if node.type == "cast_expression":
        typ = node.child_by_field_name("type")
        if typ is None or " ".join(text(typ).split()) not in _CASTS:
            return None
        value = node.child_by_field_name("value")
        if value is None:
            return None
        node = strip(value)
    return accesses.get((node.start_byte, node.end_byte))


def find_dp4a(plan: Plan, red: Reduction, found: list[tuple[Node, str]]) -> Dp4a | None:
    """The packed form of ``red``'s accumulation, or None where it is not a byte dot
    product of the vector-loaded accesses ``found`` (node, array)."""
    if red.op.kind != "sum" or red.acc_type not in _ACCS:
        return None
    parts = binary(red.value)
    if parts is None or parts[1] != "*":
        return None
    accesses = {(n.start_byte, n.end_byte): a for n, a in found}
    left, right = _operand(parts[0], accesses), _operand(parts[2], accesses)
    if left is None or right is None:
        return None
    kinds = {" ".join(plan.kernel.param(a).base_type.split()) for a in (left, right)}
    if kinds <= _SIGNED:
        return Dp4a(left, right, True)
    if kinds <= _UNSIGNED:
        return Dp4a(left, right, False)
    return None


def packed_step(red: Reduction, dp: Dp4a, per_element: str, pad: str) -> str:
    """The statements that add one whole vector of each array (``wb_in_A[wb_u]``) into
    ``wb_acc[wb_u]``: ``VEC / 4`` ``__dp4a`` where VEC is a multiple of 4, else
    ``per_element`` (the kernel's own expression per element)."""
    word = "int" if dp.signed else "unsigned"
    acc = "wb_acc[wb_u]"
    a = f"reinterpret_cast<const {word}*>(wb_in_{dp.left}[wb_u].v)[wb_w]"
    b = f"reinterpret_cast<const {word}*>(wb_in_{dp.right}[wb_u].v)[wb_w]"
    call = f"__dp4a({a}, {b}, ({word}){acc})"
    return (f"#if VEC % 4 == 0  // four byte products at a time (__dp4a, exact)\n"
            f"#pragma unroll\n"
            f"{pad}for (int wb_w = 0; wb_w < VEC / 4; ++wb_w) {acc} = ({red.acc_type}){call};\n"
            f"#else\n{per_element}#endif\n")
