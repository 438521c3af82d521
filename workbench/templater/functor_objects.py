"""A kernel's function object whose ``operator()`` holds statements (Thrust-style: a struct of
parameters and member functors, called once an element) read as the ``[&]`` lambda it is,
before :mod:`.inline_bodies` writes the lambdas into their calls (issue 28, set 20 first
contact: crspline_rotmean).

``struct orbit_mean { catmull_rom spline; wrap_unit wrap; __device__ float operator()(float
u) const { ..loop.. } };`` and then ``const orbit_mean op{catmull_rom{knots}, wrap_unit{}};
.. out[i] = op(u[i]);`` hides the per-element loop inside the operator: every family reads
``op(u[i])`` as one call. The compiler inlines it; this pass writes the declaration as the
lambdas the objects are, on its line (every line keeps its number)::

    auto op_spline = [&](float t_) -> float { ..knots.. };  auto op_wrap = [&](..) ..;
    auto op = [&](float u_) -> float { ..op_spline(op_wrap(u_ + offset_))..; };

each data member replaced by the kernel's value it was built from, each member functor by its
own lambda (``<object>_<member>``, nested objects in turn), the operator's parameters and
locals under fresh names (none then clashes with a kernel local). :mod:`.functor_calls`
keeps the objects whose operator is one ``return`` of integer members.

Read so (else left as written, with a note naming the line and the reason): a struct or class
defined once at file scope (or in a namespace), not a template, without base classes,
``virtual`` or ``mutable``, whose members are data members (no default values, static
members, arrays or bit fields), at most one constructor that only copies its parameters into
members (empty body), member functions it never calls from the operator, and one
``operator()`` (not returning a reference or a pointer declarator); an object of it declared
once in the kernel (``const S op{a, ..}``, ``S op = {..}``, ``S op(a, ..)``, ``auto op =
S{..}`` / ``S(..)``; an aggregate binds the members in declaration order, a member functor
from ``T{..}``, ``T(..)``, ``{..}`` or, empty, left out), whose every later use is a call. A
data member bound to a name of its type that the kernel declares once and never writes (nor
takes the address of) reads that name (an array for a pointer member: its first element's
address never changes); any other value is copied once into a local of the member's type
there, as the object copied it. In the operator: no ``this``, no write of a member nor its
address, a member functor only called, no name the kernel declares but the operator's own
(a name there means the file's), no preprocessor line, string or character literal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import line, text, tree_root, walk, writer
from workbench.templater.functor_calls import is_call_operator, member_name, only_called
from workbench.templater.inline_bind import (
    Refused,
    callee_name,
    declarator_name,
    declared,
    declared_types,
    flat,
    fresh,
    statements,
    type_key,
    written,
)
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body
from workbench.templater.records import Finding

TRANSFORM = "INLINE_FUNCTOR"
_SCOPES = ("translation_unit", "namespace_definition", "declaration_list", "declaration")
_BARRED = {"this": "`this`", "string_literal": "a string", "char_literal": "a character",
           "preproc_call": "a preprocessor line", "preproc_if": "a preprocessor line",
           "preproc_ifdef": "a preprocessor line", "preproc_def": "a preprocessor line",
           "lambda_expression": "a lambda", "goto_statement": "a goto"}


@dataclass(frozen=True)
class _Field:
    """A data member: its name, declaration, declarator and type key; ``functor`` names its
    class where it is itself a function object."""

    name: str
    decl: Node
    declarator: Node
    key: str
    functor: str | None


@dataclass(frozen=True)
class _Class:
    """A function object's class: its data members in order, its constructor's parameters
    and the member each initialises (None: an aggregate), its other member functions, and
    its ``operator()``."""

    name: str
    fields: tuple[_Field, ...]
    ctor: tuple[str, ...] | None
    inits: dict[str, str]  # member -> constructor parameter
    methods: frozenset[str]
    operator: Node


@dataclass
class _Site:
    """What one object's rewrite reads and writes: the kernel's body, its declared names and
    types, the names taken in the file, and the declarations written before the object's."""

    body: Node
    names: dict[str, list[Node]]
    types: dict[str, str]
    taken: set[str]
    out: list[str]


