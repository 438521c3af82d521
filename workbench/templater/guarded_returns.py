"""A helper's guarded returns read as one conditional, before the analysis (issue 28:
respell round 31).

``__device__ float centred(..) { if (k < n && c < p) return x[c * n + k] - mu[c]; return
0.0f; }`` is ``return k < n && c < p ? x[c * n + k] - mu[c] : 0.0f;`` written by a hand
that guards first: a statement runs only where the ``if`` before it did not return, as a
conditional evaluates its third operand only where its condition is false. The expression
inliner (:mod:`.inline_lambda`) reads a helper of one ``return expression;`` only, so the
same tile load lifted or not by the spelling of its guard (pearson_helper_while's helper
was left a call: its tile's bounds test hidden, the depth along k was kept a multiple of
BK).

Rewritten: the body of a function defined at file scope (not the entry) or of a lambda in
the entry's body that is a chain of ``if (C) return A;`` (or ``{ return A; }``, or with
``else`` holding the rest of the chain) ending in ``return B;``, nothing else but comments:
the body becomes ``return (C1) ? (A1) : (C2) ? (A2) : (B);``, every line keeping its
number. Each arm is converted to the function's declared result type (``(float)(A)``) where
that is not the type the conditional gives it anyway (an arm that is a literal of the
result type, ``0.0f`` in a ``float`` function, or an element of a parameter pointing at
it, ``p[c]`` of a ``const float* p``): a conditional converts its arms to their common
type first, which a ``return`` does not. A lambda without a declared result type
needs none (its returns deduce one type: the arms have it). A function returning a
reference is left as written (its conditional would be a copy). A condition that declares a
variable, or an arm with a statement before its ``return``, is no chain: the body is left
as written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import CudaSourceError
from workbench.templater.analysis import strip, text, walk
from workbench.templater.inline_bind import declarator_name, statements, type_key
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.records import Finding

TRANSFORM = "GUARDED_RETURNS"
#: Result types whose literals need no conversion, and how such a literal ends.
_LITERAL_ENDS = {"float": ("f", "F"), "double": ("",), "int": ("",)}


def guarded_returns(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each helper's and lambda's chain of guarded returns written as one
    ``return`` of a conditional (module doc); unchanged when there is none."""
    try:
        source = parse_cuda(current.text, current.file)
        kernel = source.function_node(source.kernel(entry))
    except CudaSourceError:
        return current
    edits: list[tuple[int, int, str]] = []
    findings: list[Finding] = []
    for fn in walk(source.tree.root_node):
        if fn.type == "function_definition" and fn != kernel:
            result = _result_type(fn)
            if result is None:
                continue
            result = None if result == "auto" else result  # deduced: one type
            owner = "a __device__ function"
        elif fn.type == "lambda_expression" and kernel.start_byte <= fn.start_byte < \
                kernel.end_byte:
            result = _lambda_result(fn)
            owner = "a lambda"
        else:
            continue
        body = fn.child_by_field_name("body")
        stmts = statements(body) if body is not None and \
            body.type == "compound_statement" else []
        if len(stmts) < 2 and not (stmts and stmts[0].type == "if_statement"):
            continue
        chain = _chain(stmts, _Result(result, _pointees(fn)))
        if chain is None:
            continue
        first, last = stmts[0], stmts[-1]
        span = current.text.encode()[first.start_byte:last.end_byte].decode()
        edits.append((first.start_byte, last.end_byte,
                      f"return {chain};" + "\n" * span.count("\n")))
        findings.append(Finding(TRANSFORM, True, f"{_name(fn)} ({owner}) returns one "
                                "conditional: its guarded returns read as `c ? a : b`",
                                current.baseline_line(first.start_point.row + 1)))
    if not edits:
        return current
    return replace(current.edited(edits), findings=current.findings + tuple(findings))


@dataclass(frozen=True)
class _Result:
    """What a chain's arms convert to: the declared result type (None: deduced, no
    conversion) and the pointer parameters whose elements are of that type already."""

    kind: str | None
    loads: frozenset[str]


