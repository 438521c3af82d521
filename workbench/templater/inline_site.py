"""Whether one ``__device__`` callee may be inlined into its kernel, and how it is bound.

:func:`find_site` checks the callee and its one call (raising :class:`~.inline_bind.Refused`
with the reason and the line otherwise); :func:`bind` decides what each of the callee's
names becomes in the kernel (see :mod:`.inline_bind` for the kinds of binding).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.core.cuda_source import function_definitions
from workbench.templater.analysis import inside, text, walk
from workbench.templater.inline_bind import (
    CallParam,
    Refused,
    addressed,
    call_params,
    callee_name,
    declared,
    declared_types,
    file_scope_names,
    flat,
    fresh,
    int_constants,
    integer_literal,
    names_in,
    signed_int,
    spelled_targs,
    statements,
    template_arguments,
    template_params,
    words,
    written,
)


@dataclass(frozen=True)
class Site:
    """One callee and its one call in the kernel: the file's bytes and tree, the entry's
    definition, the callee's (``outer``: with its ``template <...>``) and body, the call, the
    statement it stands in and, when its result initialises a variable or is assigned, that
    declarator or assignment."""

    data: bytes
    root: Node
    entry: Node
    entry_name: str
    name: str
    fn: Node
    outer: Node
    body: Node
    call: Node
    statement: Node
    init: Node | None

    def prototypes(self) -> list[Node]:
        """The callee's declarations without a body (with their ``template <...>``)."""
        out: list[Node] = []
        for n in walk(self.root):
            if n.type != "declaration" or n.parent is None or n.parent.type not in (
                    "translation_unit", "template_declaration", "declaration_list"):
                continue
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "function_declarator" and \
                    text(d.child_by_field_name("declarator")) == self.name:
                out.append(n.parent if n.parent.type == "template_declaration" else n)
        return out

    def kept(self) -> bool:
        """Whether something besides this call names the callee (another function, or the
        kernel's next call of it, inlined in turn): its definition then stays in the file."""
        prototypes = self.prototypes()
        return any(text(n) == self.name and not inside(n, self.call) and
                   not inside(n, self.outer) and not any(inside(n, p) for p in prototypes)
                   for n in names_in(self.root))


@dataclass(frozen=True)
class Binding:
    """What each of the callee's names is inlined as (``subs``: name -> text), the
    ``#define`` lines of its template parameters, the parameters bound to locals with their
    arguments, and what to tell the reviewer."""

    subs: Mapping[str, str]
    defines: tuple[tuple[str, str], ...]
    copies: tuple[tuple[CallParam, str], ...]
    told: tuple[str, ...]


def find_site(data: bytes, root: Node, entry: Node, entry_name: str, name: str) -> Site:
    """The site of ``name``'s call in ``entry`` when inlining it is legal (see the module
    doc of :mod:`.inline_calls`); raises Refused otherwise."""
    defs = [fn for n, fn in function_definitions(root) if n == name]
    if len(defs) != 1:
        lines = ", ".join(str(d.start_point.row + 1) for d in defs)
        raise Refused(f"it is defined {len(defs)} times (lines {lines}): an overload or a "
                      "specialisation, which one a call reaches is the compiler's choice",
                      defs[-1])
    fn = defs[0]
    outer = fn.parent if fn.parent is not None and fn.parent.type == "template_declaration" \
        else fn
    _same_scope(outer, entry)
    _not_recursive(root, fn, name)
    call = _only_call(entry, name, fn)
    statement, init = _statement(call)
    body = fn.child_by_field_name("body")
    assert body is not None  # function_definitions lists definitions only
    site = Site(data, root, entry, entry_name, name, fn, outer, body, call, statement, init)
    _returns(site)
    return site


def _same_scope(outer: Node, entry: Node) -> None:
    """The callee is declared where the entry is (the file, the same namespace, or an
    anonymous namespace in it): its free names then resolve alike inlined."""
    scope, home = _scope(outer), _scope(entry)
    while scope is not None and scope != home and scope.type == "namespace_definition" and \
            scope.child_by_field_name("name") is None:
        # an anonymous namespace's names are its enclosing scope's too (an ambiguity with
        # one there does not compile: it cannot silently read another)
        scope = _scope(scope)
    if scope != home:
        raise Refused(f"it is defined {_scope_name(scope)} and the kernel "
                      f"{_scope_name(home)}: its names would resolve otherwise", outer)