def functor_objects_as_lambdas(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each function object the kernel declares whose operator holds
    statements written as the lambdas it is (see the module doc); unchanged where none."""
    body = entry_body(current, entry)
    if body is None or body.parent is None:
        return current
    specs = _class_specs(tree_root(body))
    if not specs:
        return current
    notes: list[Finding] = []
    edits: list[tuple[Node, list[str]]] = []
    names = declared(body.parent)
    types = declared_types(body.parent)
    taken = set(re.findall(r"\w+", current.text))
    for decl in walk(body):
        found = _object(decl, specs) if decl.type == "declaration" else None
        if found is None:
            continue
        obj, cls, args = found
        site = _Site(body, names, types, taken, [])
        try:
            if not _holds_statements(cls, specs, set()):
                continue  # one return: functor_calls reads it (or refuses)
            only_called(obj, decl, body)
            _bind(obj, cls, args, decl, specs, site)
        except Refused as refused:
            notes.append(Finding(TRANSFORM, False, f"{obj} (an object of {cls}) is not read "
                                 f"as a lambda: {refused.reason}",
                                 current.baseline_line(refused.line)))
            continue
        edits.append((decl, site.out))
        notes.append(Finding(TRANSFORM, True, f"{obj} (an object of {cls}) read as the "
                             "lambdas its operator() and its member functors are",
                             current.baseline_line(line(decl))))
    if not notes:
        return current
    return replace(_written(current, edits), findings=(*current.findings, *notes))


def _written(current: InlinedSource, edits: list[tuple[Node, list[str]]]) -> InlinedSource:
    """``current`` with each declaration replaced by its lambdas, one a line from the
    declaration's (a later pass may write one of them as a comment), the line map
    following."""
    data = current.text.encode()
    lines = current.text.count("\n") + 1
    origin = [current.baseline_line(n) for n in range(1, lines + 1)]
    for decl, parts in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
        row, rows = decl.start_point[0], decl.end_point[0] - decl.start_point[0]
        indent = data[data.rfind(b"\n", 0, decl.start_byte) + 1:decl.start_byte].decode()
        indent = indent if not indent.strip() else " " * len(indent)
        new = f"\n{indent}".join(parts) + "\n" * rows
        data = data[:decl.start_byte] + new.encode() + data[decl.end_byte:]
        origin[row + 1:row + 1] = [origin[row]] * (len(parts) - 1)
    return replace(current, text=data.decode(), origin=tuple(origin))


def _class_specs(root: Node) -> dict[str, Node]:
    """File-scope (or namespace-scope) class and struct definitions that define an
    ``operator()``, by name; a name defined twice is left out."""
    found: dict[str, list[Node]] = {}
    for spec in walk(root):
        if spec.type not in ("class_specifier", "struct_specifier"):
            continue
        name, members = spec.child_by_field_name("name"), spec.child_by_field_name("body")
        up = spec.parent
        while up is not None and up.type in (*_SCOPES, "template_declaration"):
            up = up.parent
        if name is None or members is None or up is not None:
            continue
        if any(m.type == "function_definition" and is_call_operator(m) for m in members.children):
            found.setdefault(text(name), []).append(spec)
    return {k: v[0] for k, v in found.items() if len(v) == 1}


def _holds_statements(cls: str, specs: dict[str, Node], seen: set[str]) -> bool:
    """Whether ``cls``'s operator (or a member functor's) is more than one ``return``."""
    if cls in seen:
        raise Refused(f"{cls} holds itself", specs[cls])
    body = specs[cls].child_by_field_name("body")
    for m in body.children if body is not None else []:
        if m.type == "function_definition" and is_call_operator(m):
            block = m.child_by_field_name("body")
            kids = statements(block) if block is not None else []
            if len(kids) != 1 or kids[0].type != "return_statement":
                return True
        elif m.type == "field_declaration":
            kind = text(m.child_by_field_name("type"))
            if kind in specs and _holds_statements(kind, specs, seen | {cls}):
                return True
    return False


def _object(decl: Node, specs: dict[str, Node]) -> tuple[str, str, list[Node]] | None:
    """(object, class, argument nodes) of a declaration of one object of a known class."""
    declarators = decl.children_by_field_name("declarator")
    kind = decl.child_by_field_name("type")
    if len(declarators) != 1 or kind is None:
        return None
    d, cls = declarators[0], text(kind)
    if d.type == "function_declarator" and cls in specs:  # S op(a, b);
        plist = d.child_by_field_name("parameters")
        return _named(d.child_by_field_name("declarator"), cls,
                      list(plist.named_children) if plist is not None else [])
    if d.type != "init_declarator":
        return None
    value = d.child_by_field_name("value")
    if value is not None and cls == "auto" and value.type in ("call_expression",
                                                              "compound_literal_expression"):
        cls, value = _constructed(value)  # auto op = S(a, b); auto op = S{a, b};
    if cls not in specs or value is None or value.type not in ("argument_list",
                                                               "initializer_list"):
        return None
    return _named(d.child_by_field_name("declarator"), cls, _arguments(value))


def _named(name: Node | None, cls: str, args: list[Node]) -> tuple[str, str, list[Node]] | None:
    return (text(name), cls, args) if name is not None and name.type == "identifier" else None


def _constructed(value: Node) -> tuple[str, Node | None]:
    """(class, its argument or initializer list) of ``S(a)`` / ``S{a}``."""
    if value.type == "call_expression":
        return callee_name(value), value.child_by_field_name("arguments")
    return text(value.child_by_field_name("type")), value.child_by_field_name("value")


def _arguments(value: Node) -> list[Node]:
    return [a for a in value.named_children if a.type != "comment"]


def _read_class(spec: Node, specs: dict[str, Node]) -> _Class:
    """The class as a function object, or Refused with the member that is not read so."""
    cls = text(spec.child_by_field_name("name"))
    if spec.parent is not None and spec.parent.type == "template_declaration":
        raise Refused(f"{cls} is a class template", spec)
    if any(c.type == "base_class_clause" for c in spec.children):
        raise Refused(f"{cls} derives from another class", spec)
    fields: list[_Field] = []
    ctor: tuple[str, ...] | None = None
    inits: dict[str, str] = {}
    methods: set[str] = set()
    operator: Node | None = None
    for m in statements(spec.child_by_field_name("body") or spec):
        head = text(m).split("{")[0].split()
        if "virtual" in head or "mutable" in head or "static" in head:
            raise Refused(f"{cls}'s member `{flat(m)[:60]}` is virtual, mutable or static", m)
        if m.type in ("access_specifier", ":"):
            continue
        if m.type == "field_declaration":
            fields += _fields(m, cls, specs)
        elif m.type == "function_definition" and is_call_operator(m):
            if operator is not None:
                raise Refused(f"{cls} has more than one operator()", m)
            operator = m
        elif m.type == "function_definition" and member_name(m) == cls:
            if ctor is not None:
                raise Refused(f"{cls} has more than one constructor", m)
            ctor, inits = _constructor(m, cls)
        elif m.type == "function_definition":
            methods.add(member_name(m))
        else:
            raise Refused(f"{cls}'s member `{flat(m)[:60]}` is neither a data member, a "
                          "constructor nor a member function", m)
    if operator is None:
        raise Refused(f"{cls} has no operator()", spec)
    if ctor is not None and set(inits) != {f.name for f in fields}:
        raise Refused(f"{cls}'s constructor does not initialise each member from one of its "
                      "parameters", spec)
    return _Class(cls, tuple(fields), ctor, inits, frozenset(methods), operator)


def _fields(m: Node, cls: str, specs: dict[str, Node]) -> list[_Field]:
    if any(c.type in ("=", "initializer_list", "default_value", "bitfield_clause")
           for c in m.children):
        raise Refused(f"{cls}'s member `{flat(m)}` has a default value", m)
    kind = m.child_by_field_name("type")
    out = []
    for d in m.children_by_field_name("declarator"):
        name = next((n for n in walk(d) if n.type == "field_identifier"), None)
        if name is None or any(n.type == "array_declarator" for n in walk(d)):
            raise Refused(f"{cls}'s member `{flat(d)}` is an array", m)
        functor = text(kind) if text(kind) in specs and d.type == "field_identifier" else None
        out.append(_Field(text(name), m, d, type_key(kind, d), functor))
    return out


def _constructor(fn: Node, cls: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """The constructor's parameter names and the member each initialises (Refused unless it
    only copies parameters into members)."""
    block = fn.child_by_field_name("body")
    if block is None or statements(block):
        raise Refused(f"{cls}'s constructor has a body", fn)
    d = fn.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    params = []
    for p in plist.named_children if plist is not None else []:
        name = declarator_name(p.child_by_field_name("declarator"))
        if p.type != "parameter_declaration" or name is None:
            raise Refused(f"{cls}'s constructor parameter `{text(p)}` is not named", p)
        params.append(text(name))
    inits: dict[str, str] = {}
    for init in (n for c in fn.children if c.type == "field_initializer_list"
                 for n in c.named_children):
        member = init.named_children[0] if init.named_children else None
        args = init.named_children[1] if len(init.named_children) > 1 else None
        value = _arguments(args) if args is not None else []
        if member is None or len(value) != 1 or text(value[0]) not in params:
            raise Refused(f"{cls}'s constructor initialiser `{text(init)}` is not a member "
                          "from one parameter", init)
        inits[text(member)] = text(value[0])
    return tuple(params), inits


def _bind(obj: str, cls: str, args: list[Node], decl: Node, specs: dict[str, Node],
          site: _Site) -> None:
    """Append to ``site.out`` the declarations ``obj`` of ``cls`` built from ``args`` is:
    its member functors' lambdas, the copies its members hold, its own lambda."""
    c = _read_class(specs[cls], specs)
    if c.ctor is not None:
        if len(args) != len(c.ctor):
            raise Refused(f"`{flat(decl)}` passes {len(args)} values to {cls}'s "
                          f"{len(c.ctor)} constructor parameters", decl)
        given = dict(zip(c.ctor, args, strict=True))
        by_member: dict[str, Node | None] = {f.name: given[c.inits[f.name]] for f in c.fields}
    else:
        if len(args) > len(c.fields):
            raise Refused(f"`{flat(decl)}` passes {len(args)} values to {cls}'s "
                          f"{len(c.fields)} members", decl)
        by_member = {f.name: (args[k] if k < len(args) else None)
                     for k, f in enumerate(c.fields)}
    values: dict[str, str] = {}
    for f in c.fields:
        values[f.name] = _member(obj, f, by_member[f.name], decl, specs, site)
    site.out.append(_lambda(obj, c, values, site))


