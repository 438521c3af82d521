"""Statement-bodied lambdas and ``void`` ``__device__`` helpers that update the caller's
locals, written into their calls before the analysis (issue 28: nbody_accel).

``auto pull = [&](const float4 other) { ...; ax += w * dx; };`` called as ``pull(tile[k]);``
(or ``__device__ void pull(float4 me, float4 other, float& ax, ...)`` called as
``pull(me, tile[k], ax, ...);``) hides the updates of the thread's running sums from every
family: the walk of a tile then reads as a call, not as ``ax += term``. The compiler inlines
such a call; this pass does so in the text: the call's statement becomes a block on the
call's line (every line keeps its number), its parameters bound by declarations at its top
(``const float4 other = tile[k];``) and a non-const reference parameter given an identifier
read as that identifier, so ``ax += w * dx`` is what the analysis sees. :mod:`.inline_lambda`
keeps the single-expression callables; this one takes those with statements.

Written into its calls (else left as written, with a note naming the line and the reason):

- a lambda bound by ``auto name = [&](params) { statements };`` in the kernel's body whose
  captures are by reference (``&``, ``&x``), its name declared once and only called, each
  as a statement; each kernel name it reads declared once, before it;
- a file-scope ``void`` ``__device__`` function, defined once, not a template, with a
  non-const reference parameter (the caller's state it updates), called only as
  statements; it reads no name the kernel declares (those would be the kernel's inside it);

and in both: parameters named, by value or by reference (no arrays), no ``return``,
``goto``, label, preprocessor line, string or lambda in the body, and no local of the body
named like a name the kernel declares outside it (a read could then mean either). A
parameter whose name an argument mentions is bound under a fresh name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import line, text, tree_root, walk
from workbench.templater.inline_bind import (
    Refused,
    callee_name,
    declarator_name,
    declared,
    fresh,
    function_name,
    statements,
)
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body
from workbench.templater.records import Finding

TRANSFORM = "INLINE_BODY"
#: Rounds of expansion (a callable whose body calls another is written in a later round).
_ROUNDS = 4
_BARRED = {"return_statement": "a return", "goto_statement": "a goto",
           "labeled_statement": "a label", "string_literal": "a string",
           "lambda_expression": "a lambda", "comment": ""}


@dataclass(frozen=True)
class _Param:
    name: str
    declaration: Node  # the parameter's declaration (its type and declarator)
    reference: bool  # a non-const reference: the caller's variable itself


@dataclass(frozen=True)
class _Body:
    name: str
    kind: str  # "a lambda" or "a __device__ function"
    params: tuple[_Param, ...]
    body: Node  # the compound statement
    definition: Node  # the lambda's declaration or the function's definition
    scope: Node  # where its calls lie


def expand_bodies(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with the calls of ``entry``'s statement-bodied callables written in
    (see the module doc); unchanged where there are none or the kernel cannot be found."""
    notes: dict[tuple[int, str], Finding] = {}
    for _ in range(_ROUNDS):
        body = entry_body(current, entry)
        if body is None or body.parent is None:
            break
        root = tree_root(body)
        edits: list[tuple[int, int, str]] = []
        found = _candidates(root, body, notes, current)
        taken = {text(n) for n in walk(root) if n.type == "identifier"}
        for c in found.values():
            if any(callee_name(n) in found for n in walk(c.body) if n.type == "call_expression"):
                continue  # its body's calls are written first
            try:
                sites = _calls(c)
                edits += [(s.start_byte, s.end_byte, _written(c, s, taken)) for s in sites]
            except Refused as refused:
                current.note(notes, TRANSFORM, False, f"{c.name} ({c.kind}) is not written into its "
                      f"calls: {refused.reason}", refused.line)
                continue
            if c.kind == "a lambda":
                rows = c.definition.end_point[0] - c.definition.start_point[0]
                edits.append((c.definition.start_byte, c.definition.end_byte,
                              f"// {c.name}: written into its calls" + "\n" * rows))
            at = ", ".join(str(current.baseline_line(line(s))) for s in sites)
            current.note(notes, TRANSFORM, True, f"{c.name} ({c.kind}) written into its calls (lines "
                  f"{at}): the analysis reads its statements", line(c.definition))
        if not edits:
            break
        current = current.edited(edits)
    return replace(current, findings=(*current.findings, *notes.values()))


