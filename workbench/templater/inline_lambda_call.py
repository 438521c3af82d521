"""The text one call of a single-expression callable expands to (:mod:`.inline_lambda`).

``a_at(row, k0 + tc)`` of ``[&](int r, int kk) { return A[r * K + kk]; }`` reads
``(A[row * K + (k0 + tc)])``: each parameter of the returned expression replaced by its
argument, parenthesised unless it is one name or literal. A parameter by value is a copy of
the argument converted to the parameter's type, so an argument whose type the expression
does not show to be that type is written ``(int)(...)``; a declared result type converts the
value the same way. An argument that reads memory (or calls a pure function) and that the
body reads more than once is evaluated once, as the call does: it becomes a ``const`` local
declared on the statement's line, just before it (where the statement is one of a block and
nothing on the way from it to the call evaluates it only sometimes: ``?:``, ``&&``, ``||``).
An argument that writes (``=``, ``++``, a call that is not pure) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import ancestors, text, walk
from workbench.templater.inline_bind import Refused, fresh
from workbench.templater.purity import PURE_CALLS

#: Integer and floating types an expression's type is told in (:func:`value_type`).
_ARITHMETIC = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^")
_GEOMETRY = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
#: Arguments that stay one operand as written (others are parenthesised).
_WHOLE = ("identifier", "number_literal", "field_expression", "parenthesized_expression",
          "subscript_expression", "call_expression")
_PLAIN = ("identifier", "number_literal", "field_expression", "true", "false")


@dataclass(frozen=True)
class Param:
    """One parameter of the callable: its name and type (``auto``: the argument's own)."""

    name: str
    type: str


@dataclass(frozen=True)
class Expansion:
    """The call's replacement and the declarations that go before its statement."""

    text: str
    hoisted: tuple[str, ...] = ()


def value_type(node: Node, types: Mapping[str, str]) -> str | None:
    """The type ``node`` plainly has (``int`` for ``r * K + kk`` of ints), or None where it
    takes reading C++'s conversions to tell."""
    kind = node.type
    if kind == "parenthesized_expression" and node.named_child_count == 1:
        return value_type(node.named_children[0], types)
    if kind == "identifier":
        return types.get(text(node))
    if kind == "number_literal":
        raw = text(node).lower()
        if re.fullmatch(r"(0x[0-9a-f]+|\d+)", raw):
            return "int"
        if re.fullmatch(r"[\d.]+(e[+-]?\d+)?f", raw) and not raw.startswith("0x"):
            return "float"
        return "double" if re.fullmatch(r"[\d.]+(e[+-]?\d+)?", raw) else None
    if kind == "field_expression" and text(node.child_by_field_name("argument")) in _GEOMETRY:
        return "unsigned int"
    if kind == "subscript_expression":
        base = types.get(text(node.child_by_field_name("argument")), "")
        return base[:-1] if base.endswith("*") and not base.endswith("**") else None
    if kind == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
        inner = value_type(node.child_by_field_name("argument"), types)  # type: ignore[arg-type]
        return inner if inner in ("int", "float", "double") else None
    if kind == "binary_expression" and text(node.child_by_field_name("operator")) in _ARITHMETIC:
        left = value_type(node.child_by_field_name("left"), types)  # type: ignore[arg-type]
        right = value_type(node.child_by_field_name("right"), types)  # type: ignore[arg-type]
        return left if left == right and left in ("int", "float", "double") else None
    return None


def expand(call: Node, params: tuple[Param, ...], body: Node, result: str,
           types: Mapping[str, str], taken: set[str], owner: str) -> Expansion:
    """The expansion of ``call`` (see the module doc); ``body`` is the returned expression,
    ``result`` the declared result type ("" when deduced), ``types`` the kernel's names'
    types, ``taken`` the names in use (a hoisted local's name joins them); raises
    :class:`~.inline_bind.Refused` with the reason."""
    args_node = call.child_by_field_name("arguments")
    args = [] if args_node is None else [a for a in args_node.named_children
                                         if a.type != "comment"]
    if len(args) != len(params):
        raise Refused(f"the call `{_flat(call)}` passes {len(args)} arguments to "
                      f"{len(params)} parameters", call)
    uses = {p.name: sum(1 for n in walk(body) if n.type == "identifier" and text(n) == p.name)
            for p in params}
    subs: dict[str, str] = {}
    hoisted: list[str] = []
    own = dict(types)
    for p, arg in zip(params, args, strict=True):
        why = _writes(arg)
        if why:
            raise Refused(f"the argument `{_flat(arg)}` of `{_flat(call)}` {why}: expanding "
                          "the call would run it once for each use of the parameter", arg)
        kind = p.type if p.type != "auto" else value_type(arg, types)
        if uses[p.name] > 1 and not _plain(arg):
            local = fresh(f"{p.name}_{owner}", taken)
            decl = p.type if p.type != "auto" else "auto"
            _hoistable(call, arg)
            hoisted.append(f"const {decl} {local} = {_flat(arg)};")
            subs[p.name] = local
        else:
            same = p.type == "auto" or value_type(arg, types) == p.type
            spelled = _flat(arg) if arg.type in _WHOLE else f"({_flat(arg)})"
            subs[p.name] = spelled if same else f"({p.type}){spelled}"
        if kind:
            own[p.name] = kind
    value = f"({_substituted(body, subs)})"
    if result and value_type(body, own) != result:
        value = f"(({result}){value})"
    return Expansion(value, tuple(hoisted))


def statement_of(call: Node) -> Node | None:
    """The statement of a block that ``call`` stands in (None where there is none)."""
    n: Node | None = call
    while n is not None and (n.parent is None or n.parent.type != "compound_statement"):
        n = n.parent
    return n


def _hoistable(call: Node, arg: Node) -> None:
    statement = statement_of(call)
    if statement is None or statement.type not in ("expression_statement", "declaration",
                                                   "return_statement"):
        raise Refused(f"the argument `{_flat(arg)}` is read more than once by the body and "
                      "the call is not in a statement it can be evaluated before", arg)
    if any(a.type == "lambda_expression" for a in ancestors(statement)):
        raise Refused(f"the argument `{_flat(arg)}` is read more than once by the body and "
                      "the call is in another lambda's body", arg)
    n = call.parent
    while n is not None and n != statement:
        if n.type == "conditional_expression" or (n.type == "binary_expression" and text(
                n.child_by_field_name("operator")) in ("&&", "||")):
            raise Refused(f"the argument `{_flat(arg)}` is read more than once by the body and "
                          f"the call runs only sometimes (`{_flat(n)}`): evaluating it "
                          "before the statement could read what the kernel does not", arg)
        n = n.parent


def _writes(arg: Node) -> str:
    for n in walk(arg):
        if n.type in ("assignment_expression", "update_expression", "comma_expression"):
            return "writes"
        if n.type == "call_expression" and text(n.child_by_field_name("function")) not in \
                PURE_CALLS:
            return f"calls {text(n.child_by_field_name('function'))}, not known to be pure"
    return ""


def _plain(arg: Node) -> bool:
    """Read twice, it reads the same value and no memory: names, literals, arithmetic."""
    return all(n.type in (*_PLAIN, "parenthesized_expression", "binary_expression",
                          "unary_expression", "field_identifier", "cast_expression",
                          "type_descriptor", "primitive_type", ".", "(", ")", "-", "+", "*",
                          "/", "%", "<<", ">>", "&", "|", "^", "~", "!", "<", ">", "<=",
                          ">=", "==", "!=", "&&", "||")
               for n in walk(arg)) and not (
        arg.type == "field_expression" and text(arg.child_by_field_name("argument"))
        not in _GEOMETRY)


def _substituted(body: Node, subs: Mapping[str, str]) -> str:
    """``body``'s text on one line, each parameter's identifier replaced, comments dropped."""
    data = body.text or b""
    start = body.start_byte
    edits = [(n.start_byte - start, n.end_byte - start, subs[text(n)] if n.type ==
              "identifier" else " ") for n in walk(body)
             if (n.type == "identifier" and text(n) in subs) or n.type == "comment"]
    for lo, hi, new in sorted(edits, reverse=True):
        data = data[:lo] + new.encode() + data[hi:]
    return " ".join(data.decode().split())


def _flat(node: Node) -> str:
    return _substituted(node, {})
