"""A kernel's index object called through named member functions (a small struct of sizes
with ``index`` and ``inside`` methods) read as the lambdas its methods are, before
:mod:`.inline_lambda` expands their calls (issue 29: star13_o2).

``struct Grid { int nx, ny, nz; __device__ size_t index(int z, int y, int x) const { return
((size_t)z * ny + y) * nx + x; } };`` and then ``const Grid g{nx, ny, nz}; .. u[g.index(z,
y, x)]`` is the index ``((size_t)z * ny + y) * nx + x`` written by another hand: the object
holds copies of the sizes and each call returns one expression of them. Every family reads
an index (a plane's step, a neighbour's offset) or a bounds test through its expression;
through a method call they read nothing. This pass writes the object's declaration as one
lambda a method, ``auto g_index = [&](int z, int y, int x) -> size_t { return ((size_t)z *
ny + y) * nx + x; };`` (each member replaced by the kernel's value it was built from), on its
line, and each call ``g.index(..)`` as ``g_index(..)``; :mod:`.inline_lambda` then expands
them like any single-expression lambda. The class stays in the file; every line keeps its
number. :mod:`.functor_calls` reads a class called through its ``operator()``.

Read so (else left as written, with a note naming the line and the reason): a class or
struct defined once at file scope, not a template, without an ``operator()``, whose members
are integer data members (no default member initializers, no static members), at most one
constructor (integer parameters by value, an empty body, each member initialised by one
parameter of its type) and ``const`` member functions of integer parameters by value whose
body is one ``return`` that writes nothing and calls nothing; an object of it declared once in
the kernel (``const Grid g{nx, ny, nz};``, ``Grid g(nx, ny, nz)``, ``auto g = Grid(..)``; an
aggregate binds the members in declaration order) whose arguments are integer literals or
names of the kernel's type-matching integers the kernel never writes (the copies the object
holds then equal them at every call), and whose every later use calls one of its methods
(``g.index(..)``: not copied, passed, or a member read). A method's expression reads no name
the kernel declares but its parameters and the members (a name there means the file's). No
macro naming the object may be left called unexpanded (its text would name an object no
longer declared).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import line, text, tree_root, walk
from workbench.templater.functor_calls import (
    _constructor,
    _fields,
    _object,
    _params,
    is_call_operator,
    member_name,
)
from workbench.templater.inline_bind import (
    Refused,
    declared,
    declared_types,
    flat,
    fresh,
    statements,
    written,
)
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body
from workbench.templater.records import Finding

TRANSFORM = "INLINE_METHODS"


@dataclass(frozen=True)
class Method:
    """One member function read as an expression: its name, declared result type,
    parameters (name, type) and returned expression."""

    name: str
    result: str
    params: tuple[tuple[str, str], ...]
    returned: Node


@dataclass(frozen=True)
class IndexClass:
    """A class read as a set of index functions: its members in declaration order (name,
    type), the constructor's parameters (None: an aggregate), the member each one
    initialises, and its methods by name."""

    name: str
    members: tuple[tuple[str, str], ...]
    ctor: tuple[tuple[str, str], ...] | None
    inits: dict[str, str]  # member -> constructor parameter
    methods: dict[str, Method]


def methods_as_lambdas(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each object of an index class the kernel declares written as the
    lambdas its methods are and each method call as a call of its lambda (see the module
    doc); unchanged where there is none."""
    body = entry_body(current, entry)
    if body is None or body.parent is None:
        return current
    root = tree_root(body)
    classes = _classes(root)
    if not classes:
        return current
    notes: list[Finding] = []
    edits: list[tuple[int, int, str]] = []
    names = declared(body.parent)
    types = declared_types(body.parent)
    taken = set(re.findall(r"\w+", current.text))
    for decl in walk(body):
        bound = _object(decl, classes) if decl.type == "declaration" else None
        if bound is None:
            continue
        obj, cls, args = bound
        try:
            index = _index_class(classes[cls])
            values = _members(index, args, decl, body, names, types)
            calls = _method_calls(obj, index, decl, body)
            _not_in_macros(obj, root, decl)
            lambdas = {m: fresh(f"{obj}_{m}", taken) for m in sorted(index.methods)}
            taken |= set(lambdas.values())
            new = " ".join(_lambda(index.methods[m], lambdas[m], values, index.name, names)
                           for m in sorted(index.methods))
        except Refused as refused:
            notes.append(Finding(TRANSFORM, False, f"{obj} (an object of {cls}) is not read "
                                 f"as functions: {refused.reason}",
                                 current.baseline_line(refused.line)))
            continue
        rows = decl.end_point[0] - decl.start_point[0]
        edits.append((decl.start_byte, decl.end_byte, new + "\n" * rows))
        edits += [(f.start_byte, f.end_byte, lambdas[m]) for f, m in calls]
        notes.append(Finding(TRANSFORM, True, f"{obj} (an object of {cls}) read as the lambdas "
                             f"its methods {', '.join(sorted(index.methods))} are, the "
                             f"members bound to {', '.join(args)}; {len(calls)} call(s)",
                             current.baseline_line(line(decl))))
    if not edits and not notes:
        return current
    data = current.text.encode()
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return replace(current, text=data.decode(), findings=(*current.findings, *notes))