def _scope(node: Node) -> Node | None:
    """The namespace, class, function or file ``node`` is declared in."""
    scope = node.parent
    while scope is not None and scope.type not in (
            "translation_unit", "namespace_definition", "class_specifier", "struct_specifier",
            "function_definition"):
        scope = scope.parent
    return scope


def _scope_name(scope: Node | None) -> str:
    if scope is None or scope.type == "translation_unit":
        return "at file scope"
    name = scope.child_by_field_name("name")
    kind = scope.type.split("_")[0]
    return f"in {kind} {text(name)}" if name is not None else f"in an anonymous {kind}"


def _not_recursive(root: Node, fn: Node, name: str) -> None:
    defs = dict(function_definitions(root))
    todo, seen = [fn], set()
    while todo:
        f = todo.pop()
        for n in walk(f):
            callee = callee_name(n) if n.type == "call_expression" else ""
            if callee == name:
                via = "" if f is fn else f" through {text(f.child_by_field_name('declarator'))}"
                raise Refused(f"it calls itself{via} (recursion has no inlined form)", n)
            if callee in defs and callee not in seen:
                seen.add(callee)
                todo.append(defs[callee])


def _only_call(entry: Node, name: str, fn: Node) -> Node:
    """The call of ``name`` to inline: its one call, or the first of several where ``fn``
    keeps nothing between calls (no ``__shared__`` or ``static`` declaration: each call a
    copy of its own, inlined one after another, :func:`.inline_calls.inline_calls`)."""
    calls = [n for n in walk(entry) if n.type == "call_expression" and callee_name(n) == name]
    if len(calls) == 1:
        return calls[0]
    where = ", ".join(f"{spelled_targs(c) or '()'} at line {c.start_point.row + 1}"
                      for c in calls)
    if len({spelled_targs(c) for c in calls}) > 1:
        raise Refused(f"it is called {len(calls)} times with different template arguments "
                      f"({where}): one inlined body takes one set", calls[1])
    if calls and not _keeps_state(fn):
        return calls[0]
    raise Refused(f"it is called {len(calls)} times ({where}): each call would need its own "
                  "copy, and its __shared__ memory is one per block; inlined only where the "
                  "kernel calls it once", calls[-1])


def _keeps_state(fn: Node) -> bool:
    """Whether ``fn`` declares ``__shared__`` or ``static`` storage (one per block or per
    program, whatever the calls)."""
    return any(n.type == "declaration" and any(text(c) in ("__shared__", "static")
                                               for c in n.children) for n in walk(fn))


#: The assignments whose right side may be an inlined call's value: plain and compound.
_ASSIGNS = frozenset(("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="))


def _statement(call: Node) -> tuple[Node, Node | None]:
    """The statement the body replaces, and the init declarator of a result's variable (or
    the assignment ``lhs = f(..)`` of the result): a statement of a block, or (a statement
    or an assignment only) the lone body of an ``if``, a loop or a ``case``, which the body
    then fills as a block."""
    parent = call.parent
    top = _operand_top(call)
    if top is not call and top.parent is not None and \
            top.parent.type in ("init_declarator", "assignment_expression"):
        call, parent = top, top.parent  # `y[i] = (float)f(..)`: the value around the call
    if parent is not None and parent.type == "expression_statement":
        if _in_block(parent) or _lone_body(parent):
            return parent, None
    elif parent is not None and parent.type == "init_declarator" and \
            parent.child_by_field_name("value") == call and parent.parent is not None and \
            parent.parent.type == "declaration" and \
            len(parent.parent.children_by_field_name("declarator")) == 1:
        if _in_block(parent.parent):
            return parent.parent, parent
        raise Refused("its result initialises a variable outside a block "
                      f"(`{flat(parent.parent.parent or parent)}`)", call)
    elif parent is not None and parent.type == "assignment_expression" and \
            parent.child_by_field_name("right") == call and \
            text(parent.child_by_field_name("operator")) in _ASSIGNS and \
            parent.parent is not None and parent.parent.type == "expression_statement" and \
            (_in_block(parent.parent) or _lone_body(parent.parent)):
        # `out[i] = f(..)`, `acc += f(..)`: the body runs, then its final return's value is
        # assigned or combined (the right side of `=` and of a compound assignment is
        # sequenced before the left, as inlined)
        return parent.parent, parent
    raise Refused(f"its result is used in an expression (`{flat(parent or call)}`); inlined "
                  "only as a statement, one variable's initializer or the value a statement "
                  "assigns", call)


