"""The integer types CTZ (:mod:`.bitloops`) reads, and its proof that a signed local is never
negative.

A variable's type is read from its one declaration in the function (a local, a parameter, a
reference parameter): the integer keywords and the fixed-width names (``uint32_t``,
``size_t``), signedness and width; a typedef the file makes is not followed (refused).

A signed local halved by a loop is read as the unsigned value it holds where every value it
is ever given lies in ``[0, max]`` of its type, by induction over its writes: its
initializer and each later write is built only from itself (already never negative), integer
literals without a ``u`` suffix below its type's sign bit, values of an unsigned type
narrower than it (a local or parameter, an element of a pointer parameter to one, a cast to
one: each fits), by ``+`` and ``*`` (the signed overflow that would break the bound is
undefined behaviour), ``/``, ``%`` and ``>>`` (by a non-negative literal) and ``&`` with one
such operand; a write through its address (``&x`` anywhere in the function), a reference
binding (an argument of a file function taking a reference), a subtraction or a decrement
refuses it, with the line (so does an argument of a method or a template call, whose
parameters are not read).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    int_value,
    text,
    tree_root,
    unparenthesized,
    walk,
    write_target,
)
from workbench.templater.vector_access import Illegal

_UNSIGNED = {"unsigned", "uint", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t",
             "uintptr_t", "ulong", "ulonglong", "ushort", "uchar"}
_SIGNED = {"int", "long", "short", "char", "signed", "int8_t", "int16_t", "int32_t",
           "int64_t", "ptrdiff_t", "intptr_t", "longlong"}
_WIDE = ("long", "uint64_t", "int64_t", "size_t", "uintptr_t", "intptr_t", "ptrdiff_t",
         "ulong", "longlong", "ulonglong")
_NARROW = ("char", "short", "uint8_t", "uint16_t", "int8_t", "int16_t", "ushort", "uchar")
_DECLARATORS = ("init_declarator", "reference_declarator", "pointer_declarator",
                "array_declarator")


@dataclass(frozen=True)
class IntType:
    """A variable's integer type as CTZ reads it: signedness, width in bits (a value's: 16
    for ``short`` and ``char``), whether it is declared a reference (another name of an
    object), and its declaration."""

    spelled: str
    unsigned: bool
    bits: int
    reference: bool
    decl: Node


def type_of_words(spelled: str) -> tuple[bool, int] | None:
    """(unsigned, bits) of an integer type's words, else None."""
    tokens = spelled.replace("long long", "longlong").split()
    if not tokens or not all(t in _UNSIGNED | _SIGNED for t in tokens):
        return None
    unsigned = any(t in _UNSIGNED for t in tokens) and "signed" not in tokens
    bits = 64 if any(w in spelled for w in _WIDE) else \
        16 if any(w in tokens for w in _NARROW) else 32
    return unsigned, bits


def int_type(fn: Node, name: str, at: Node) -> IntType:
    """The integer type ``name`` is declared with in ``fn`` (a parameter, a reference
    parameter or a local), or Illegal."""
    decl = _declaration(fn, name)
    if decl is None:
        raise Illegal(f"`{name}` is not one local or parameter of the function", at)
    if any(d.type in ("pointer_declarator", "array_declarator")
           for top in decl.children_by_field_name("declarator") for d in walk(top)
           if declarator_name(d) == name):
        raise Illegal(f"`{name}` is no integer scalar", at)
    spelled = _type_words(decl)
    read = type_of_words(spelled)
    if read is None:
        raise Illegal(f"`{name}` has the type `{spelled or text(decl)[:30]}`, no integer type "
                      "the rule knows", at)
    reference = any(d.type == "reference_declarator" and declarator_name(d) == name
                    for top in decl.children_by_field_name("declarator") for d in walk(top))
    return IntType(spelled, read[0], read[1], reference, decl)


def _declaration(fn: Node, name: str) -> Node | None:
    found = [n for n in walk(fn) if n.type in ("parameter_declaration", "declaration") and any(
        declarator_name(d) == name for d in n.children_by_field_name("declarator"))]
    return found[0] if len(found) == 1 else None


def _type_words(decl: Node) -> str:
    return " ".join(text(c) for c in decl.children
                    if c.type in ("primitive_type", "sized_type_specifier", "type_identifier"))


def declarator_name(d: Node) -> str:
    """The name a declarator declares (through ``=``, ``&``, ``*`` and ``[]``)."""
    while d.type in _DECLARATORS:
        inner = d.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in d.named_children if c.type != "comment"), None)
        if inner is None or inner == d:
            break
        d = inner
    return text(d)