def _member(obj: str, f: _Field, arg: Node | None, decl: Node, specs: dict[str, Node],
            site: _Site) -> str:
    """The text a member reads as in the operator: its functor's lambda, the kernel's name it
    was built from, or a copy declared before the object's lambda."""
    if f.functor is not None:
        inner: list[Node] = []
        if arg is not None and arg.type == "initializer_list":
            inner = _arguments(arg)
        elif arg is not None and arg.type in ("call_expression", "compound_literal_expression"):
            kind, listed = _constructed(arg)
            if kind != f.functor or listed is None:
                raise Refused(f"member {f.name} of {f.functor} is built from `{flat(arg)}`",
                              arg)
            inner = _arguments(listed)
        elif arg is not None:
            raise Refused(f"member {f.name} copies the object `{flat(arg)}` (a function "
                          "object copied)", arg)
        name = fresh(f"{obj}_{f.name}", site.taken)
        _bind(name, f.functor, inner, decl, specs, site)
        return name
    if arg is None:
        raise Refused(f"member {f.name} is given no value", decl)
    if arg.type == "identifier" and len(site.names.get(text(arg), [])) == 1 and \
            not written(site.body, text(arg)) and (site.types.get(text(arg)) == f.key):
        return text(arg)  # the name's value at every call is the one the object copied
    if f.key.endswith("&"):
        raise Refused(f"reference member {f.name} is bound to `{flat(arg)}`, not a name of "
                      "its type", arg)
    name = fresh(f"{obj}_{f.name}", site.taken)
    spelled = _renamed(f.declarator, {f.name: name})
    quals = [text(q) for q in f.decl.children if q.type == "type_qualifier"]
    if f.declarator.type == "field_identifier" and "const" not in quals:
        quals.insert(0, "const")  # the object's member, never written (see _lambda)
    site.out.append(" ".join([*quals, text(f.decl.child_by_field_name("type")), spelled, "=",
                              f"{flat(arg)};"]))
    return name


