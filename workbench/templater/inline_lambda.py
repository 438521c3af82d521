"""Single-expression lambdas and one-line integer ``__device__`` helpers, expanded at their
calls before the analysis (issue 28: first contact).

``auto a_at = [&](int r, int kk) { return A[r * K + kk]; };`` then ``sa[ty][tx] =
a_at(row, k0 + tx);`` is the load ``sa[ty][tx] = A[row * K + (k0 + tx)]`` written by another
hand, and ``__device__ __forceinline__ int idx(int r, int c, int ld) { return r * ld + c; }``
is :mod:`.inline_macros`' ``AT`` as a function. The families read an index, a tile's load
or an item's compute through its expression, and read a lambda's ``return`` as an early exit,
so the same kernel lifted or not by the spelling of its helper. Each call becomes the
returned expression with the parameters bound (:mod:`.inline_lambda_call`), and the lambda's
definition, once no use is left, a comment; every line keeps its number.

Expanded (else left as written, with a note naming the line and the reason):

- a lambda bound by ``auto name = [captures](params) { return expr; };`` in the kernel's
  body, its name declared once, only called (not passed or copied), not ``mutable``, no
  template parameter list, parameters by value, its body one ``return`` that writes nothing
  and holds no lambda; each name it reads that the kernel declares is declared once, before
  the lambda (a call then reads the same variable); a name it holds a copy of (``[=]``,
  ``[n]``) is not written from the definition to the end of its block;
- a file-scope ``__device__`` function of integer result and integer parameters by value,
  defined once, not a template, its body one ``return`` that calls only pure math
  (``min``/``max``...) and reads no name the kernel declares;
- the same of integer or floating result and parameters of those types or pointers to them
  where its body loads through a pointer parameter (``return r < rows ? __ldg(p + r * ld +
  c) : 0.0f;``, ``__ldg`` allowed): a tile's, a window's or a filter's load spelled as a
  call, which the families read as the load it is. Other helpers stay calls: the families
  read them as calls (FAST_MATH, purity).

A call's arguments come from where it stands; a lambda calling another expands in a later
round. A call through a struct's ``operator()`` is left as written with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import line, text, tree_root, walk
from workbench.templater.inline_bind import (
    Refused,
    callee_name,
    declarator_name,
    declared,
    declared_types,
    function_name,
    statements,
    type_key,
    written,
)
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.inline_lambda_call import Expansion, Param, expand, statement_of
from workbench.templater.point_split import entry_body
from workbench.templater.purity import PURE_CALLS
from workbench.templater.records import Finding

TRANSFORM = "INLINE_EXPRESSION"
#: Rounds of expansion (a lambda whose body calls another is expanded in the next round).
_ROUNDS = 8
_INTEGERS = frozenset({"int", "unsigned int", "long", "unsigned long", "long long",
                       "unsigned long long", "short", "unsigned short"})
_VALUES = _INTEGERS | {"float", "double"}


@dataclass(frozen=True)
class Callable:
    """One expandable callable: its name, parameters, returned expression, declared result
    type ("" when deduced), its definition and the block its calls lie in."""

    name: str
    kind: str  # "a lambda" or "a __device__ function"
    params: tuple[Param, ...]
    body: Node
    result: str
    definition: Node
    scope: Node


def expand_lambdas(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with the calls of ``entry``'s single-expression lambdas and integer
    one-line helpers expanded (see the module doc); unchanged when there are none or the
    kernel cannot be found (the analysis reports that itself)."""
    notes: dict[tuple[int, str], Finding] = {}
    lines: dict[str, list[int]] = {}
    for _ in range(_ROUNDS):
        body = entry_body(current, entry)
        if body is None or body.parent is None:
            break
        root = tree_root(body)
        found = _callables(root, body.parent, body, notes, current)
        edits: list[tuple[int, int, str]] = []
        taken = {text(n) for n in walk(root) if n.type == "identifier"}
        types = declared_types(body.parent)
        for c in found.values():
            if any(callee_name(n) in found for n in walk(c.body) if n.type == "call_expression"):
                continue  # its body's calls expand first
            try:
                calls = _calls(c, body)
                ready = [n for n in calls if not any(
                    callee_name(m) in found for m in walk(n) if m != n and
                    m.type == "call_expression")]
                done = [(n, expand(n, c.params, c.body, c.result, types, taken, c.name))
                        for n in ready]
            except Refused as refused:
                current.note(notes, TRANSFORM, False, f"{c.name} ({c.kind}) is not expanded at its "
                      f"calls: {refused.reason}", refused.line)
                continue
            edits += [e for n, x in done for e in _call_edits(n, x)]
            lines.setdefault(c.name, []).extend(line(n) for n in ready)
            if len(ready) == len(calls):
                edits += _definition_edits(c)
                at = ", ".join(str(current.baseline_line(k)) for k in lines[c.name])
                current.note(notes, TRANSFORM, True, f"{c.name} ({c.kind}) expanded at its calls "
                      f"(lines {at or 'none'}): the analysis reads the expression it returns",
                      line(c.definition))
        if not edits:
            break
        current = current.edited(edits)
    return replace(current, findings=(*current.findings, *notes.values()))