def _classes(root: Node) -> dict[str, Node]:
    """File-scope class and struct definitions with a named member function and no
    ``operator()`` (:mod:`.functor_calls` reads those), by name; a name defined twice is
    left out."""
    found: dict[str, list[Node]] = {}
    for top in root.children:
        spec = top if top.type in ("class_specifier", "struct_specifier") else \
            top.child_by_field_name("type") if top.type == "declaration" else None
        if spec is None or spec.type not in ("class_specifier", "struct_specifier") or \
                spec.child_by_field_name("body") is None:
            continue
        name = spec.child_by_field_name("name")
        members = spec.children_by_field_name("body")[0].children
        functions = [n for n in members if n.type == "function_definition"]
        if name is None or any(is_call_operator(n) for n in functions) or \
                not any(member_name(n) not in ("", text(name)) for n in functions):
            continue
        found.setdefault(text(name), []).append(spec)
    return {k: v[0] for k, v in found.items() if len(v) == 1}


def _index_class(spec: Node) -> IndexClass:
    """The class as index functions, or Refused with the member that is not one."""
    cls = text(spec.child_by_field_name("name"))
    if spec.parent is not None and spec.parent.type == "template_declaration":
        raise Refused(f"{cls} is a class template", spec)
    if any(c.type == "base_class_clause" for c in spec.children):
        raise Refused(f"{cls} derives from another class", spec)
    members: list[tuple[str, str]] = []
    ctor: tuple[tuple[str, str], ...] | None = None
    inits: dict[str, str] = {}
    methods: dict[str, Method] = {}
    for m in statements(spec.child_by_field_name("body") or spec):
        if m.type in ("access_specifier", ":"):
            continue
        if m.type == "field_declaration":
            members += _fields(m, cls)
        elif m.type == "function_definition" and member_name(m) == cls:
            if ctor is not None:
                raise Refused(f"{cls} has more than one constructor", m)
            ctor, inits = _constructor(m, cls)
        elif m.type == "function_definition":
            method = _method(m, cls)
            if method.name in methods:
                raise Refused(f"{cls} overloads {method.name}", m)
            methods[method.name] = method
        else:
            raise Refused(f"{cls}'s member `{flat(m)[:60]}` is neither an integer data "
                          "member, its constructor nor a member function", m)
    kinds = dict(members)
    for member, param in inits.items():
        if member not in kinds or kinds[member] != dict(ctor or ()).get(param):
            raise Refused(f"{cls}'s constructor initialises {member} from {param}, not a "
                          "member of the parameter's type", spec)
    if ctor is not None and set(inits) != set(kinds):
        raise Refused(f"{cls}'s constructor leaves "
                      f"{', '.join(sorted(set(kinds) - set(inits)))} uninitialised", spec)
    return IndexClass(cls, tuple(members), ctor, inits, methods)


def _method(fn: Node, cls: str) -> Method:
    """A ``const`` member function of one ``return`` that writes and calls nothing."""
    name = member_name(fn)
    d = fn.child_by_field_name("declarator")
    result = fn.child_by_field_name("type")
    if d is None or d.type != "function_declarator" or result is None or \
            not any(c.type == "type_qualifier" and text(c) == "const" for c in d.children):
        raise Refused(f"{cls}'s member function {name} is not a const function (it may "
                      "write the object)", fn)
    if any(c.type in ("storage_class_specifier", "virtual") and text(c) in ("static",
                                                                           "virtual")
           for c in fn.children):
        raise Refused(f"{cls}'s member function {name} is static or virtual", fn)
    block = fn.child_by_field_name("body")
    body = statements(block) if block is not None else []
    if len(body) != 1 or body[0].type != "return_statement" or not body[0].named_children:
        raise Refused(f"{cls}'s {name} is not one `return expression;`", fn)
    expr = body[0].named_children[0]
    for n in walk(expr):
        if n.type in ("assignment_expression", "update_expression", "lambda_expression",
                      "call_expression", "this", "pointer_expression", "subscript_expression"):
            raise Refused(f"{cls}'s {name} holds `{text(n)}` (a write, a call or a read of "
                          "memory)", n)
    return Method(name, flat(result), _params(fn, cls), expr)


