"""A kernel's index object (a small class holding sizes, called through its ``operator()``)
read as the lambda it is, before :mod:`.inline_lambda` expands its calls (issue 28, set 11
first contact: jacobi9_torus).

``class Torus { Torus(int rows, int cols) : rows_(rows), cols_(cols) {} int operator()(int r,
int c) const { return ((r + rows_) % rows_) * cols_ + (c + cols_) % cols_; } int rows_,
cols_; };`` and then ``const Torus at(H, W); .. U[at(r - 1, c)]`` is the index
``((r - 1 + H) % H) * W + (c + W) % W`` written by another hand: the object holds copies of
``H`` and ``W`` and each call returns one expression of them. Every family reads an index
through its expression; through the call they read nothing. This pass writes the object's
declaration as ``auto at = [&](int r, int c) { return ((r + H) % H) * W + (c + W) % W; };``
on its line (each member replaced by the kernel's value it was built from), which
:mod:`.inline_lambda` expands at its calls like any single-expression lambda. The class
stays in the file; every line keeps its number.

Read so (else left as written, with a note naming the line and the reason): a class or
struct defined once at file scope, not a template, whose members are integer data members
(no default member initializers, no static members), at most one constructor (its
parameters integers by value, its body empty, each member initialised by one parameter of
its type) and one ``operator()`` (integer parameters by value, its body one ``return``
that writes nothing); an object of it declared once in the kernel (``const Torus at(H,
W);``, ``Torus at{H, W}``, ``auto at = Torus(H, W);``; aggregate ``{..}`` without a
constructor binds the members in declaration order), whose arguments are integer literals
or names of the kernel's type-matching integers that the kernel never writes (the copies
the object holds then equal them at every call), and whose every later use is a call.
The operator's expression reads no name the kernel declares but its parameters (a name
there means the file's, not the kernel's).
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
    flat,
    statements,
    type_key,
    written,
)
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body
from workbench.templater.records import Finding

TRANSFORM = "INLINE_FUNCTOR"
_INTEGERS = frozenset({"int", "unsigned int", "long", "unsigned long", "long long",
                       "unsigned long long", "short", "unsigned short"})


@dataclass(frozen=True)
class Functor:
    """A class read as an index function: its members in declaration order (name, type),
    the constructor's parameters (name, type; None: an aggregate), the member each one
    initialises, and the operator's parameters and returned expression."""

    name: str
    members: tuple[tuple[str, str], ...]
    ctor: tuple[tuple[str, str], ...] | None
    inits: dict[str, str]  # member -> constructor parameter
    params: tuple[tuple[str, str], ...]
    returned: Node