def _chain(stmts: list[Node], result: _Result) -> str | None:
    """``if (C) return A; ..; return B;`` as ``(C) ? (A) : ..(B)``; None where the
    statements are no such chain."""
    if not stmts:
        return None
    head, rest = stmts[0], stmts[1:]
    if head.type == "return_statement":
        value = _returned([head], result)
        return value if not rest else None
    if head.type != "if_statement":
        return None
    cond = head.child_by_field_name("condition")
    values = [c for c in cond.named_children if c.type != "comment"] if cond is not None \
        else []
    if len(values) != 1 or values[0].type in ("declaration", "init_statement") or \
            any(text(c) == "constexpr" for c in head.children):
        return None
    consequence = head.child_by_field_name("consequence")
    then = _returned(_block(consequence), result)
    alternative = head.child_by_field_name("alternative")
    if alternative is not None:
        if rest:
            return None
        other = alternative.named_children[-1] if alternative.named_children else None
        tail = _chain(_block(other), result)
    else:
        tail = _chain(rest, result)
    if then is None or tail is None:
        return None
    return f"({text(values[0])}) ? {then} : {tail}"


def _block(s: Node | None) -> list[Node]:
    if s is None:
        return []
    return statements(s) if s.type == "compound_statement" else [s]


def _returned(stmts: list[Node], result: _Result) -> str | None:
    """The arm ``return A;`` gives, converted to ``result`` where needed; None where
    ``stmts`` is not one ``return A;``."""
    if len(stmts) != 1 or stmts[0].type != "return_statement" or \
            not stmts[0].named_children:
        return None
    value = stmts[0].named_children[0]
    if any(n.type in ("lambda_expression", "comma_expression") for n in walk(value)):
        return None
    bare = strip(value) if value.type == "parenthesized_expression" else value
    loaded = bare.type == "subscript_expression" and \
        text(bare.child_by_field_name("argument")) in result.loads
    if result.kind is None or loaded or _literal_of(value, result.kind):
        return f"({text(value)})"
    return f"(({result.kind})({text(value)}))"


def _pointees(fn: Node) -> frozenset[str]:
    """The parameters of ``fn`` (a function) that point at its result type: an element
    loaded through one (``p[i]``) is of that type already."""
    result = _result_type(fn) if fn.type == "function_definition" else None
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type == "pointer_declarator":
        d = d.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    out = set()
    for p in plist.named_children if plist is not None and result else []:
        decl = p.child_by_field_name("declarator")
        name = declarator_name(decl)
        if p.type == "parameter_declaration" and name is not None and \
                type_key(p.child_by_field_name("type"), decl) == f"{result}*":
            out.add(text(name))
    return frozenset(out)


def _literal_of(value: Node, result: str) -> bool:
    """``value`` is a number literal of type ``result`` (``0.0f`` of float)."""
    if value.type != "number_literal" or result not in _LITERAL_ENDS:
        return False
    written = text(value)
    floating = any(c in written for c in ".eE") and not written.lower().startswith("0x")
    if result == "int":
        return not floating and written.isdigit()
    if result == "float":
        return floating and written.endswith(("f", "F"))
    return floating and not written.endswith(("f", "F", "l", "L"))


def _result_type(fn: Node) -> str | None:
    """A function's declared result type (its words but qualifiers; a pointer's ``*``);
    None where it has none the parser shows."""
    kind = fn.child_by_field_name("type")
    if kind is None:
        return None
    words = [w for w in text(kind).split() if w not in ("const", "volatile")]
    d = fn.child_by_field_name("declarator")
    stars = ""
    while d is not None and d.type == "pointer_declarator":
        stars += "*"
        d = d.child_by_field_name("declarator")
    if d is None or d.type != "function_declarator":
        return None  # a reference (``float& at(..)``): a conditional of two is no lvalue
    return " ".join(words) + stars


def _lambda_result(lam: Node) -> str | None:
    """A lambda's declared result type (``-> float``), None where deduced."""
    d = lam.child_by_field_name("declarator")
    trailing = next((c for c in d.children if c.type == "trailing_return_type"), None) \
        if d is not None else None
    if trailing is None:
        return None
    return " ".join(text(trailing).lstrip("-> \t").split())


def _name(fn: Node) -> str:
    if fn.type == "lambda_expression":
        decl = fn.parent.parent if fn.parent is not None else None
        found = decl.child_by_field_name("declarator") if decl is not None else None
        name = found.child_by_field_name("declarator") if found is not None else None
        return text(name) if name is not None else "a lambda"
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "function_declarator"):
        d = d.child_by_field_name("declarator")
    return text(d) if d is not None else "a function"
