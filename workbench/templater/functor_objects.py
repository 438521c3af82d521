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
there, as the object copied it. In the operator: no ``this`` but ``this->m`` (the member
``m``), no write of a member nor its address (nor of a member's member), a member functor
only called, no name the kernel declares but the operator's own (a name there means the
file's), no preprocessor line, string or character literal.

A named member function is read so too (round 31c's crspline_rotmean_method: ``Spline sp;
sp.k = knots; .. total += sp.at(wrap(u[i] + offset));``): where the kernel calls on a local
object a member function of more than one ``return`` that its class defines (``const`` or
not), each function called is written as ``auto sp_at = [&](float sp_at_t) -> float {..};``
and each call ``sp.at(..)`` as ``sp_at(..)``. The members, ``m`` and ``this->m`` alike, read
as the values set once: by the declaration's initializer (as above), or by plain assignment
statements ``sp.m = v;`` beside the declaration before any call, each written as the copy
it holds (nothing where ``v`` is a name the kernel never writes); the lambdas follow the
last. Left as written, with the line: a member function writing a member (or taking its
address), calling itself or another member function, virtual or overloaded; the object's
address taken, the object passed to a function, copied or a member read outside its
functions; a member set twice, after a call, or other than by a plain statement beside the
declaration; a member read that is never set. A function of one ``return`` is left to the
passes that read its expression where it is called, and an object of a class with a
constructor to the window families, which read its method through the constructor
(gather_stage, clamped_reads: the corpus's median3x3_clamp).
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
    operator: Node | None
    defined: tuple[Node, ...] = ()  # the other member functions' definitions, in order


@dataclass
class _Site:
    """What one object's rewrite reads and writes: the kernel's body, its declared names and
    types, the names taken in the file, and the declarations written before the object's."""

    body: Node
    at: Callable[[int], int]  # the baseline line of a line of the text read
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
    kinds = _class_specs(tree_root(body), methods=True)
    if not kinds:
        return current
    notes: list[Finding] = []
    edits: list[tuple[Node, list[str]]] = []
    names = declared(body.parent)
    types = declared_types(body.parent)
    taken = set(re.findall(r"\w+", current.text))
    for decl in walk(body):
        found = _object(decl, kinds) if decl.type == "declaration" else None
        if found is None:
            continue
        obj, cls, args = found
        site = _Site(body, current.baseline_line, names, types, taken, [])
        if _method_called(obj, decl, body, kinds[cls], args is None):
            try:
                edits += _bind_methods(obj, cls, args, decl, kinds, specs, site)
            except Refused as refused:
                notes.append(Finding(TRANSFORM, False, f"{obj} (an object of {cls}) is not "
                                     f"read as lambdas: {refused.reason}",
                                     current.baseline_line(refused.line)))
                continue
            notes.append(Finding(TRANSFORM, True, f"{obj} (an object of {cls}) read as the "
                                 "lambdas its member functions called are, its members as "
                                 "the values set", current.baseline_line(line(decl))))
            continue
        if cls not in specs or args is None:
            continue
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


def _class_specs(root: Node, *, methods: bool = False) -> dict[str, Node]:
    """File-scope (or namespace-scope) class and struct definitions that define an
    ``operator()`` (with ``methods``: any member function), by name; a name defined twice is
    left out."""
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
        if any(m.type == "function_definition" and (methods or is_call_operator(m))
               for m in members.children):
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


def _object(decl: Node, specs: dict[str, Node]) -> tuple[str, str, list[Node] | None] | None:
    """(object, class, argument nodes) of a declaration of one object of a known class; the
    arguments None where the declaration has none (``S op;``, its members set later)."""
    declarators = decl.children_by_field_name("declarator")
    kind = decl.child_by_field_name("type")
    if len(declarators) != 1 or kind is None:
        return None
    d, cls = declarators[0], text(kind)
    if d.type == "function_declarator" and cls in specs:  # S op(a, b);
        plist = d.child_by_field_name("parameters")
        return _named(d.child_by_field_name("declarator"), cls,
                      list(plist.named_children) if plist is not None else [])
    if d.type == "identifier" and cls in specs:  # S op;
        return text(d), cls, None
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


def _named(name: Node | None, cls: str, args: list[Node]
           ) -> tuple[str, str, list[Node] | None] | None:
    return (text(name), cls, args) if name is not None and name.type == "identifier" else None


def _constructed(value: Node) -> tuple[str, Node | None]:
    """(class, its argument or initializer list) of ``S(a)`` / ``S{a}``."""
    if value.type == "call_expression":
        return callee_name(value), value.child_by_field_name("arguments")
    return text(value.child_by_field_name("type")), value.child_by_field_name("value")


def _arguments(value: Node) -> list[Node]:
    return [a for a in value.named_children if a.type != "comment"]


def _read_class(spec: Node, specs: dict[str, Node], *, operator: bool = True) -> _Class:
    """The class as a function object (with ``operator``: one that has an ``operator()``),
    or Refused with the member that is not read so."""
    cls = text(spec.child_by_field_name("name"))
    if spec.parent is not None and spec.parent.type == "template_declaration":
        raise Refused(f"{cls} is a class template", spec)
    if any(c.type == "base_class_clause" for c in spec.children):
        raise Refused(f"{cls} derives from another class", spec)
    fields: list[_Field] = []
    ctor: tuple[str, ...] | None = None
    inits: dict[str, str] = {}
    methods: set[str] = set()
    defined: list[Node] = []
    call: Node | None = None
    for m in statements(spec.child_by_field_name("body") or spec):
        head = text(m).split("{")[0].split()
        if "virtual" in head or "mutable" in head or "static" in head:
            raise Refused(f"{cls}'s member `{flat(m)[:60]}` is virtual, mutable or static", m)
        if m.type in ("access_specifier", ":"):
            continue
        if m.type == "field_declaration":
            fields += _fields(m, cls, specs)
        elif m.type == "function_definition" and is_call_operator(m):
            if call is not None:
                raise Refused(f"{cls} has more than one operator()", m)
            call = m
        elif m.type == "function_definition" and member_name(m) == cls:
            if ctor is not None:
                raise Refused(f"{cls} has more than one constructor", m)
            ctor, inits = _constructor(m, cls)
        elif m.type == "function_definition":
            methods.add(member_name(m))
            defined.append(m)
        else:
            raise Refused(f"{cls}'s member `{flat(m)[:60]}` is neither a data member, a "
                          "constructor nor a member function", m)
    if call is None and operator:
        raise Refused(f"{cls} has no operator()", spec)
    if ctor is not None and set(inits) != {f.name for f in fields}:
        raise Refused(f"{cls}'s constructor does not initialise each member from one of its "
                      "parameters", spec)
    return _Class(cls, tuple(fields), ctor, inits, frozenset(methods), call, tuple(defined))


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


def _method_called(obj: str, decl: Node, body: Node, spec: Node, unset: bool) -> bool:
    """Whether the kernel calls a named member function of ``obj`` after ``decl``
    (``obj.f(..)``), or, ``unset`` (declared without a value, its members set later), the
    object itself (``obj(..)``), whose definition holds more than one ``return``. A
    function of one ``return`` is left to the passes that read its expression where it is
    called (item_objects, the tile families: the corpus's gemm_splitk4, star13_o2), and so
    is an object of a class with a constructor: the window families read its method
    through the constructor (gather_stage, clamped_reads: set 14's median3x3_clamp,
    ``const ClampedImage img(in, h, w); .. img.at(y + dy, x + dx)``, stages its tile)."""
    members = spec.child_by_field_name("body")
    defined = [m for m in (members.children if members is not None else [])
               if m.type == "function_definition"]
    name = spec.child_by_field_name("name")
    if any(member_name(m) == text(name) for m in defined):
        return False
    many = {"operator()" if is_call_operator(m) else member_name(m) for m in defined
            if _statements(m)}
    if not many:
        return False
    for n in walk(body):
        if n.start_byte < decl.end_byte or n.type != "identifier" or text(n) != obj:
            continue
        up = n.parent
        if up is not None and up.type == "field_expression" and \
                text(up.child_by_field_name("operator")) == "." and up.parent is not None and \
                up.parent.type == "call_expression" and \
                up.parent.child_by_field_name("function") == up and \
                text(up.child_by_field_name("field")) in many:
            return True
        if unset and up is not None and up.type == "call_expression" and \
                up.child_by_field_name("function") == n and "operator()" in many:
            return True
    return False


def _statements(fn: Node) -> bool:
    """Whether the member function ``fn``'s body is more than one ``return``."""
    block = fn.child_by_field_name("body")
    kids = statements(block) if block is not None else []
    return len(kids) != 1 or kids[0].type != "return_statement"


@dataclass(frozen=True)
class _Uses:
    """An object's uses after its declaration: its member sets (the statement, the member,
    the value) and its calls (the call, the member function's name, None for ``operator()``)."""

    sets: tuple[tuple[Node, str, Node], ...]
    calls: tuple[tuple[Node, str | None], ...]


def _uses(obj: str, decl: Node, c: _Class, site: _Site) -> _Uses:
    """``obj``'s uses, or Refused where one lets it escape (its address taken, passed to a
    function, copied), reads a member outside its member functions, or sets a member other
    than once by a plain statement beside the declaration before any call."""
    sets: list[tuple[Node, str, Node]] = []
    calls: list[tuple[Node, str | None]] = []
    data = {f.name for f in c.fields if f.functor is None}
    for n in walk(site.body):
        if n.start_byte < decl.end_byte or n.type != "identifier" or text(n) != obj:
            continue
        up = n.parent
        assert up is not None
        if up.type == "call_expression" and up.child_by_field_name("function") == n:
            calls.append((up, None))
            continue
        if up.type == "pointer_expression" and text(up.child_by_field_name("operator")) == "&":
            raise Refused(f"`{flat(up)[:80]}` takes the address of {obj} (the object "
                          "escapes)", n)
        if up.type == "argument_list":
            raise Refused(f"`{flat(up.parent or up)[:80]}` passes {obj} to a function (the "
                          "object escapes, by value or by reference)", n)
        if up.type != "field_expression" or up.child_by_field_name("argument") != n or \
                text(up.child_by_field_name("operator")) != ".":
            raise Refused(f"`{flat(up)[:80]}` uses {obj} other than by calling its member "
                          "functions or setting a member (a copy, a reference or a pointer "
                          "to it)", n)
        field = text(up.child_by_field_name("field"))
        use = up.parent
        assert use is not None
        if use.type == "call_expression" and use.child_by_field_name("function") == up:
            calls.append((use, field))
            continue
        if use.type != "assignment_expression" or use.child_by_field_name("left") != up:
            if writer(up, address=True) is not None:
                raise Refused(f"`{flat(use)[:80]}` writes member {field} of {obj} (or takes "
                              "its address)", n)
            raise Refused(f"`{flat(use)[:80]}` reads member {field} of {obj} outside its "
                          "member functions", n)
        stmt = use.parent
        if field not in data:
            raise Refused(f"`{flat(use)[:80]}` sets {field}, no data member of {c.name} (a "
                          "member functor is built with the object)", n)
        if text(use.child_by_field_name("operator")) != "=" or stmt is None or \
                stmt.type != "expression_statement" or stmt.parent != decl.parent:
            raise Refused(f"`{flat(use)[:80]}` sets member {field} of {obj} other than by a "
                          "plain assignment statement beside its declaration", n)
        value = use.child_by_field_name("right")
        assert value is not None
        sets.append((stmt, field, value))
    if calls:
        first = min(call.start_byte for call, _ in calls)
        late = next((st for st, _, _ in sets if st.end_byte > first), None)
        if late is not None:
            call = min((call for call, _ in calls), key=lambda n: n.start_byte)
            raise Refused(f"`{flat(late)[:80]}` sets a member of {obj} after a call of its "
                          f"member functions (line {site.at(line(call))})", late)
    return _Uses(tuple(sets), tuple(calls))


def _bind_methods(obj: str, cls: str, args: list[Node] | None, decl: Node,
                  kinds: dict[str, Node], specs: dict[str, Node], site: _Site
                  ) -> list[tuple[Node, list[str]]]:
    """The edits that write ``obj`` of ``cls`` (built from ``args``, None: declared without
    a value) as the lambdas of the member functions the kernel calls on it: its member
    functors' lambdas and the copies its initializer holds at the declaration, each member
    set (``obj.m = v;``) as the copy it holds (nothing where ``v`` is a name the lambdas can
    read), the lambdas after the last, and each call ``obj.f(..)`` as ``obj_f(..)``."""
    c = _read_class(kinds[cls], specs, operator=False)
    if len(site.names.get(obj, [])) > 1:
        raise Refused(f"the name {obj} is declared more than once in the kernel", decl)
    uses = _uses(obj, decl, c, site)
    given: dict[str, Node | None] = {}
    if args is not None and c.ctor is not None:
        if len(args) != len(c.ctor):
            raise Refused(f"`{flat(decl)}` passes {len(args)} values to {cls}'s "
                          f"{len(c.ctor)} constructor parameters", decl)
        by_param = dict(zip(c.ctor, args, strict=True))
        given = {f.name: by_param[c.inits[f.name]] for f in c.fields}
    elif args is not None:
        if len(args) > len(c.fields):
            raise Refused(f"`{flat(decl)}` passes {len(args)} values to {cls}'s "
                          f"{len(c.fields)} members", decl)
        given = {f.name: args[k] for k, f in enumerate(c.fields) if k < len(args)}
    elif c.ctor:
        raise Refused(f"`{flat(decl)}` declares {obj} without the values {cls}'s "
                      "constructor takes", decl)
    fields = {f.name: f for f in c.fields}
    values: dict[str, str] = {}
    for f in c.fields:
        if f.name in given or f.functor is not None:
            values[f.name] = _member(obj, f, given.get(f.name), decl, specs, site)
    edits: list[tuple[Node, list[str]]] = [(decl, site.out)]
    set_at: dict[str, Node] = {f: decl for f, v in given.items() if v is not None}
    for stmt, field, value in uses.sets:
        if field in set_at:
            raise Refused(f"member {field} of {obj} is set twice (line "
                          f"{site.at(line(set_at[field]))} and line {site.at(line(stmt))})", stmt)
        set_at[field] = stmt
        site.out = []
        values[field] = _member(obj, fields[field], value, stmt, specs, site)
        edits.append((stmt, site.out))
    lambdas: list[str] = []
    named: dict[str | None, str] = {}
    for call, method in uses.calls:
        if method in named:
            continue
        if method is None:
            if c.operator is None:
                raise Refused(f"`{flat(call)[:80]}` calls {obj}, and {cls} has no "
                              "operator()", call)
            named[None] = obj
            lambdas.append(_lambda(obj, c, values, site))
            continue
        defs = [m for m in c.defined if member_name(m) == method]
        if not defs:
            raise Refused(f"`{flat(call)[:80]}` calls {method}, no member function {cls} "
                          "defines in its body", call)
        if len(defs) > 1:
            raise Refused(f"{cls}'s {method}() is overloaded ({len(defs)} definitions)",
                          defs[1])
        named[method] = fresh(f"{obj}_{method}", site.taken)
        lambdas.append(_lambda(named[method], c, values, site, defs[0]))
    last = max(edits, key=lambda e: e[0].start_byte)
    last[1].extend(lambdas)
    for call, method in uses.calls:
        callee = call.child_by_field_name("function")
        if method is not None and callee is not None:
            edits.append((callee, [named[method]]))
    for stmt_parts in edits:
        if not stmt_parts[1]:
            stmt_parts[1].append("")
    return edits


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
    pieces += [(n.start_byte - start, n.end_byte - start, names[m]) for n in walk(node)
               if (m := _this_member(n)) is not None and m in names]  # this->m: m's value
    for a, b, new in sorted(pieces, reverse=True):
        raw = raw[:a] + new.encode() + raw[b:]
    return " ".join(raw.decode().split())


def _member_access(n: Node) -> bool:
    """``p.x`` / ``p->x``: the field of another object, not a name."""
    up = n.parent
    return up is not None and up.type == "field_expression" and \
        up.child_by_field_name("field") == n


def _lambda(obj: str, c: _Class, values: dict[str, str], site: _Site,
            fn: Node | None = None) -> str:
    """``auto obj = [&](params) -> R { body };`` of ``c``'s member function ``fn`` (its
    ``operator()`` where None), its members (``m`` or ``this->m``) read as ``values``."""
    fn = c.operator if fn is None else fn
    assert fn is not None  # _read_class refuses a class without operator() for the operator
    what = "operator()" if is_call_operator(fn) else f"{member_name(fn)}()"
    d = fn.child_by_field_name("declarator")
    plist = d.child_by_field_name("parameters") if d is not None else None
    block = fn.child_by_field_name("body")
    if d is None or d.type != "function_declarator" or plist is None or block is None:
        raise Refused(f"{c.name}'s {what} returns through a declarator (a reference or "
                      "a pointer)", fn)
    own = {text(n) for p in plist.named_children
           if (n := declarator_name(p.child_by_field_name("declarator"))) is not None}
    own |= set(declared(block))
    functors = {f.name for f in c.fields if f.functor is not None}
    members = {f.name for f in c.fields}
    for n in walk(block):
        member = _this_member(n)
        if member is not None or n.type == "this":
            if member is None or n.type == "this":
                if n.parent is None or _this_member(n.parent) is None:
                    raise Refused(f"{c.name}'s {what} holds `this` other than as this->member "
                                  f"(`{flat(n.parent or n)[:60]}`)", n)
                continue
            name = member
        elif n.type in _BARRED:
            raise Refused(f"{c.name}'s {what} holds {_BARRED[n.type]}", n)
        elif n.type != "identifier" or _member_access(n):
            continue
        else:
            name = text(n)
            if name in own & members:
                raise Refused(f"{c.name}'s {what} declares {name}, a member's name", n)
            if name in own:
                continue
        if name in members and _member_written(n):
            raise Refused(f"{c.name}'s {what} writes member {name} (or takes its "
                          "address)", n)
        call = n.parent if n.parent is not None and n.parent.type == "call_expression" and \
            n.parent.child_by_field_name("function") == n else None
        if name in functors and call is None:
            raise Refused(f"{c.name}'s {what} uses member functor {name} other than as a "
                          "call", n)
        if name in c.methods and name == member_name(fn):
            raise Refused(f"{c.name}'s {what} calls itself (recursive)", n)
        if name in c.methods:
            raise Refused(f"{c.name}'s {what} calls its member function {name}", n)
        if name in members and name not in values:
            raise Refused(f"{c.name}'s {what} reads member {name}, which the object never "
                          "sets", n)
        if name not in values and name in site.names:
            raise Refused(f"{c.name}'s {what} reads {name}, a name the kernel declares "
                          "too: the operator reads the file's", n)
    renames = {name: fresh(f"{obj}_{name}", site.taken) for name in sorted(own)}
    params = _renamed(plist, {**renames, **values})
    result = text(fn.child_by_field_name("type"))
    arrow = "" if result == "auto" else f" -> {result}"
    return f"auto {obj} = [&]{params}{arrow} {_renamed(block, {**renames, **values})};"


def _this_member(n: Node) -> str | None:
    """``m`` of ``this->m``, else None."""
    if n.type != "field_expression" or text(n.child_by_field_name("operator")) != "->":
        return None
    arg, field = n.child_by_field_name("argument"), n.child_by_field_name("field")
    return text(field) if arg is not None and arg.type == "this" and field is not None \
        else None


def _member_written(n: Node) -> bool:
    """Whether the member ``n`` names (``m`` or ``this->m``) is written: assigned, stepped or
    its address taken, itself or a member of it (``m.x = ..``)."""
    place = n
    while place.parent is not None and place.parent.type == "field_expression" and \
            place.parent.child_by_field_name("argument") == place:
        place = place.parent
    return writer(place, address=True) is not None