def _candidates(root: Node, body: Node, notes: dict[tuple[int, str], Finding],
                current: InlinedSource) -> dict[str, _Body]:
    kernel = body.parent
    assert kernel is not None
    names = declared(kernel)
    called = {callee_name(n) for n in walk(body) if n.type == "call_expression"}
    out: dict[str, _Body] = {}
    for n in walk(body):
        if n.type == "lambda_expression" and (found := _bound(n)) is not None:
            try:
                out[found[0]] = _lambda(found[0], n, found[1], names)
            except Refused as refused:
                current.note(notes, TRANSFORM, False, f"{found[0]} (a lambda) is not written into its "
                      f"calls: {refused.reason}", refused.line)
    for fn in root.children:
        name = function_name(fn)
        if name in called and name not in names and _void_updater(fn):
            try:
                out[name] = _helper(name, fn, root, body, names)
            except Refused as refused:
                current.note(notes, TRANSFORM, False, f"{name} (a __device__ function) is not written "
                      f"into its calls: {refused.reason}", refused.line)
    return out


def _bound(lam: Node) -> tuple[str, Node] | None:
    """(name, declaration) of ``auto name = [&](..) { statements };``; None for any other
    lambda (an expression body is :mod:`.inline_lambda`'s)."""
    init = lam.parent
    decl = init.parent if init is not None else None
    block = lam.child_by_field_name("body")
    if init is None or decl is None or init.type != "init_declarator" or \
            decl.type != "declaration" or text(decl.child_by_field_name("type")) != "auto" or \
            block is None:
        return None
    body = statements(block)
    if len(body) == 1 and body[0].type == "return_statement":
        return None
    name = init.child_by_field_name("declarator")
    return (text(name), decl) if name is not None and name.type == "identifier" else None


def _parameters(owner: Node) -> tuple[_Param, ...]:
    plist = next((d.child_by_field_name("parameters") for d in walk(owner)
                  if d.type in ("function_declarator", "lambda_declarator")), None)
    out: list[_Param] = []
    for p in [] if plist is None else [c for c in plist.named_children if c.type != "comment"]:
        d = p.child_by_field_name("declarator")
        name = declarator_name(d)
        if p.type != "parameter_declaration" or name is None or d is None or \
                any(n.type in ("array_declarator", "function_declarator") for n in walk(d)):
            raise Refused(f"the parameter `{text(p)}` is not a named value or reference", p)
        constant = "const" in text(p.child_by_field_name("type")).split() or \
            any(c.type == "type_qualifier" and text(c) == "const" for c in p.children)
        out.append(_Param(text(name), p, d.type == "reference_declarator" and not constant))
    return tuple(out)


def _void_updater(fn: Node) -> bool:
    """A ``void`` ``__device__`` (not ``__global__``) function with a non-const reference
    parameter: the caller's state it updates."""
    kinds = {c.type for c in fn.children}
    if fn.type != "function_definition" or "__device__" not in kinds or "__global__" in kinds \
            or text(fn.child_by_field_name("type")) != "void":
        return False
    try:
        return any(p.reference for p in _parameters(fn.child_by_field_name("declarator") or fn))
    except Refused:
        return True  # a candidate: the refusal is noted with its parameter


def _checked_body(block: Node, params: tuple[_Param, ...], outside: set[str]) -> None:
    """Refuses a body the block at a call would not run as the call does."""
    for n in walk(block):
        if n.type in _BARRED and n.type != "comment":
            raise Refused(f"its body holds {_BARRED[n.type]} (`{' '.join(text(n).split())[:40]}`)",
                          n)
        if n.type.startswith("preproc"):
            raise Refused("its body holds a preprocessor line", n)
    own = set(declared(block)) - {p.name for p in params}
    clash = sorted(own & outside)
    if clash:
        raise Refused(f"its body declares {clash[0]}, a name the kernel declares too: a read "
                      "of it could mean either", block)