def _members(c: IndexClass, args: list[str], decl: Node, body: Node,
             names: dict[str, list[Node]], types: dict[str, str]) -> dict[str, str]:
    """Each member's value: the argument it copies (Refused where that may differ from the
    name at a later call)."""
    expected = c.ctor if c.ctor is not None else c.members
    if len(args) != len(expected):
        raise Refused(f"`{flat(decl)}` passes {len(args)} values to {len(expected)}", decl)
    bound = dict(zip((p for p, _ in expected), args, strict=True))
    for (_param, key), arg in zip(expected, args, strict=True):
        if arg.isdigit():
            continue
        if len(names.get(arg, [])) != 1 or types.get(arg) != key or written(body, arg):
            raise Refused(f"the argument `{arg}` is not a name of type {key} declared once "
                          "and never written in the kernel (the object holds a copy of it)",
                          decl)
    if c.ctor is not None:
        return {m: bound[c.inits[m]] for m, _ in c.members}
    return {m: bound[m] for m, _ in c.members}


def _method_calls(obj: str, c: IndexClass, decl: Node, body: Node) -> list[tuple[Node, str]]:
    """Each ``obj.method`` callee after the declaration with its method (Refused where the
    object is used otherwise or declared again)."""
    if len(declared(body).get(obj, [])) > 1:
        raise Refused(f"the name {obj} is declared more than once in the kernel", decl)
    calls: list[tuple[Node, str]] = []
    for n in walk(body):
        if n.start_byte < decl.end_byte or n.type != "identifier" or text(n) != obj:
            continue
        field = n.parent
        call = field.parent if field is not None else None
        method = field.child_by_field_name("field") if field is not None else None
        if field is None or field.type != "field_expression" or \
                field.child_by_field_name("argument") != n or text(field)[len(obj):].lstrip() \
                [:1] != "." or method is None or text(method) not in c.methods or \
                call is None or call.type != "call_expression" or \
                call.child_by_field_name("function") != field:
            raise Refused(f"`{flat(call or field or n)[:80]}` uses {obj} other than as a call "
                          "of one of its methods (copied, passed, a member read)", n)
        calls.append((field, text(method)))
    return calls


def _not_in_macros(obj: str, root: Node, decl: Node) -> None:
    """Refused where a macro naming ``obj`` (itself or through another macro) is still used
    outside the definitions (its expansion, left to the compiler, would name the object
    this pass removes); a definition whose every call :mod:`.inline_macros` expanded is
    never expanded again."""
    bodies = {text(n.child_by_field_name("name")): text(n.child_by_field_name("value") or n)
              for n in walk(root) if n.type in ("preproc_def", "preproc_function_def")}
    naming = {m for m, b in bodies.items() if re.search(rf"\b{re.escape(obj)}\b", b)}
    while True:
        more = {m for m, b in bodies.items() if m not in naming and
                any(re.search(rf"\b{re.escape(k)}\b", b) for k in naming)}
        if not more:
            break
        naming |= more
    for n in walk(root):
        if n.type == "identifier" and text(n) in naming and not any(
                a.type.startswith("preproc_") and a.type not in ("preproc_if", "preproc_ifdef",
                                                                 "preproc_else", "preproc_elif")
                for a in _ancestors(n)):
            raise Refused(f"the macro {text(n)} names {obj} and is used unexpanded "
                          f"(`{flat(n.parent or n)[:60]}`)", n)


def _ancestors(n: Node) -> list[Node]:
    out = []
    while n.parent is not None:
        n = n.parent
        out.append(n)
    return out


def _lambda(m: Method, name: str, values: dict[str, str], cls: str,
            names: dict[str, list[Node]]) -> str:
    """The lambda declaration method ``m`` is, its members bound to ``values``."""
    own = {p for p, _ in m.params}
    pieces: list[tuple[int, int, str]] = []
    start = m.returned.start_byte
    for n in walk(m.returned):
        if n.type not in ("identifier", "field_identifier"):
            continue
        if text(n) in values and text(n) not in own:
            pieces.append((n.start_byte - start, n.end_byte - start, values[text(n)]))
        elif text(n) in names and text(n) not in own:
            raise Refused(f"{cls}'s {m.name} reads {text(n)}, a name the kernel declares too: "
                          "a call there reads the file's", n)
    expr = text(m.returned)
    for a, b, new in sorted(pieces, reverse=True):
        expr = expr[:a] + new + expr[b:]
    params = ", ".join(f"{k} {p}" for p, k in m.params)
    return f"auto {name} = [&]({params}) -> {m.result} {{ return {' '.join(expr.split())}; }};"