def never_negative(fn: Node, name: str, typed: IntType, at: Node) -> None:
    """Returns where the signed local ``name`` of ``fn`` is never negative (see the module
    doc); else Illegal naming the write that is not shown so."""
    def refuse(why: str, node: Node) -> Illegal:
        return Illegal(f"`{name}` is a signed `{typed.spelled}` not shown non-negative: {why} "
                       "(a shift and a division by two differ on a negative value)", node)

    if typed.decl.type != "declaration" or typed.reference:
        raise refuse("a parameter or a reference holds the caller's value", at)
    declarator = next(d for d in typed.decl.children_by_field_name("declarator")
                      if declarator_name(d) == name)
    value = declarator.child_by_field_name("value") \
        if declarator.type == "init_declarator" else None
    if value is None or not _fits(fn, name, typed.bits, value):
        raise refuse(f"its first value `{text(value)[:40]}` may be negative"
                     if value is not None else "it is declared without a value", at)
    callees = {_function_name(d): d for d in walk(tree_root(fn))
               if d.type == "function_definition"}
    for n in walk(fn):
        if n.type == "pointer_expression" and text(n).lstrip().startswith("&") and \
                text(unparenthesized(n.child_by_field_name("argument") or n)) == name:
            raise refuse(f"its address is taken (`{text(n)}`)", n)
        if n.type == "call_expression" and _binds_reference(n, name, callees):
            raise refuse(f"`{text(n)[:40]}` may write it through a reference", n)
        target = write_target(n)
        if target is None or text(target) != name:
            continue
        if n.type == "update_expression":
            if text(n).strip().startswith("--") or text(n).strip().endswith("--"):
                raise refuse(f"`{text(n)}` steps it down", n)
            continue
        op = text(n.child_by_field_name("operator"))
        right = n.child_by_field_name("right")
        if right is None or op not in ("=", "+=", "*=", "/=", "%=", ">>=", "&=", "|=") or \
                not _fits(fn, name, typed.bits, right):
            raise refuse(f"`{text(n)[:40]}` may make it negative", n)


def _function_name(fn: Node) -> str:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type in ("function_declarator", *_DECLARATORS):
        d = d.child_by_field_name("declarator")
    return text(d)


def _binds_reference(call: Node, name: str, callees: dict[str, Node]) -> bool:
    """``call`` passes ``name`` to a file function's reference parameter."""
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    values = [a for a in args.named_children if a.type != "comment"] if args else []
    if not any(text(unparenthesized(a)) == name for a in values):
        return False
    if fn is None or fn.type != "identifier":  # a method, a template: not read, may bind
        return True
    callee = callees.get(text(fn))
    if callee is None:  # a CUDA or C built-in: its integer arguments are values
        return False
    declarator = callee.child_by_field_name("declarator")
    plist = declarator.child_by_field_name("parameters") if declarator is not None else None
    params = [p for p in (plist.named_children if plist is not None else [])
              if p.type == "parameter_declaration"]
    return any(text(unparenthesized(a)) == name and k < len(params) and
               any(d.type == "reference_declarator" for d in walk(params[k]))
               for k, a in enumerate(values))


def _fits(fn: Node, name: str, bits: int, node: Node) -> bool:
    """``node``'s value lies in ``[0, 2^(bits-1))`` wherever ``name`` does (the module doc's
    induction)."""
    e = unparenthesized(node)
    if e.type == "number_literal":
        value = int_value(e)
        return value is not None and 0 <= value < 1 << (bits - 1) and \
            "u" not in text(e).lower()
    if e.type == "identifier":
        if text(e) == name:
            return True
        decl = _declaration(fn, text(e))
        read = type_of_words(_type_words(decl)) if decl is not None else None
        if decl is not None and any(d.type in ("pointer_declarator", "array_declarator")
                                    for d in walk(decl)):
            return False
        return read is not None and read[0] and read[1] < bits
    if e.type in ("subscript_expression", "pointer_expression"):
        if e.type == "pointer_expression" and not text(e).lstrip().startswith("*"):
            return False
        base = e.child_by_field_name("argument")
        decl = _declaration(fn, text(unparenthesized(base))) if base is not None else None
        if decl is None or not any(d.type in ("pointer_declarator", "array_declarator")
                                   for d in walk(decl)):
            return False
        read = type_of_words(_type_words(decl))
        return read is not None and read[0] and read[1] < bits
    if e.type == "cast_expression":
        kind = e.child_by_field_name("type")
        read = type_of_words(text(kind)) if kind is not None else None
        return read is not None and read[0] and read[1] < bits
    if e.type == "binary_expression":
        op = text(e.child_by_field_name("operator"))
        left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
        if left is None or right is None:
            return False
        if op in ("+", "*"):
            return _fits(fn, name, bits, left) and _fits(fn, name, bits, right)
        if op in ("/", "%"):
            return _fits(fn, name, bits, left) and _fits(fn, name, bits, right)
        if op == ">>":
            shift = int_value(right)
            return _fits(fn, name, bits, left) and shift is not None and 0 <= shift < bits
        if op == "&":
            return _fits(fn, name, bits, left) or _fits(fn, name, bits, right)
    return False