def _operand_top(call: Node) -> Node:
    """The largest expression around ``call`` that evaluates it every time it is evaluated
    (casts, parentheses, arithmetic, the arguments of a named function's call: no ``&&``,
    ``||``, ``?:`` or comma between) and whose other operands change nothing (no
    assignment, increment or call but the calls ``call`` is an argument of): inlined, the
    body runs first and its value stands in the call, which is an order the call allowed
    (the operands of an arithmetic operator are unsequenced against a call, a call's
    arguments indeterminately sequenced: round 31b's ``fmaxf(inclusive_max(tile, v),
    carry)``). ``call`` itself where it is not such an operand."""
    top, around = call, []
    while top.parent is not None:
        up = top.parent
        if up.type in ("parenthesized_expression", "cast_expression") or \
                (up.type in ("binary_expression", "unary_expression") and
                 text(up.child_by_field_name("operator")) not in ("&&", "||", "&")):
            top = up
        elif up.type == "argument_list" and up.parent is not None and \
                up.parent.type == "call_expression" and \
                (up.parent.child_by_field_name("function") or up).type == "identifier":
            # an argument (`fmaxf(f(..), carry)`): a call's arguments are indeterminately
            # sequenced, and the enclosing call runs after them all
            top = up.parent
            around.append(top)
        else:
            break
    if any(n.type in ("assignment_expression", "update_expression", "call_expression",
                      "comma_expression") and not inside(n, call) and n not in around
           for n in walk(top)):
        return call
    return top


def _in_block(statement: Node) -> bool:
    return statement.parent is not None and statement.parent.type == "compound_statement"


def _lone_body(statement: Node) -> bool:
    """``statement`` is the body of an ``if``/``else``, a loop or a ``case`` label."""
    parent = statement.parent
    if parent is None:
        return False
    if parent.type in ("case_statement", "else_clause", "labeled_statement"):
        return True
    index = next(i for i, c in enumerate(parent.children) if c == statement)
    return parent.type in ("if_statement", "for_statement", "while_statement",
                           "do_statement", "for_range_loop") and \
        parent.field_name_for_child(index) in ("consequence", "alternative", "body")


def _returns(site: Site) -> None:
    """A void callee's return ends the kernel too only when the call is its last statement;
    a result is inlined from one final ``return``."""
    returns = [n for n in walk(site.body) if n.type == "return_statement"]
    declarator = site.fn.child_by_field_name("declarator")
    kind = text(site.fn.child_by_field_name("type"))
    void = kind == "void" and declarator is not None and declarator.type == "function_declarator"
    if site.init is None:
        if not void:
            raise Refused(f"it returns {kind} and the call discards it", site.statement)
        entry_body = site.entry.child_by_field_name("body")
        last = statements(entry_body) if entry_body is not None else []
        if returns and (not last or last[-1] != site.statement):
            raise Refused(f"it returns early (line {returns[0].start_point.row + 1}), and the "
                          "call is not the kernel's last statement: inlined, that return "
                          "would end the kernel", site.statement)
        return
    if void:
        raise Refused("its void result initialises a variable", site.statement)
    if not returns:
        raise Refused("it has no return", site.fn)
    own = statements(site.body)
    if len(returns) != 1 or not own or own[-1] != returns[0] or \
            returns[0].named_child_count != 1:
        raise Refused(f"it returns at line {returns[0].start_point.row + 1} before its end: "
                      "a result is inlined only from one final return", returns[0])


# -- the bindings ----------------------------------------------------------------------------


def bind(site: Site) -> Binding:
    """What each of the callee's names becomes in the kernel (raises Refused where no
    binding keeps the meaning)."""
    binder = _Binder(site)
    binder.templates()
    binder.params()
    binder.locals()
    binder.not_captured()
    return Binding(dict(binder.subs), tuple(binder.defines), tuple(binder.copies),
                   tuple(binder.told))