def _callables(root: Node, kernel: Node, body: Node, notes: dict[tuple[int, str], Finding],
               current: InlinedSource) -> dict[str, Callable]:
    """The kernel's expandable lambdas and the integer helpers it calls; each one refused
    is noted with its reason."""
    names = declared(kernel)
    out: dict[str, Callable] = {}
    called = {callee_name(n) for n in walk(body) if n.type == "call_expression"}
    candidates: list[tuple[str, Node]] = []
    for n in walk(body):
        if n.type == "lambda_expression":
            name = _bound_name(n)
            if name is None:
                current.note(notes, TRANSFORM, False, "a lambda not bound to a name by `auto name = "
                      "[...](...) {...};` is left as written", line(n))
            else:
                candidates.append((name, n))
    for fn in root.children:
        name = function_name(fn)
        if name in called and name not in names and (_integer_helper(fn) or
                                                      _load_helper(fn)):
            candidates.append((name, fn))
    for name, node in candidates:
        try:
            out[name] = _lambda(name, node, kernel, body, names) \
                if node.type == "lambda_expression" else _helper(name, node, root, names)
        except Refused as refused:
            kind = "a lambda" if node.type == "lambda_expression" else "a __device__ function"
            current.note(notes, TRANSFORM, False, f"{name} ({kind}) is not expanded at its calls: "
                  f"{refused.reason}", refused.line)
    return out


def _bound_name(lam: Node) -> str | None:
    init = lam.parent
    decl = init.parent if init is not None else None
    if init is None or decl is None or init.type != "init_declarator" or \
            decl.type != "declaration" or len(decl.children_by_field_name("declarator")) != 1 \
            or text(decl.child_by_field_name("type")) != "auto" or \
            init.child_by_field_name("value") != lam:
        return None
    name = init.child_by_field_name("declarator")
    return text(name) if name is not None and name.type == "identifier" else None


def _integer_helper(fn: Node) -> bool:
    """A ``__device__`` (not ``__global__``) function of integer result and parameters."""
    kinds = {c.type for c in fn.children}
    if "__device__" not in kinds or "__global__" in kinds:
        return False
    if type_key(fn.child_by_field_name("type"), None) not in _INTEGERS:
        return False
    params = _params_or_none(fn)
    return params is not None and all(p.key in _INTEGERS for p in params)


