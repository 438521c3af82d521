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
  captures are by reference (``&``, ``&x``) or none (``[]``: it copies nothing), its name
  declared once and only called, each as a statement; each kernel name it reads declared
  once, before it;
- a file-scope ``__device__`` function, defined once, not a template, with a non-const
  reference parameter (the caller's state it updates): ``void`` and called only as
  statements, or ending in its one ``return value;`` and called as a value lambda is
  (``const float u = next_unit(state);``: the call its value cast to the declared result
  type); it reads no name the kernel declares (those would be the kernel's inside it);

and in both: parameters named, by value or by reference (no arrays; a reference to an
array, ``float (&t)[16][16]``, where each call passes an array's name), no ``return``,
``goto``, label, preprocessor line, string or lambda in the body, and no local of the body
named like a name the kernel declares outside it (a read could then mean either), but that a
``__device__`` function's local declared once, named like a local of a copy an earlier
round wrote into the kernel (no name of the kernel as written, none of the file), is
written under a fresh name: every mention of it in the helper is that local, the kernel's
names are not the helper's to read (round 31c: a helper written in a later round, inside
another's body, met the locals of its first copy). A parameter whose name an argument or
the caller mentions is bound under a fresh name.

A lambda whose body ends in its one ``return expr;`` (``auto dist2 = [&](int c) { const
float* q = cs + c * 4; ...; return a * a + b * b; };``) is a value: each call's statements
go just before the statement that holds the call, on its line (a statement that is a loop's
or an ``if``'s body becomes a block), parameters and locals under fresh names, and the call
becomes ``(expr)`` (``((T)(expr))`` with a declared result type ``-> T``): the call's body
ran before the rest of its statement could read its value, as it does written there. Where
the statement evaluates more (another such call, ``=``, ``++``, a call not known pure), the
value is kept first in a ``const`` local of its type (declared, or plain from the
expression's names), so nothing runs between the body and its value; a call runs
indeterminately sequenced with the rest of its statement, so running it first is one order
the statement allows. Only a call in an expression statement or in the first value of a
declaration of a block, not under ``?:``, ``&&``, ``||`` or ``,`` (it would run only
sometimes, or after what the statement sequences first), one call a statement a round.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import inside, line, text, tree_root, walk
from workbench.templater.inline_bind import (
    Refused,
    callee_name,
    declarator_name,
    declared,
    declared_types,
    fresh,
    function_name,
    statements,
)
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.inline_lambda_call import value_type
from workbench.templater.point_split import entry_body
from workbench.templater.purity import PURE_CALLS
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
    array: bool = False  # a reference to an array (``float (&t)[N]``): an identifier's only


@dataclass(frozen=True)
class _Body:
    name: str
    kind: str  # "a lambda" or "a __device__ function"
    params: tuple[_Param, ...]
    body: Node  # the compound statement
    definition: Node  # the lambda's declaration or the function's definition
    scope: Node  # where its calls lie
    result: Node | None = None  # a value lambda's returned expression (None: void)
    result_type: str = ""  # its declared result type (`-> T`; "" when deduced)
    renamed: frozenset[str] = frozenset()  # its locals named like the kernel's: fresh names


def expand_bodies(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with the calls of ``entry``'s statement-bodied callables written in
    (see the module doc); unchanged where there are none or the kernel cannot be found."""
    notes: dict[tuple[int, str], Finding] = {}
    lines: dict[str, list[int]] = {}
    first = entry_body(current, entry)
    # the kernel's own names: a later round's clash with any other is with an earlier copy
    written_by = frozenset(declared(first.parent)) if first is not None and \
        first.parent is not None else frozenset()
    for _ in range(_ROUNDS):
        body = entry_body(current, entry)
        if body is None or body.parent is None:
            break
        root = tree_root(body)
        edits: list[tuple[int, int, str]] = []
        found = _candidates(root, body, notes, current, written_by)
        taken = {text(n) for n in walk(root) if n.type == "identifier"}
        types = declared_types(body.parent)
        busy: set[int] = set()  # statements a value call is written before this round
        for c in found.values():
            if any(callee_name(n) in found for n in walk(c.body) if n.type == "call_expression"):
                continue  # its body's calls are written first
            try:
                if c.result is None:
                    sites, waiting = _calls(c), False
                    edits += [(s.start_byte, s.end_byte, _written(c, s, taken)) for s in sites]
                else:
                    sites, waiting = _value_calls(c, found, busy)
                    edits += [e for s in sites for e in
                              _value_written(c, s, taken, _alone(s, found), types)]
                    busy.update(_host_statement(s).start_byte for s in sites)
            except Refused as refused:
                current.note(notes, TRANSFORM, False, f"{c.name} ({c.kind}) is not written into its "
                      f"calls: {refused.reason}", refused.line)
                continue
            lines.setdefault(c.name, []).extend(current.baseline_line(line(s)) for s in sites)
            if waiting:
                continue  # a call waits for a later round: the definition stays
            if c.kind == "a lambda":
                rows = c.definition.end_point[0] - c.definition.start_point[0]
                edits.append((c.definition.start_byte, c.definition.end_byte,
                              f"// {c.name}: written into its calls" + "\n" * rows))
            at = ", ".join(str(k) for k in sorted(set(lines[c.name])))
            current.note(notes, TRANSFORM, True, f"{c.name} ({c.kind}) written into its calls (lines "
                  f"{at}): the analysis reads its statements", line(c.definition))
        if not edits:
            break
        current = current.edited(edits)
    return replace(current, findings=(*current.findings, *notes.values()))


def _candidates(root: Node, body: Node, notes: dict[tuple[int, str], Finding],
                current: InlinedSource, kernel_names: frozenset[str]) -> dict[str, _Body]:
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
        if name in called and name not in names and _updater(fn):
            try:
                out[name] = _helper(name, fn, root, body, names, kernel_names)
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
        if p.type == "parameter_declaration" and d is not None and _array_reference(d):
            # `float (&t)[16][16]`: the caller's array itself (bound to an identifier only)
            out.append(_Param(text(name), p, True, array=True))
            continue
        if p.type != "parameter_declaration" or name is None or d is None or \
                any(n.type in ("array_declarator", "function_declarator") for n in walk(d)):
            raise Refused(f"the parameter `{text(p)}` is not a named value or reference", p)
        constant = "const" in text(p.child_by_field_name("type")).split() or \
            any(c.type == "type_qualifier" and text(c) == "const" for c in p.children)
        out.append(_Param(text(name), p, d.type == "reference_declarator" and not constant))
    return tuple(out)


def _array_reference(d: Node) -> bool:
    """``d`` declares a reference to an array, ``(&t)[N][M]``: array declarators around a
    parenthesized reference to a name."""
    while d.type == "array_declarator" and d.child_by_field_name("declarator") is not None:
        d = d.child_by_field_name("declarator")  # type: ignore[assignment]
    if d.type != "parenthesized_declarator" or d.named_child_count != 1:
        return False
    inner = d.named_children[0]
    return inner.type == "reference_declarator" and inner.named_child_count == 1 and \
        inner.named_children[0].type == "identifier" and d != inner


def _updater(fn: Node) -> bool:
    """A ``__device__`` (not ``__global__``) function with a non-const reference parameter:
    the caller's state it updates (``void``, or a value it returns as well)."""
    kinds = {c.type for c in fn.children}
    if fn.type != "function_definition" or "__device__" not in kinds or "__global__" in kinds:
        return False
    try:
        return any(p.reference for p in _parameters(fn.child_by_field_name("declarator") or fn))
    except Refused:
        return True  # a candidate: the refusal is noted with its parameter


def _checked_body(block: Node, params: tuple[_Param, ...], outside: set[str],
                  result: Node | None = None, kept: frozenset[str] | None = None
                  ) -> frozenset[str]:
    """Refuses a body the block at a call would not run as the call does (``result``: a
    value lambda's final ``return``, its one allowed); with ``kept`` (a file-scope helper's:
    the names the file and the kernel as written declare) the locals named like a name an
    earlier written copy declares in the kernel, declared once in the body and not in
    ``kept``, whose every mention is then that local: written under fresh names."""
    for n in walk(block):
        if n.type in _BARRED and n.type != "comment" and n != result:
            raise Refused(f"its body holds {_BARRED[n.type]} (`{' '.join(text(n).split())[:40]}`)",
                          n)
        if n.type.startswith("preproc"):
            raise Refused("its body holds a preprocessor line", n)
    locals_ = declared(block)
    own = set(locals_) - {p.name for p in params}
    clash = sorted(own & outside)
    if kept is not None:
        renamed = frozenset(n for n in clash if len(locals_[n]) == 1 and n not in kept)
        clash = [n for n in clash if n not in renamed]
    else:
        renamed = frozenset()
    if clash:
        raise Refused(f"its body declares {clash[0]}, a name the kernel declares too: a read "
                      "of it could mean either", block)
    return renamed


def _lambda(name: str, lam: Node, decl: Node, names: dict[str, list[Node]]) -> _Body:
    spec = lam.child_by_field_name("captures")
    items = [" ".join(text(c).split()) for c in (spec.named_children if spec else [])]
    # `[]` copies nothing: its body reads only its parameters and what the file declares
    if any(i != "&" and not re.fullmatch(r"&\s*\w+", i) for i in items):
        raise Refused(f"it captures `{', '.join(items)}`, not by reference only: a copy is "
                      "taken where it is defined", lam)
    if len(names.get(name, [])) != 1:
        raise Refused(f"the name {name} is declared more than once in the kernel", lam)
    declarator = lam.child_by_field_name("declarator")
    params = _parameters(declarator) if declarator is not None else ()
    block = lam.child_by_field_name("body")
    assert block is not None
    last = statements(block)[-1] if statements(block) else None
    final = last if last is not None and last.type == "return_statement" and \
        last.named_children else None
    trailing = [c for c in (declarator.children if declarator is not None else [])
                if c.type == "trailing_return_type"]
    if trailing and final is None:
        raise Refused("it declares a result type but ends in no `return` of a value", lam)
    inner = {n.start_byte for d in declared(lam).values() for n in d}
    outside = {k for k, v in names.items() if any(n.start_byte not in inner for n in v)}
    _checked_body(block, params, outside, final)
    local = set(declared(lam))
    for n in walk(block):
        if n.type == "identifier" and text(n) in outside and text(n) not in local:
            found = names[text(n)]
            if len(found) != 1 or found[0].start_byte > decl.start_byte:
                raise Refused(f"it reads {text(n)}, which the kernel declares "
                              f"{'more than once' if len(found) != 1 else 'after it'}: a call "
                              "may not read the variable the lambda reads", n)
    scope = decl.parent if decl.parent is not None else decl
    result_type = " ".join(text(trailing[0]).removeprefix("->").split()) if trailing else ""
    return _Body(name, "a lambda", params, block, decl, scope,
                 final.named_children[0] if final is not None else None, result_type)


def _helper(name: str, fn: Node, root: Node, body: Node,
            names: dict[str, list[Node]], kernel_names: frozenset[str]) -> _Body:
    if sum(1 for f in root.children if function_name(f) == name) != 1:
        raise Refused(f"{name} is defined more than once", fn)
    params = _parameters(fn.child_by_field_name("declarator") or fn)
    block = fn.child_by_field_name("body")
    assert block is not None
    result_type = " ".join(text(fn.child_by_field_name("type")).split())
    final = None
    if result_type != "void":  # a value too: its body ends in its one `return value;`
        last = statements(block)[-1] if statements(block) else None
        if last is None or last.type != "return_statement" or not last.named_children:
            raise Refused(f"it returns a {result_type} but does not end in `return value;`",
                          fn)
        final = last
    # the kernel's own names and the file's stay refused: only an earlier copy's locals
    kept = kernel_names | {d for top in root.named_children if top.type == "declaration"
                           for d in declared(top)}
    renamed = _checked_body(block, params, set(names), final, kept)
    own = set(declared(block)) | {p.name for p in params}
    for n in walk(block):
        if n.type == "identifier" and text(n) not in own and text(n) in names:
            raise Refused(f"it reads {text(n)}, a name the kernel declares too: written into "
                          "the kernel it would read the kernel's", n)
    return _Body(name, "a __device__ function", params, block, fn, body,
                 final.named_children[0] if final is not None else None,
                 result_type if final is not None else "", renamed)


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
    renames = {name: fresh(f"wb_{name}", taken) for name in sorted(c.renamed)}
    bindings = _bindings(c, statement.named_children[0], renames, taken)
    inner = " ".join(_spelled(s, renames) for s in statements(c.body))
    return "{ " + " ".join([*bindings, inner]) + " }"


def _bindings(c: _Body, call: Node, renames: dict[str, str], taken: set[str]) -> list[str]:
    """The declarations binding ``c``'s parameters to ``call``'s arguments; a parameter
    named in ``renames`` (or one an argument mentions) is declared under that name."""
    arguments = call.child_by_field_name("arguments")
    args = [a for a in (arguments.named_children if arguments else []) if a.type != "comment"]
    if len(args) != len(c.params):
        raise Refused(f"`{text(call)}` passes {len(args)} argument(s) for "
                      f"{len(c.params)} parameter(s)", call)
    mentioned = {text(n) for a in args for n in walk(a) if n.type == "identifier"}
    # a parameter named like a name of the caller would shadow it in the block: a later pass
    # reading the caller's name (the items' rewrite) would read the parameter as it
    mentioned |= {text(n) for n in walk(c.scope)
                  if n.type == "identifier" and not inside(n, c.definition)}
    bindings: list[str] = []
    for p, arg in zip(c.params, args, strict=True):
        if p.reference and arg.type == "identifier":
            renames[p.name] = text(arg)  # the caller's variable itself
            continue
        if p.array:
            raise Refused(f"`{text(call)}` passes `{text(arg)}` for the array reference "
                          f"`{p.name}`: no array's name", call)
        if p.name in mentioned and p.name not in renames:
            renames[p.name] = fresh(f"wb_{p.name}", taken)
        bindings.append(f"{_spelled(p.declaration, renames)} = {_one_line(text(arg))};")
    return bindings


def _value_calls(c: _Body, found: dict[str, _Body], busy: set[int]) -> tuple[list[Node], bool]:
    """The calls of the value lambda ``c`` to write this round, and whether any waits for
    a later one (its arguments call a lambda still to write, or its statement takes
    another call this round); refused where its name is used other than as a call."""
    ready: list[Node] = []
    waiting = False
    for n in walk(c.scope):
        if n.type != "identifier" or text(n) != c.name or n.start_byte < c.definition.end_byte:
            continue
        call = n.parent
        if call is None or call.type != "call_expression" or \
                call.child_by_field_name("function") != n:
            raise Refused(f"`{' '.join(text(call or n).split())[:80]}` uses {c.name} other "
                          "than as a call", n)
        at = _host_statement(call).start_byte
        nested = any(callee_name(m) in found for m in walk(call) if m != call and
                     m.type == "call_expression")
        if nested or at in busy or any(_host_statement(r).start_byte == at for r in ready):
            waiting = True
            continue
        ready.append(call)
    return ready, waiting


def _host_statement(call: Node) -> Node:
    """The statement of a block that the value ``call``'s body can run just before: an
    expression statement, or a declaration whose first value holds the call; refused where
    the call runs only sometimes or after what its statement sequences first."""
    n, below = call.parent, call
    while n is not None and n.type not in ("expression_statement", "declaration"):
        if n.type in ("conditional_expression", "comma_expression", "lambda_expression") or \
                (n.type == "binary_expression" and
                 text(n.child_by_field_name("operator")) in ("&&", "||")):
            raise Refused(f"the call `{_one_line(text(call))}` is inside "
                          f"`{_one_line(text(n))[:60]}`: it runs only sometimes or after "
                          "another part of it", call)
        if n.type.endswith(("_statement", "_clause")) or n.type == "for_range_loop":
            header = n.parent if n.type.endswith("_clause") and n.parent is not None else n
            raise Refused(f"the call `{_one_line(text(call))}` is in the header of "
                          f"`{_one_line(text(header))[:40]}`: its statements have no place "
                          "before each evaluation", call)
        below, n = n, n.parent
    if n is None or n.parent is None:
        raise Refused(f"the call `{_one_line(text(call))}` is in no statement", call)
    values = n.children_by_field_name("declarator")
    if n.type == "declaration" and (n.parent.type != "compound_statement" or values[0] != below):
        raise Refused(f"the call `{_one_line(text(call))}` is in `{_one_line(text(n))[:60]}`, "
                      "not the first value of a declaration of a block", call)
    return n


def _alone(call: Node, found: dict[str, _Body]) -> bool:
    """Whether nothing else in ``call``'s statement calls a lambda still to write or writes
    (``=`` below the statement's own, ``++``, a call not known pure): then no other
    evaluation can come between the call's statements and its value read in place."""
    statement = _host_statement(call)
    top = statement.named_children[0] if statement.type == "expression_statement" else None
    for n in walk(statement):
        if inside(n, call) or n == top:
            continue
        if n.type in ("assignment_expression", "update_expression") or (
                n.type == "call_expression" and (callee_name(n) in found or
                                                 callee_name(n) not in PURE_CALLS)):
            return False
    return True


def _value_written(c: _Body, call: Node, taken: set[str], alone: bool,
                   types: dict[str, str]) -> list[tuple[int, int, str]]:
    """The edits writing the value ``call`` of ``c``: its statements before its host
    statement (a block where that is a loop's or an ``if``'s body), the call its value:
    read in place where the call is ``alone`` in its statement, else a ``const`` local of
    the result's type written after them (refused where no type is declared or plain)."""
    assert c.result is not None
    statement = _host_statement(call)
    renames = {name: fresh(f"wb_{name}", taken) for name in
               [*(p.name for p in c.params), *declared(c.body)]}
    bindings = _bindings(c, call, renames, taken)
    inner = [_spelled(s, renames) for s in statements(c.body)[:-1]]
    value = f"({_spelled(c.result, renames)})"
    if c.result_type:
        value = f"(({c.result_type}){value})"
    if not alone:
        kind = c.result_type or value_type(c.result, types)
        if kind is None:
            raise Refused(f"`{_one_line(text(_host_statement(call)))[:60]}` evaluates more "
                          f"than the call, and the type of `{_one_line(text(c.result))[:40]}` "
                          "(its value, kept in a local before the statement) is not plain",
                          call)
        result = fresh(f"wb_{c.name}", taken)
        inner.append(f"const {kind} {result} = {value};")
        value = result
    before = " ".join([*bindings, *inner]) + " "
    edits = [(call.start_byte, call.end_byte, value)]
    if statement.parent is not None and statement.parent.type == "compound_statement":
        return [*edits, (statement.start_byte, statement.start_byte, before)]
    return [*edits, (statement.start_byte, statement.start_byte, "{ " + before),
            (statement.end_byte, statement.end_byte, " }")]


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
