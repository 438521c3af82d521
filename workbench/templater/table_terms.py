"""Per-entry terms of a loop over a small table: what a per-block table may hold (TABLE).

A per-element kernel that sums over a small table (ions, bodies, splats) evaluates, per
element and per table entry, sub-expressions that depend only on the entry: ``sig * sig``,
the cutoff shift ``lj(RCUT * RCUT, sig, eps)``, ``1.0f / w``. :mod:`.table_emit` computes
them once per block into ``__shared__`` arrays. This module decides, on the parse, which
expressions are per entry: they read only the loop counter, the entry's locals (declared
in the loop body from per-entry values, never reassigned), read-only tables (a file-scope
``__constant__`` / ``__device__`` array, or a pointer parameter the kernel never writes
through), object-like constant macros, scalar parameters the kernel never assigns, literals
and pure calls (:mod:`.purity`) of such values. A term is kept when it is a ``float`` or a
``double`` (the table holds that type: the same value) and costs work per pair: it calls a function, divides, or does two or
more arithmetic operations (a single multiply of two loads is cheaper than the shared load
that would replace it); an expression of constants alone is left to the compiler unless it
calls a function (``yukawa(RCUT)``, which the compiler does not fold).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, int_value, strip, text, walk, write_target
from workbench.templater.item_state import declarator_name, statements
from workbench.templater.plan import Plan
from workbench.templater.purity import FLOAT_CALLS, constant_macros, pure_calls
from workbench.templater.vector import Illegal

_ARITH = ("+", "-", "*", "/")
_INT_TYPES = ("int", "unsigned", "long", "short", "size_t", "char", "bool")
_FLOAT_NUMBER = re.compile(r"^[\d.]+(?:[eE][+-]?\d+)?[fF]$")


@dataclass(frozen=True)
class Table:
    """A read-only array a loop reads per entry: its name and, for a file-scope array,
    its element count (None: a pointer parameter, of no extent the parse knows)."""

    name: str
    extent: int | None
    element: str  # the element type as written (``float``, ``Ion``)


@dataclass
class EntryScope:
    """What the loop body at hand may read per entry."""

    counter: str
    locals: dict[str, Node]  # entry local -> its declaration (top level of the loop body)
    local_types: dict[str, str]  # entry local -> its type as written (``*`` for pointers)
    tables: dict[str, Table]
    scalars: frozenset[str]  # scalar kernel parameters never assigned
    macros: frozenset[str]  # constant macros and the file's constexpr / const scalars
    pure: frozenset[str]
    ints: dict[str, int]  # the file's integer constants


def file_tables(plan: Plan) -> dict[str, Table]:
    """File-scope ``__constant__`` / ``__device__`` arrays of constant extent (one
    dimension), and every pointer parameter of the kernel, by name."""
    out: dict[str, Table] = {}
    for decl in plan.source.tree.root_node.named_children:
        if decl.type != "declaration" or not any(
                text(c) in ("__constant__", "__device__") for c in decl.children):
            continue
        element = text(decl.child_by_field_name("type"))
        for each in decl.children_by_field_name("declarator"):
            d = each.child_by_field_name("declarator") if each.type == "init_declarator" \
                else each
            if d is None or d.type != "array_declarator":
                continue
            inner = d.child_by_field_name("declarator")
            size = const_int(d.child_by_field_name("size"))
            if inner is not None and inner.type == "identifier" and size is not None:
                out[text(inner)] = Table(text(inner), size, element)
    for p in plan.kernel.pointer_params:
        out.setdefault(p.name, Table(p.name, None, p.base_type))
    return out


def const_int(node: Node | None, names: Mapping[str, int] | None = None) -> int | None:
    """An integer constant expression of literals, integer macros and ``names`` (the
    file's integer constants: ``NSRC * 6``, ``kSplats``)."""
    if node is None:
        return None
    value = int_value(node)
    if value is None and strip(node).type == "identifier":
        value = (names or {}).get(text(strip(node)))
    if value is not None:
        return value
    parts = binary(node)
    if parts is None or parts[1] not in ("*", "+", "-"):
        return None
    left, right = const_int(parts[0], names), const_int(parts[2], names)
    if left is None or right is None:
        return None
    return left * right if parts[1] == "*" else left + right if parts[1] == "+" \
        else left - right


def file_constants(plan: Plan) -> dict[str, tuple[str, Node]]:
    """File-scope ``constexpr`` / ``const`` scalars with a value: name -> (type, value)."""
    out: dict[str, tuple[str, Node]] = {}
    for decl in plan.source.tree.root_node.named_children:
        if decl.type != "declaration" or not any(
                text(c) in ("constexpr", "const") for c in decl.children):
            continue
        kind = text(decl.child_by_field_name("type"))
        for d in decl.children_by_field_name("declarator"):
            inner, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if d.type == "init_declarator" and inner is not None and \
                    inner.type == "identifier" and value is not None:
                out[text(inner)] = (kind, value)
    return out


def file_ints(plan: Plan) -> dict[str, int]:
    """The file's integer constants (``constexpr int kSplats = 48;``) by name."""
    out: dict[str, int] = {}
    for name, (kind, value) in file_constants(plan).items():
        number = const_int(value, out) if _named_type(kind) == "int" else None
        if number is not None:
            out[name] = number
    return out


def entry_scope(plan: Plan, loop: Node, counter: str) -> EntryScope:
    """The per-entry names of ``loop``'s body (its entry locals found in order: each
    declared at the body's top level from per-entry values and never assigned in it)."""
    body = loop.child_by_field_name("body")
    assigned = {text(t) for t in _assign_targets(loop) if t.type == "identifier"}
    scalars = frozenset(p.name for p in plan.kernel.params if p.is_scalar and
                        not (plan.facts.defs.get(p.name) or p.name in assigned_in(plan.body)))
    tables = {name: t for name, t in file_tables(plan).items()}
    constants = file_constants(plan)
    scope = EntryScope(counter, {}, {}, tables, scalars,
                       frozenset(constant_macros(plan.source)) | frozenset(constants),
                       pure_calls(plan.source), file_ints(plan))
    for stmt in statements(body) if body is not None and body.type == "compound_statement" \
            else []:
        if stmt.type != "declaration":
            continue
        declarators = stmt.children_by_field_name("declarator")
        if len(declarators) != 1 or declarators[0].type != "init_declarator":
            continue
        d = declarators[0]
        name = declarator_name(d)
        value = d.child_by_field_name("value")
        inner = d.child_by_field_name("declarator")
        if value is None or inner is None or inner.type == "array_declarator" or \
                name in assigned or (name in plan.facts.defs and \
                plan.facts.defs[name].decl != stmt):
            continue  # (declared twice in the kernel: not one definition)
        if per_entry(value, scope):
            kind = text(stmt.child_by_field_name("type"))
            scope.locals[name] = stmt
            scope.local_types[name] = "*" if inner.type == "pointer_declarator" else kind
    return scope


def assigned_in(node: Node) -> set[str]:
    """Identifiers ``node`` assigns or updates."""
    return {text(t) for t in _assign_targets(node) if t.type == "identifier"}


def _assign_targets(node: Node) -> list[Node]:
    return [t for n in walk(node) if (t := write_target(n)) is not None]


def write_targets(node: Node) -> list[Node]:
    """Every memory place ``node`` writes (subscripts, member and pointer targets)."""
    return [t for t in _assign_targets(node) if t.type != "identifier"]


def base_name(node: Node) -> str:
    """The array or pointer a place is in: ``a`` of ``a[i].f``, ``*(p + 1)``, ``p->f``."""
    node = strip(node)
    while node.type in ("subscript_expression", "field_expression", "pointer_expression",
                        "parenthesized_expression", "binary_expression"):
        inner = node.child_by_field_name("argument") or node.child_by_field_name("left") or \
            (node.named_children[0] if node.named_children else None)
        if inner is None:
            break
        node = strip(inner)
    return text(node) if node.type == "identifier" else ""


def per_entry(node: Node, scope: EntryScope) -> bool:
    """``node`` reads nothing but the entry, constants and pure calls of them."""
    node = strip(node)
    kind = node.type
    if kind in ("number_literal", "true", "false", "sizeof_expression"):
        return True
    if kind == "identifier":
        name = text(node)
        # (a table's own name: its base address, the same for the block: `tab + 3 * s`)
        return name == scope.counter or name in scope.locals or name in scope.macros or \
            name in scope.scalars or name in scope.tables
    if kind == "subscript_expression":
        array, index = node.child_by_field_name("argument"), node.child_by_field_name("indices")
        return array is not None and index is not None and _table_base(array, scope) and \
            all(per_entry(i, scope) for i in index.named_children)
    if kind == "field_expression":
        arg = node.child_by_field_name("argument")
        if arg is None:
            return False
        arrow = any(text(c) == "->" for c in node.children)
        return _table_base(arg, scope) if arrow else per_entry(arg, scope)
    if kind == "pointer_expression":
        arg = node.child_by_field_name("argument")
        op = text(node.child_by_field_name("operator"))
        if arg is None:
            return False
        return per_entry(arg, scope) if op == "&" else _table_base(arg, scope)
    if kind == "call_expression":
        callee, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        # `__ldg(&t[s])`: a read of the entry through the read-only cache
        known = text(callee) in scope.pure or text(callee) == "__ldg"
        return callee is not None and known and args is not None and \
            all(per_entry(a, scope) for a in args.named_children if a.type != "comment")
    if kind in ("binary_expression", "unary_expression", "conditional_expression"):
        return all(per_entry(c, scope) for c in node.named_children)
    return False


def _table_base(node: Node, scope: EntryScope) -> bool:
    """``node`` names a read-only table, or an entry local pointing into one."""
    node = strip(node)
    if node.type == "identifier":
        name = text(node)
        return name in scope.tables or scope.local_types.get(name) == "*"
    if node.type in ("subscript_expression", "field_expression"):
        return per_entry(node, scope)
    return False


def value_type(node: Node, scope: EntryScope, plan: Plan) -> str | None:
    """``float``, ``double`` or ``int`` of a per-entry expression, None when unknown."""
    node = strip(node) if node.type != "cast_expression" else node
    kind = node.type
    if kind == "number_literal":
        raw = text(node)
        if _FLOAT_NUMBER.match(raw):
            return "float"
        return "double" if any(c in raw for c in ".eE") and not raw.startswith("0x") \
            else "int"
    if kind == "cast_expression":
        return _named_type(text(node.child_by_field_name("type")))
    if kind == "identifier":
        return _identifier_type(text(node), scope, plan)
    if kind == "subscript_expression":
        array = strip(node.child_by_field_name("argument") or node)
        if array.type == "identifier":
            name = text(array)
            if name in scope.tables:
                return _named_type(scope.tables[name].element)
            decl = scope.locals.get(name)
            return _named_type(text(decl.child_by_field_name("type"))) if decl else None
        return None
    if kind == "field_expression":
        return _field_type(plan, text(node.child_by_field_name("field")))
    if kind == "call_expression":
        args = [a for a in (node.child_by_field_name("arguments") or node).named_children
                if a.type != "comment"]
        if text(node.child_by_field_name("function")) == "__ldg" and len(args) == 1 and \
                args[0].type == "pointer_expression":  # `__ldg(&x)`: the type of x
            return value_type(args[0].child_by_field_name("argument") or args[0], scope, plan)
        return _call_type(plan, text(node.child_by_field_name("function")))
    if kind == "unary_expression":
        arg = node.child_by_field_name("argument")
        op = text(node.child_by_field_name("operator"))
        return value_type(arg, scope, plan) if arg is not None and op in ("-", "+") else "int"
    if kind == "binary_expression":
        op = text(node.child_by_field_name("operator"))
        if op not in _ARITH:
            return "int"
        return _combine([value_type(c, scope, plan) for c in
                         (node.child_by_field_name("left"), node.child_by_field_name("right"))
                         if c is not None])
    if kind == "conditional_expression":
        return _combine([value_type(c, scope, plan) for c in
                         (node.child_by_field_name("consequence"),
                          node.child_by_field_name("alternative")) if c is not None])
    return None


def _combine(types: list[str | None]) -> str | None:
    if any(t is None for t in types):
        return None
    for wide in ("double", "float"):
        if wide in types:
            return wide
    return "int"


def _named_type(written: str) -> str | None:
    words = written.replace("const", "").split()
    if words == ["float"]:
        return "float"
    if words == ["double"]:
        return "double"
    return "int" if words and all(w in _INT_TYPES for w in words) else None


def _identifier_type(name: str, scope: EntryScope, plan: Plan) -> str | None:
    if name == scope.counter:
        return "int"
    if name in scope.locals:
        return _named_type(scope.local_types[name])
    if name in scope.scalars:
        return _named_type(plan.kernel.param(name).base_type)
    if name in scope.macros:
        declared = file_constants(plan).get(name)
        return _named_type(declared[0]) if declared else _macro_type(plan, name)
    return None


def _macro_type(plan: Plan, name: str, depth: int = 0) -> str | None:
    if depth > 8:  # macros naming each other in a cycle
        return None
    for node in walk(plan.source.tree.root_node):
        if node.type == "preproc_def" and text(node.child_by_field_name("name")) == name:
            body = text(node.child_by_field_name("value"))
            numbers = re.findall(r"(?<![\w.])[\d.]+(?:[eE][+-]?\d+)?[fF]?", body)
            words = [w for w in re.findall(r"[A-Za-z_]\w*", re.sub(
                r"(?<![\w.])[\d.]+(?:[eE][+-]?\d+)?[fF]?", " ", body)) if w != name]
            types: list[str | None] = [
                "float" if n[-1] in "fF" else "double" if any(c in n for c in ".eE") else "int"
                for n in numbers]
            types += [_macro_type(plan, w, depth + 1) for w in words]
            return _combine(types) if types else None
    return None


def _field_type(plan: Plan, field: str) -> str | None:
    """The type of every struct field of that name in the file (one type, else None)."""
    found = set()
    for n in walk(plan.source.tree.root_node):
        if n.type == "field_declaration":
            for d in n.children_by_field_name("declarator"):
                if declarator_name(d) == field:
                    found.add(_named_type(text(n.child_by_field_name("type")))
                              if d.type == "field_identifier" else None)
    return found.pop() if len(found) == 1 else None


def _call_type(plan: Plan, callee: str) -> str | None:
    fn = plan.source.function_definitions().get(callee)
    if fn is not None:
        return _named_type(text(fn.child_by_field_name("type")))
    if callee in FLOAT_CALLS:
        return "float" if callee.endswith("f") else None
    return None


def costly(node: Node, scope: EntryScope) -> bool:
    """Worth a table slot: a call, a division, or two arithmetic operations, on the entry
    (an expression of constants only when it calls a function: the compiler folds the rest),
    or a load from a table in global memory (a pointer parameter: the same address for the
    whole warp, through L1, where a shared load is shorter; a ``__constant__`` entry is
    already a broadcast from the constant cache)."""
    if global_load(node, scope):
        return True
    inner = list(walk(node))
    has_call = any(n.type == "call_expression" for n in inner)
    ops = [text(n.child_by_field_name("operator")) for n in inner
           if n.type == "binary_expression"]
    on_entry = any(n.type == "identifier" and (text(n) == scope.counter or text(n) in
                                               scope.locals or text(n) in scope.tables)
                   for n in inner)
    if not on_entry:
        return has_call
    return has_call or "/" in ops or sum(op in _ARITH for op in ops) >= 2


def hoistable_terms(body: Node, scope: EntryScope, plan: Plan) -> list[Node]:
    """The maximal per-entry, float- or double-valued, costly expressions of ``body``, in
    order."""
    out: list[Node] = []

    def visit(node: Node) -> None:
        if node.type == "declaration":
            for d in node.children_by_field_name("declarator"):
                value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                if value is not None:
                    visit(value)
            return
        if node.is_named and (_expression(node) or global_load(node, scope)) and \
                per_entry(node, scope) and costly(node, scope) and \
                value_type(node, scope, plan) in ("float", "double") and \
                _divisions_safe(node, scope, plan):
            out.append(node)
            return
        for c in node.named_children:
            visit(c)

    visit(body)
    return out


def global_load(node: Node, scope: EntryScope) -> bool:
    """``t[...]`` or ``t[...].f`` of a pointer-parameter table, read (not written)."""
    parent = node.parent
    if parent is not None and (
            parent.type in ("update_expression", "pointer_expression", "field_expression") or
            (parent.type == "assignment_expression" and
             parent.child_by_field_name("left") == node)):
        return False  # written, its address taken, or part of a member read
    place = strip(node)
    if place.type == "field_expression" and not any(text(c) == "->" for c in place.children):
        place = strip(place.child_by_field_name("argument") or place)
    if place.type != "subscript_expression":
        return False
    base = strip(place.child_by_field_name("argument") or place)
    table = scope.tables.get(text(base)) if base.type == "identifier" else None
    return table is not None and table.extent is None


def _divisions_safe(node: Node, scope: EntryScope, plan: Plan) -> bool:
    """Every integer ``/`` or ``%`` in ``node`` divides by a nonzero constant (the table is
    filled for every entry, also those the loop as written may not have reached there)."""
    for n in walk(node):
        if n.type == "binary_expression" and \
                text(n.child_by_field_name("operator")) in ("/", "%") and \
                value_type(n, scope, plan) not in ("float", "double") and \
                not int_value(n.child_by_field_name("right")):
            return False
    return True


def _expression(node: Node) -> bool:
    parent = node.parent
    if parent is not None and parent.type in ("assignment_expression", "update_expression") \
            and (parent.child_by_field_name("left") == node or
                 parent.child_by_field_name("argument") == node):
        return False  # a place written, not a value
    return node.type in ("binary_expression", "call_expression", "parenthesized_expression",
                         "unary_expression", "conditional_expression")


def stride_of(index: Node, counter: str) -> int | None:
    """K of an index ``counter``, ``K * counter`` or ``K * counter + c`` (0 <= c < K)."""
    node = strip(index)
    if node.type == "identifier":
        return 1 if text(node) == counter else None
    parts = binary(node)
    if parts is None:
        return None
    left, op, right = parts
    if op == "*":
        for a, b in ((left, right), (right, left)):
            if text(strip(a)) == counter and (k := int_value(b)) is not None and k > 0:
                return k
        return None
    if op == "+":
        for a, b in ((left, right), (right, left)):
            k = stride_of(a, counter)
            c = int_value(b)
            if k is not None and c is not None and 0 <= c < k:
                return k
    return None


def table_reads(nodes: list[Node], scope: EntryScope) -> list[tuple[str, Node | None]]:
    """(table, index) of every subscript of a table in ``nodes`` (through entry pointers:
    ``ion[5]`` with ``ion = &ions[6 * s]`` reads ``ions`` at ``6 * s``), and (table, None)
    for every other use of a table's name (``tab + 3 * s``: an index not known)."""
    out: list[tuple[str, Node | None]] = []
    seen: set[int] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        for n in walk(node):
            if n.type == "identifier" and text(n) in scope.locals and \
                    id(scope.locals[text(n)]) not in seen:
                seen.add(id(scope.locals[text(n)]))
                pending.append(scope.locals[text(n)])
            if n.type == "subscript_expression":
                array = strip(n.child_by_field_name("argument") or n)
                index = n.child_by_field_name("indices")
                if array.type == "identifier" and text(array) in scope.tables and \
                        index is not None and index.named_children:
                    out.append((text(array), index.named_children[0]))
            elif n.type == "identifier" and text(n) in scope.tables and not (
                    n.parent is not None and n.parent.type == "subscript_expression" and
                    n.parent.child_by_field_name("argument") == n):
                out.append((text(n), None))
    return out


def capacity(length: Node, reads: list[tuple[str, Node | None]], scope: EntryScope) -> int:
    """Entries the per-block table must hold: the loop's length when a compile-time
    constant, else the entries every table the terms read can hold (its extent over its
    stride per entry); refused when neither bounds it."""
    value = const_int(length, scope.ints)
    if value is not None:
        return value
    bounds = []
    for name, index in reads:
        table = scope.tables[name]
        stride = stride_of(index, scope.counter) if index is not None else None
        if table.extent is not None and stride is not None:
            bounds.append(table.extent // stride)
    if not bounds:
        raise Illegal(f"the loop's length `{text(length)}` is a run-time value and no table "
                      "it reads has a compile-time extent: the per-block table is not "
                      "bounded", length)
    return min(bounds)