def _load_helper(fn: Node) -> bool:
    """A ``__device__`` function of integer or floating result and parameters of those types
    or pointers to them whose body loads through a pointer parameter (``return r < rows ?
    __ldg(p + r * ld + c) : 0.0f;``): a tile's or a window's load spelled as a call."""
    kinds = {c.type for c in fn.children}
    if "__device__" not in kinds or "__global__" in kinds or \
            type_key(fn.child_by_field_name("type"), None) not in _VALUES:
        return False
    params = _params_or_none(fn)
    if params is None or any(p.key.rstrip("*") not in _VALUES or p.key.count("*") > 1
                             for p in params):
        return False
    pointers = {p.name for p in params if p.key.endswith("*")}
    return any(n.type in ("subscript_expression", "pointer_expression", "call_expression") and
               (n.type != "call_expression" or callee_name(n) == "__ldg") and
               any(m.type == "identifier" and text(m) in pointers for m in walk(n))
               for n in walk(fn))


def _params_or_none(fn: Node) -> list[_Declared] | None:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    return None if plist is None else [_declared_param(p) for p in plist.named_children
                                       if p.type != "comment"]


@dataclass(frozen=True)
class _Declared:
    name: str
    key: str
    node: Node


def _declared_param(p: Node) -> _Declared:
    d = p.child_by_field_name("declarator")
    name = declarator_name(d)
    return _Declared(text(name) if name is not None else "",
                     type_key(p.child_by_field_name("type"), d) if p.type ==
                     "parameter_declaration" else "", p)


def _params(plist: Node | None) -> tuple[Param, ...]:
    out: list[Param] = []
    for p in [] if plist is None else [c for c in plist.named_children if c.type != "comment"]:
        d = _declared_param(p)
        if not d.name or not d.key:
            raise Refused(f"the parameter `{text(p)}` is not a named parameter by value", p)
        if d.key.endswith("&"):
            raise Refused(f"the parameter `{text(p)}` is a reference: a call may write "
                          "through it", p)
        out.append(Param(d.name, d.key))
    return tuple(out)


def _returned(block: Node | None, owner: Node) -> Node:
    """The one expression ``block`` returns (refused where it has other statements)."""
    body = statements(block) if block is not None else []
    if len(body) != 1 or body[0].type != "return_statement" or not body[0].named_children:
        raise Refused(f"its body `{' '.join(text(block).split())[:80]}` is not one `return "
                      "expression;`: a body with statements is left as written", owner)
    expr = body[0].named_children[0]
    for n in walk(expr):
        if n.type in ("assignment_expression", "update_expression"):
            raise Refused(f"its body writes (`{text(n)}`)", n)
        if n.type == "lambda_expression":
            raise Refused("its body holds a lambda", n)
    return expr


def _lambda(name: str, lam: Node, kernel: Node, body: Node,
            names: dict[str, list[Node]]) -> Callable:
    decl = lam.parent.parent if lam.parent is not None else None
    if decl is None:
        raise Refused("it is not bound by a declaration", lam)
    if len(names.get(name, [])) != 1:
        raise Refused(f"the name {name} is declared more than once in the kernel", lam)
    if any(c.type == "template_parameter_list" for c in lam.children):
        raise Refused("it is a template lambda", lam)
    declarator = lam.child_by_field_name("declarator")
    if declarator is not None and any(text(c) == "mutable" for c in walk(declarator)):
        raise Refused("it is mutable: its copies may change from one call to the next", lam)
    ret = next((c for c in (declarator.children if declarator is not None else [])
                if c.type == "trailing_return_type"), None)
    result = type_key(ret.named_children[0], None) if ret is not None else ""
    params = _params(declarator.child_by_field_name("parameters")
                     if declarator is not None else None)
    expr = _returned(lam.child_by_field_name("body"), lam)
    scope = decl.parent if decl.parent is not None else body
    by_value = _copies(lam, expr, {p.name for p in params}, names)
    for n in walk(expr):
        if n.type != "identifier" or text(n) in {p.name for p in params} or \
                text(n) not in names:
            continue
        found = names[text(n)]
        if len(found) != 1 or found[0].start_byte > decl.start_byte:
            raise Refused(f"it reads {text(n)}, which the kernel declares "
                          f"{'more than once' if len(found) != 1 else 'after it'}: a call "
                          "may not read the variable the lambda reads", n)
        if text(n) in by_value and any(written(s, text(n)) for s in scope.children
                                       if s.start_byte > decl.end_byte):
            raise Refused(f"it holds a copy of {text(n)}, which the kernel writes after the "
                          "lambda: a call reads the copy, not the variable", n)
    return Callable(name, "a lambda", params, expr, result, decl, scope)