@dataclass
class _Binder:
    site: Site
    subs: dict[str, str] = field(default_factory=dict)
    defines: list[tuple[str, str]] = field(default_factory=list)
    copies: list[tuple[CallParam, str]] = field(default_factory=list)
    told: list[str] = field(default_factory=list)

    def templates(self) -> None:
        """Template parameters: a type substituted; an integer ``#define``-d (or, bound to
        the author's ``int`` constant, read by that name, so its lifts follow)."""
        site = self.site
        params = template_params(site.outer)
        args = template_arguments(site.call)
        if len(args) > len(params):
            raise Refused(f"the call names {len(args)} template arguments for {len(params)} "
                          "parameters", site.call)
        outside = _names_outside(site)
        ints = int_constants(site.root)
        for i, p in enumerate(params):
            arg = args[i] if i < len(args) else p.default
            if arg is None and p.is_type and i >= len(args):
                self._deduced(p.name)
                continue
            if arg is None:
                raise Refused(f"its template parameter {p.name} is deduced from the call's "
                              f"arguments; name it at the call ({site.name}<...>(...))",
                              site.call)
            raw = words(flat(arg), self.subs)
            if p.is_type:
                if "*" in raw or "&" in raw:
                    raise Refused(f"its template parameter {p.name} is bound to the pointer "
                                  f"type {raw}: substituted, a const would move", arg)
                self.subs[p.name] = raw
                self.told.append(f"{p.name} = {raw}")
                continue
            literal = integer_literal(raw, p.type_key)
            if literal is None and raw in ints and signed_int(p.type_key):
                self.subs[p.name] = raw
                self.told.append(f"{p.name} is {raw}")
                continue
            value = literal or (f"({raw})" if signed_int(p.type_key) else
                                f"(({text(p.node.child_by_field_name('type'))})({raw}))")
            name = p.name if p.name not in outside else \
                fresh(f"{site.name.upper()}_{p.name}", outside)
            outside.add(name)
            self.defines.append((name, value))
            if name != p.name:
                self.subs[p.name] = name
            if literal is not None and signed_int(p.type_key):
                ints.add(name)
            self.told.append(f"{p.name} = {raw}" + (f" (as {name})" if name != p.name else ""))

    def _deduced(self, name: str) -> None:
        """A type parameter the call's arguments give: each parameter spelled ``T``, ``T*``
        or ``T&`` (qualifiers aside) bound to a kernel variable of a known type says what
        ``T`` is; they must agree, and one must say."""
        site = self.site
        given = site.call.child_by_field_name("arguments")
        args = list(given.named_children) if given is not None else []
        caller = declared_types(site.entry)
        found: dict[str, Node] = {}
        for p, arg in zip(call_params(site.fn), args, strict=False):
            base = p.type_key.rstrip("*&")
            has = caller.get(text(arg)) if arg.type == "identifier" else None
            suffix = p.type_key[len(base):].replace("&", "")
            if base != name or has is None or not has.endswith(suffix):
                continue
            found.setdefault(has[:len(has) - len(suffix)] if suffix else has, arg)
        if len(found) != 1:
            why = "no argument names it" if not found else \
                f"the arguments give {', '.join(sorted(found))}"
            raise Refused(f"its template parameter {name} is deduced from the call's arguments "
                          f"and {why}; name it at the call ({site.name}<...>(...))", site.call)
        kind, arg = next(iter(found.items()))
        if "*" in kind or "&" in kind:
            raise Refused(f"its template parameter {name} is deduced as the pointer type "
                          f"{kind}: substituted, a const would move", arg)
        self.subs[name] = kind
        self.told.append(f"{name} = {kind} (from {text(arg)})")

    def params(self) -> None:
        """Call parameters: renamed to a plain-identifier argument where that keeps the
        meaning (same type, never written, its variable's address never taken), else a
        local initialised once with the argument; pointers and references by name only."""
        site = self.site
        params = call_params(site.fn)
        given = site.call.child_by_field_name("arguments")
        args = list(given.named_children) if given is not None else []
        if len(args) > len(params):
            raise Refused(f"the call passes {len(args)} arguments for {len(params)} "
                          "parameters", site.call)
        caller = declared_types(site.entry)
        referenced = {text(a) for p, a in zip(params, args, strict=False) if p.reference}
        for i, p in enumerate(params):
            arg = args[i] if i < len(args) else p.default
            if arg is None:
                raise Refused(f"the call gives no argument for {p.name}", site.call)
            raw, want = flat(arg), words(p.type_key, self.subs)
            has = caller.get(raw) if arg.type == "identifier" else None
            if p.indirect and arg.type != "identifier" and _pointer_value(p):
                # a pointer passed by value: a local initialised once with the argument
                # holds the address the call passed (wq + row * words)
                self.copies.append((p, text(arg)))
                continue
            if p.indirect:
                kind = "reference" if p.reference else "array"
                if arg.type != "identifier":
                    raise Refused(f"its {kind} parameter {p.name} is bound to the expression "
                                  f"`{raw}`: references and arrays are bound by name only "
                                  "(a plain identifier of the kernel)", arg)
                if has is not None and has.rstrip("*&") != want.rstrip("*&"):
                    raise Refused(f"its {kind} parameter {p.name} ({want}) is bound to {raw} "
                                  f"({has}): renamed, its element type would change", arg)
                if p.reference or not written(site.body, p.name):
                    self.subs[p.name] = raw
                    continue
            elif has == want and not written(site.body, p.name) and \
                    not addressed(site.entry, raw) and raw not in referenced:
                self.subs[p.name] = raw
                continue
            self.copies.append((p, text(arg)))  # as written: evaluated once, here

    def locals(self) -> None:
        """The callee's locals (and its parameters bound to locals) renamed where the kernel
        names them too."""
        site = self.site
        own = declared(site.body)
        params = {p.name for p in call_params(site.fn)}
        for name, nodes in own.items():
            if name in params:
                raise Refused(f"it declares {name} again, over its parameter", nodes[0])
        avoid = {text(n) for n in names_in(site.entry)} | set(self.subs.values()) | \
            {d for d, _ in self.defines}
        taken = {text(n) for n in names_in(site.root)} | avoid
        file_names = file_scope_names(site.root)
        copied = [p.name for p, _ in self.copies]
        renamed: list[str] = []
        for name in [*own, *copied]:
            if name not in avoid:
                continue
            if name in file_names:
                raise Refused(f"its local {name} collides with the kernel's and also names a "
                              "file-scope declaration it may read: not renamed", site.outer)
            self.subs[name] = fresh(f"{site.name}_{name}", taken)
            renamed.append(f"{name} as {self.subs[name]}")
        if renamed:
            self.told.append(f"renamed {', '.join(renamed)} (the kernel names them too)")

    def not_captured(self) -> None:
        """No name the callee reads from its file is one the kernel declares again."""
        site = self.site
        own = set(declared(site.body)) | {p.name for p in call_params(site.fn)} | \
            {p.name for p in template_params(site.outer)}
        kernel_names = set(declared(site.entry))
        for n in names_in(site.body):
            if text(n) not in own and text(n) in kernel_names:
                raise Refused(f"it reads {text(n)}, a name the kernel declares too: inlined, "
                              "it would read the kernel's", n)


def _pointer_value(p: CallParam) -> bool:
    """Whether ``p`` is declared as a pointer (``const float* x``), which a local of its
    declaration can hold; not a reference or an array (``float a[]``)."""
    d = p.declarator
    while d.type in ("pointer_declarator", "parenthesized_declarator"):
        if d.type == "pointer_declarator":
            return True
        d = d.named_children[0]
    return False


def _names_outside(site: Site) -> set[str]:
    """Names the file uses outside the callee (a macro's text included), and the callee's
    own where it stays in the file: a ``#define`` of a template parameter must not change
    them."""
    spans = [] if site.kept() else [site.outer, *site.prototypes()]
    names = {text(n) for n in names_in(site.root) if not any(inside(n, s) for s in spans)}
    for n in walk(site.root):
        if n.type == "preproc_arg":
            names |= set(re.findall(r"[A-Za-z_]\w*", text(n)))
    return names