def _renamed(node: Node, names: dict[str, str]) -> str:
    """``node``'s text on one line, each identifier in ``names`` replaced and comments out."""
    start, raw = node.start_byte, (node.text or b"")
    pieces = [(n.start_byte - start, n.end_byte - start, names[text(n)] if n.type != "comment"
               else " ") for n in walk(node)
              if n.type == "comment" or (n.type in ("identifier", "field_identifier") and
                                         text(n) in names and not _member_access(n))]
    for a, b, new in sorted(pieces, reverse=True):
        raw = raw[:a] + new.encode() + raw[b:]
    return " ".join(raw.decode().split())


def _member_access(n: Node) -> bool:
    """``p.x`` / ``p->x``: the field of another object, not a name."""
    up = n.parent
    return up is not None and up.type == "field_expression" and \
        up.child_by_field_name("field") == n


def _lambda(obj: str, c: _Class, values: dict[str, str], site: _Site) -> str:
    """``auto obj = [&](params) -> R { body };`` of ``c``'s operator, its members read as
    ``values``."""
    fn = c.operator
    d = fn.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    block = fn.child_by_field_name("body")
    if d is None or d.type != "function_declarator" or plist is None or block is None:
        raise Refused(f"{c.name}'s operator() returns through a declarator (a reference or "
                      "a pointer)", fn)
    own = {text(n) for p in plist.named_children
           if (n := declarator_name(p.child_by_field_name("declarator"))) is not None}
    own |= set(declared(block))
    functors = {f.name for f in c.fields if f.functor is not None}
    for n in walk(block):
        if n.type in _BARRED:
            raise Refused(f"{c.name}'s operator() holds {_BARRED[n.type]}", n)
        if n.type != "identifier" or _member_access(n):
            continue
        name = text(n)
        if name in own & set(values):
            raise Refused(f"{c.name}'s operator() declares {name}, a member's name", n)
        if name in own:
            continue
        if name in values and writer(n, address=True) is not None:
            raise Refused(f"{c.name}'s operator() writes member {name} (or takes its "
                          "address)", n)
        call = n.parent if n.parent is not None and n.parent.type == "call_expression" and \
            n.parent.child_by_field_name("function") == n else None
        if name in functors and call is None:
            raise Refused(f"{c.name}'s operator() uses member functor {name} other than as a "
                          "call", n)
        if name in c.methods:
            raise Refused(f"{c.name}'s operator() calls its member function {name}", n)
        if name not in values and name in site.names:
            raise Refused(f"{c.name}'s operator() reads {name}, a name the kernel declares "
                          "too: the operator reads the file's", n)
    renames = {name: fresh(f"{obj}_{name}", site.taken) for name in sorted(own)}
    params = _renamed(plist, {**renames, **values})
    result = text(fn.child_by_field_name("type"))
    arrow = "" if result == "auto" else f" -> {result}"
    return f"auto {obj} = [&]{params}{arrow} {_renamed(block, {**renames, **values})};"