def _lambda(name: str, lam: Node, decl: Node, names: dict[str, list[Node]]) -> _Body:
    spec = lam.child_by_field_name("captures")
    items = [" ".join(text(c).split()) for c in (spec.named_children if spec else [])]
    if not items or any(i != "&" and not re.fullmatch(r"&\s*\w+", i) for i in items):
        raise Refused(f"it captures `{', '.join(items) or 'nothing'}`, not by reference "
                      "only: a copy is taken where it is defined", lam)
    if len(names.get(name, [])) != 1:
        raise Refused(f"the name {name} is declared more than once in the kernel", lam)
    declarator = lam.child_by_field_name("declarator")
    if declarator is not None and any(c.type == "trailing_return_type"
                                      for c in declarator.children):
        raise Refused("it declares a result type: its calls are values", lam)
    params = _parameters(declarator) if declarator is not None else ()
    block = lam.child_by_field_name("body")
    assert block is not None
    inner = {n.start_byte for d in declared(lam).values() for n in d}
    outside = {k for k, v in names.items() if any(n.start_byte not in inner for n in v)}
    _checked_body(block, params, outside)
    local = set(declared(lam))
    for n in walk(block):
        if n.type == "identifier" and text(n) in outside and text(n) not in local:
            found = names[text(n)]
            if len(found) != 1 or found[0].start_byte > decl.start_byte:
                raise Refused(f"it reads {text(n)}, which the kernel declares "
                              f"{'more than once' if len(found) != 1 else 'after it'}: a call "
                              "may not read the variable the lambda reads", n)
    scope = decl.parent if decl.parent is not None else decl
    return _Body(name, "a lambda", params, block, decl, scope)


def _helper(name: str, fn: Node, root: Node, body: Node,
            names: dict[str, list[Node]]) -> _Body:
    if sum(1 for f in root.children if function_name(f) == name) != 1:
        raise Refused(f"{name} is defined more than once", fn)
    params = _parameters(fn.child_by_field_name("declarator") or fn)
    block = fn.child_by_field_name("body")
    assert block is not None
    _checked_body(block, params, set(names))
    own = set(declared(block)) | {p.name for p in params}
    for n in walk(block):
        if n.type == "identifier" and text(n) not in own and text(n) in names:
            raise Refused(f"it reads {text(n)}, a name the kernel declares too: written into "
                          "the kernel it would read the kernel's", n)
    return _Body(name, "a __device__ function", params, block, fn, body)


def _calls(c: _Body) -> list[Node]:
    """The statements calling ``c`` (refused where its name is used otherwise)."""
    out: list[Node] = []
    start = c.definition.end_byte if c.kind == "a lambda" else c.scope.start_byte
    for n in walk(c.scope):
        if n.type != "identifier" or text(n) != c.name or n.start_byte < start:
            continue
        call = n.parent
        statement = call.parent if call is not None else None
        if call is None or statement is None or call.type != "call_expression" or \
                call.child_by_field_name("function") != n or \
                statement.type != "expression_statement":
            raise Refused(f"`{' '.join(text(statement or n).split())[:80]}` uses {c.name} "
                          "other than as a call statement", n)
        out.append(statement)
    return out


def _written(c: _Body, statement: Node, taken: set[str]) -> str:
    """The block the call ``statement`` becomes, on one line."""
    call = statement.named_children[0]
    arguments = call.child_by_field_name("arguments")
    args = [a for a in (arguments.named_children if arguments else []) if a.type != "comment"]
    if len(args) != len(c.params):
        raise Refused(f"`{text(call)}` passes {len(args)} argument(s) for "
                      f"{len(c.params)} parameter(s)", call)
    mentioned = {text(n) for a in args for n in walk(a) if n.type == "identifier"}
    renames: dict[str, str] = {}
    bindings: list[str] = []
    for p, arg in zip(c.params, args, strict=True):
        if p.reference and arg.type == "identifier":
            renames[p.name] = text(arg)  # the caller's variable itself
            continue
        if p.name in mentioned:
            renames[p.name] = fresh(f"wb_{p.name}", taken)
        bindings.append(f"{_spelled(p.declaration, renames)} = {_one_line(text(arg))};")
    inner = " ".join(_spelled(s, renames) for s in statements(c.body))
    return "{ " + " ".join([*bindings, inner]) + " }"


def _spelled(node: Node, renames: dict[str, str]) -> str:
    """``node``'s text on one line, its identifiers renamed, its comments dropped."""
    data = node.text or b""
    edits = [(n.start_byte - node.start_byte, n.end_byte - node.start_byte,
              renames[text(n)] if n.type == "identifier" else " ")
             for n in walk(node) if (n.type == "identifier" and text(n) in renames) or
             n.type == "comment"]
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return _one_line(data.decode())


def _one_line(raw: str) -> str:
    return re.sub(r"\s*\n\s*", " ", raw).strip()