def _copies(lam: Node, expr: Node, params: set[str], names: dict[str, list[Node]]) -> set[str]:
    """The names the lambda holds copies of (captured by value)."""
    spec = lam.child_by_field_name("captures")
    items = [" ".join(text(c).split()) for c in (spec.named_children if spec else [])]
    read = {text(n) for n in walk(expr) if n.type == "identifier"} - params
    copies: set[str] = set()
    for item in items:
        if item == "=":
            copies |= {n for n in read if n in names}
        elif item.isidentifier():
            copies.add(item)
        elif item != "&" and not (item.startswith("&") and item[1:].strip().isidentifier()):
            raise Refused(f"it captures `{item}`, not a name by value or by reference", lam)
    return copies


def _helper(name: str, fn: Node, root: Node, names: dict[str, list[Node]]) -> Callable:
    if sum(1 for f in root.children if function_name(f) == name) != 1:
        raise Refused(f"{name} is defined more than once", fn)
    if fn.parent is not None and fn.parent.type == "template_declaration":
        raise Refused(f"{name} is a template", fn)
    params = _params(next((d.child_by_field_name("parameters") for d in walk(fn)
                           if d.type == "function_declarator"), None))
    expr = _returned(fn.child_by_field_name("body"), fn)
    for n in walk(expr):
        if n.type == "call_expression" and callee_name(n) not in PURE_CALLS | {"__ldg"}:
            raise Refused(f"its body calls {text(n.child_by_field_name('function'))}, "
                          "not a pure math function", n)
        if n.type == "identifier" and text(n) not in {p.name for p in params} and \
                text(n) in names:
            raise Refused(f"it reads {text(n)}, a name the kernel declares too: a call there "
                          "would read the kernel's", n)
    result = type_key(fn.child_by_field_name("type"), None)
    return Callable(name, "a __device__ function", params, expr, result, fn, root)


def _calls(c: Callable, body: Node) -> list[Node]:
    """The calls of ``c`` in the kernel (refused where its name is used otherwise)."""
    out: list[Node] = []
    start = c.definition.end_byte if c.kind == "a lambda" else body.start_byte
    for n in walk(c.scope if c.kind == "a lambda" else body):
        if n.type != "identifier" or text(n) != c.name or n.start_byte < start:
            continue
        call = n.parent
        if call is None or call.type != "call_expression" or \
                call.child_by_field_name("function") != n:
            raise Refused(f"`{' '.join(text(call or n).split())[:80]}` uses {c.name} as a "
                          "value (passed to a function or copied), not as a call", n)
        out.append(call)
    return out


def _call_edits(call: Node, x: Expansion) -> list[tuple[int, int, str]]:
    rows = call.end_point[0] - call.start_point[0]
    edits = [(call.start_byte, call.end_byte, x.text + "\n" * rows)]
    statement = statement_of(call)
    if x.hoisted and statement is not None:
        edits.append((statement.start_byte, statement.start_byte, " ".join(x.hoisted) + " "))
    return edits


def _definition_edits(c: Callable) -> list[tuple[int, int, str]]:
    if c.kind != "a lambda":
        return []  # a file-scope function stays: it is harmless, and others may call it
    rows = c.definition.end_point[0] - c.definition.start_point[0]
    return [(c.definition.start_byte, c.definition.end_byte,
             f"// {c.name}: expanded at its calls" + "\n" * rows)]