def functors_as_lambdas(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each object of an index class the kernel declares written as the
    lambda its ``operator()`` is (see the module doc); unchanged where there is none."""
    body = entry_body(current, entry)
    if body is None or body.parent is None:
        return current
    root = tree_root(body)
    classes = _classes(root)
    notes: list[Finding] = []
    edits: list[tuple[int, int, str]] = []
    names = declared(body.parent)
    types = declared_types(body.parent)
    for decl in walk(body):
        bound = _object(decl, classes) if decl.type == "declaration" else None
        if bound is None:
            continue
        obj, cls, args = bound
        try:
            functor = _functor(classes[cls])
            new = _lambda(functor, obj, args, decl, body, names, types)
        except Refused as refused:
            notes.append(Finding(TRANSFORM, False, f"{obj} (an object of {cls}) is not read "
                                 f"as a function: {refused.reason}",
                                 current.baseline_line(refused.line)))
            continue
        rows = decl.end_point[0] - decl.start_point[0]
        edits.append((decl.start_byte, decl.end_byte, new + "\n" * rows))
        notes.append(Finding(TRANSFORM, True, f"{obj} (an object of {cls}) read as the lambda "
                             f"its operator() is, the members bound to {', '.join(args)}",
                             current.baseline_line(line(decl))))
    if not edits and not notes:
        return current
    data = current.text.encode()
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return replace(current, text=data.decode(), findings=(*current.findings, *notes))


def _classes(root: Node) -> dict[str, Node]:
    """File-scope class and struct definitions that declare an ``operator()``, by name (a
    name defined twice is left out; a class without one is no function object)."""
    found: dict[str, list[Node]] = {}
    for top in root.children:
        spec = top if top.type in ("class_specifier", "struct_specifier") else \
            top.child_by_field_name("type") if top.type == "declaration" else None
        if spec is None or spec.type not in ("class_specifier", "struct_specifier") or \
                spec.child_by_field_name("body") is None:
            continue
        name = spec.child_by_field_name("name")
        if name is not None and any(n.type == "function_definition" and is_call_operator(n)
                                    for n in spec.children_by_field_name("body")[0].children):
            found.setdefault(text(name), []).append(spec)
    return {k: v[0] for k, v in found.items() if len(v) == 1}


def _object(decl: Node, classes: dict[str, Node]) -> tuple[str, str, list[str]] | None:
    """(object, class, argument texts) of a declaration of one object of a known class."""
    declarators = decl.children_by_field_name("declarator")
    kind = decl.child_by_field_name("type")
    if len(declarators) != 1 or kind is None:
        return None
    d = declarators[0]
    cls = text(kind)
    if d.type == "function_declarator" and cls in classes:  # Torus at(H, W);
        plist = d.child_by_field_name("parameters")
        name = d.child_by_field_name("declarator")
        args = [text(p) for p in (plist.named_children if plist is not None else [])]
    elif d.type == "init_declarator":
        name = d.child_by_field_name("declarator")
        value = d.child_by_field_name("value")
        if value is not None and value.type == "call_expression" and cls == "auto":
            cls = callee_name(value)  # auto at = Torus(H, W);
            value = value.child_by_field_name("arguments")
        if cls not in classes or value is None or \
                value.type not in ("argument_list", "initializer_list"):
            return None
        args = [text(a) for a in value.named_children if a.type != "comment"]
    else:
        return None
    if name is None or name.type != "identifier":
        return None
    return text(name), cls, args


def _functor(spec: Node) -> Functor:
    """The class as an index function, or Refused with the member that is not one."""
    cls = text(spec.child_by_field_name("name"))
    if spec.parent is not None and spec.parent.type == "template_declaration":
        raise Refused(f"{cls} is a class template", spec)
    members: list[tuple[str, str]] = []
    ctor: tuple[tuple[str, str], ...] | None = None
    inits: dict[str, str] = {}
    operator: tuple[tuple[tuple[str, str], ...], Node] | None = None
    for m in statements(spec.child_by_field_name("body") or spec):
        if m.type in ("access_specifier", ":"):
            continue
        if m.type == "field_declaration":
            members += _fields(m, cls)
        elif m.type == "function_definition" and is_call_operator(m):
            if operator is not None:
                raise Refused(f"{cls} has more than one operator()", m)
            operator = (_params(m, cls), _returned(m, cls))
        elif m.type == "function_definition" and member_name(m) == cls:
            if ctor is not None:
                raise Refused(f"{cls} has more than one constructor", m)
            ctor, inits = _constructor(m, cls)
        else:
            raise Refused(f"{cls}'s member `{' '.join(text(m).split())[:60]}` is neither an "
                          "integer data member, its constructor nor its operator()", m)
    if operator is None:
        raise Refused(f"{cls} has no operator()", spec)
    kinds = dict(members)
    for member, param in inits.items():
        if member not in kinds or kinds[member] != dict(ctor or ()).get(param):
            raise Refused(f"{cls}'s constructor initialises {member} from {param}, not a "
                          "member of the parameter's type", spec)
    if ctor is not None and set(inits) != set(kinds):
        raise Refused(f"{cls}'s constructor leaves "
                      f"{', '.join(sorted(set(kinds) - set(inits)))} uninitialised", spec)
    return Functor(cls, tuple(members), ctor, inits, *operator)


def _fields(m: Node, cls: str) -> list[tuple[str, str]]:
    if any(c.type in ("storage_class_specifier", "type_qualifier") for c in m.children):
        raise Refused(f"{cls}'s member `{' '.join(text(m).split())}` is static or qualified", m)
    if any(c.type in ("=", "initializer_list", "default_value") or c.type == "bitfield_clause"
           for c in m.children):
        raise Refused(f"{cls}'s member `{' '.join(text(m).split())}` has a default value", m)
    out = []
    for d in m.children_by_field_name("declarator"):
        key = type_key(m.child_by_field_name("type"), d)
        if d.type != "field_identifier" or key not in _INTEGERS:
            raise Refused(f"{cls}'s member `{text(d)}` is not an integer", m)
        out.append((text(d), key))
    return out


def member_name(fn: Node) -> str:
    """The name a member function's definition declares (a constructor's is its class's;
    ``operator()`` spelled as written)."""
    d = fn.child_by_field_name("declarator")
    name = d.child_by_field_name("declarator") if d is not None and \
        d.type == "function_declarator" else None
    return text(name) if name is not None else ""


def is_call_operator(fn: Node) -> bool:
    """``fn`` defines ``operator()``."""
    d = fn.child_by_field_name("declarator")
    name = d.child_by_field_name("declarator") if d is not None else None
    return name is not None and name.type == "operator_name" and \
        "".join(text(name).split()) == "operator()"


def _params(fn: Node, cls: str) -> tuple[tuple[str, str], ...]:
    d = fn.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    out = []
    for p in plist.named_children if plist is not None else []:
        decl = p.child_by_field_name("declarator")
        name = declarator_name(decl)
        key = type_key(p.child_by_field_name("type"), decl) if p.type == \
            "parameter_declaration" else ""
        if name is None or key not in _INTEGERS:
            raise Refused(f"{cls}'s parameter `{text(p)}` is not an integer by value", p)
        out.append((text(name), key))
    return tuple(out)


def _returned(fn: Node, cls: str) -> Node:
    block = fn.child_by_field_name("body")
    body = statements(block) if block is not None else []
    if len(body) != 1 or body[0].type != "return_statement" or not body[0].named_children:
        raise Refused(f"{cls}'s operator() is not one `return expression;`", fn)
    expr = body[0].named_children[0]
    for n in walk(expr):
        if n.type in ("assignment_expression", "update_expression", "lambda_expression",
                      "call_expression"):
            raise Refused(f"{cls}'s operator() holds `{text(n)}` (a write or a call)", n)
    return expr


def _constructor(fn: Node, cls: str) -> tuple[tuple[tuple[str, str], ...], dict[str, str]]:
    params = _params(fn, cls)
    block = fn.child_by_field_name("body")
    if block is not None and statements(block):
        raise Refused(f"{cls}'s constructor has a body", fn)
    names = {p for p, _ in params}
    inits: dict[str, str] = {}
    for init in (n for c in fn.children if c.type == "field_initializer_list"
                 for n in c.named_children):
        member = init.named_children[0] if init.named_children else None
        args = init.named_children[1] if len(init.named_children) > 1 else None
        value = [a for a in args.named_children] if args is not None else []
        if member is None or len(value) != 1 or text(value[0]) not in names:
            raise Refused(f"{cls}'s constructor initialiser `{text(init)}` is not a member "
                          "from one parameter", init)
        inits[text(member)] = text(value[0])
    return params, inits


def _lambda(f: Functor, obj: str, args: list[str], decl: Node, body: Node,
            names: dict[str, list[Node]], types: dict[str, str]) -> str:
    """The lambda declaration that replaces ``decl`` (or Refused with the reason)."""
    expected = f.ctor if f.ctor is not None else f.members
    if len(args) != len(expected):
        raise Refused(f"`{' '.join(text(decl).split())}` passes {len(args)} values to "
                      f"{len(expected)}", decl)
    bound = dict(zip((p for p, _ in expected), args, strict=True))
    for (_param, key), arg in zip(expected, args, strict=True):
        if arg.isdigit():
            continue
        if len(names.get(arg, [])) != 1 or types.get(arg) != key or written(body, arg):
            raise Refused(f"the argument `{arg}` is not a name of type {key} declared once "
                          "and never written in the kernel (the object holds a copy of it)",
                          decl)
    values = {m: bound[f.inits[m]] for m, _ in f.members} if f.ctor is not None else \
        {m: bound[m] for m, _ in f.members}
    only_called(obj, decl, body)
    own = {p for p, _ in f.params}
    pieces: list[tuple[int, int, str]] = []
    start = f.returned.start_byte
    for n in walk(f.returned):
        if n.type not in ("identifier", "field_identifier"):
            continue
        if text(n) in values and text(n) not in own:
            pieces.append((n.start_byte - start, n.end_byte - start, values[text(n)]))
        elif text(n) in names and text(n) not in own:
            raise Refused(f"{f.name}'s operator() reads {text(n)}, a name the kernel "
                          "declares too: a call there reads the file's", n)
    if any(n.type == "this" for n in walk(f.returned)):
        raise Refused(f"{f.name}'s operator() reads `this`", f.returned)
    expr = text(f.returned)
    for a, b, new in sorted(pieces, reverse=True):
        expr = expr[:a] + new + expr[b:]
    params = ", ".join(f"{k} {p}" for p, k in f.params)
    return f"auto {obj} = [&]({params}) {{ return {' '.join(expr.split())}; }};"


def only_called(obj: str, decl: Node, body: Node) -> None:
    """Refused unless ``obj`` is declared once and every later use calls it (not copied,
    passed, stored, nor its address taken)."""
    if len(declared(body).get(obj, [])) > 1:
        raise Refused(f"the name {obj} is declared more than once in the kernel", decl)
    for n in walk(body):
        if n.start_byte < decl.end_byte or n.type != "identifier" or text(n) != obj:
            continue
        call = n.parent
        if call is None or call.type != "call_expression" or \
                call.child_by_field_name("function") != n:
            raise Refused(f"`{flat(call or n)[:80]}` uses {obj} other than "
                          "as a call (a function object copied, passed or its address taken)",
                          n)
