"""The vector family's bound where it is no size the launch knows (:mod:`.vector`): a chunk's
end ``end = min(begin + CHUNK, n)``, a run's length ``len = min(K, n - b * K)``.

With the scalar tail (:mod:`.vector_tail`) the bound need not be a multiple of VEC, so its
value need not be known: the vectorized region reads it at every item (the loop's test, the
item's whole-vector test, its tail) where the kernel as written reads it at every element,
and those reads agree only where it is the same value throughout the region. That holds
where the bound is an expression of literals, names and pure calls (``min``, ``max``) whose
names are kernel scalars, macros or locals that no statement of the region, and no part of
the loop's header, assigns, steps, takes the address of or passes to a call that is not
pure math (a local whose address is taken, or that a reference binds, anywhere in the
kernel may change through it), that does not read the region's own
variable, and that reads no memory the region may write (an array read in the bound and
written by the region, or either not ``__restrict__`` where the region writes memory).
:func:`steady_bound` raises :class:`~.vector_access.Illegal` naming the first read that
breaks this, with its line.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import text, walk, write_target
from workbench.templater.inline_bind import addressed
from workbench.templater.plan import Plan
from workbench.templater.purity import PURE_CALLS, is_callee
from workbench.templater.vector_access import Illegal, local_root, root_array
from workbench.templater.vector_regions import Region

#: Expression nodes a steady bound may hold besides names, literals and pure calls.
_VALUES = ("identifier", "number_literal", "binary_expression", "unary_expression",
           "parenthesized_expression", "cast_expression", "conditional_expression",
           "type_descriptor", "primitive_type", "sized_type_specifier", "type_identifier",
           "qualified_identifier", "namespace_identifier", "argument_list",
           "call_expression", "field_identifier", "field_expression", "char_literal",
           "true", "false", "abstract_pointer_declarator", "type_qualifier",
           "subscript_expression", "subscript_argument_list", "pointer_expression")


def steady_bound(plan: Plan, region: Region) -> None:
    """Raise Illegal unless ``region.bound`` is the same value throughout the region (the
    module doc)."""
    bound = region.bound
    scope = [*region.statements(), *_header(region)]
    written = _written_names(scope)
    memory = _written_memory(plan, region)
    for n in walk(bound):
        if not n.is_named:
            continue
        if n.type not in _VALUES:
            raise Illegal(f"the bound `{text(bound)}` holds `{text(n)[:40]}` ({n.type}), "
                          f"not a value the analysis reads as steady", bound)
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn not in PURE_CALLS:
                raise Illegal(f"the bound `{text(bound)}` calls {fn}, which may not return "
                              f"the same value at every element", bound)
        if n.type in ("subscript_expression", "pointer_expression") or (
                n.type == "field_expression" and
                text(n.child_by_field_name("operator")) == "->"):
            _steady_memory(plan, bound, n, memory)
        if n.type != "identifier" or is_callee(n):
            continue
        name = text(n)
        if name == region.var:
            raise Illegal(f"the bound `{text(bound)}` reads the region's variable {name}: it "
                          f"changes at every element", bound)
        if name in written:
            at = written[name]
            raise Illegal(f"the bound `{text(bound)}` reads {name}, which `{text(at)[:50]}` "
                          f"writes inside the loop: the bound must be the same value "
                          "throughout the region", at)
        if name in plan.facts.defs and addressed(plan.body, name):
            raise Illegal(f"the bound `{text(bound)}` reads {name}, whose address the kernel "
                          "takes: a pointer may change it inside the loop", bound)
        alias = _bound_by_reference(plan, name)
        if alias is not None:
            raise Illegal(f"the bound `{text(bound)}` reads {name}, which `{text(alias)[:50]}` "
                          "binds to a reference: it may change through it inside the loop",
                          alias)
        passed = _passed(scope, name)
        if passed is not None:
            raise Illegal(f"the bound `{text(bound)}` reads {name}, which the loop passes to "
                          f"`{text(passed)[:50]}` (a function that may take it by "
                          "reference)", passed)


def _bound_by_reference(plan: Plan, name: str) -> Node | None:
    """A declaration of the kernel that binds ``name`` to a reference (``int& e = end;``)."""
    for n in walk(plan.body):
        if n.type != "init_declarator":
            continue
        target, value = n.child_by_field_name("declarator"), n.child_by_field_name("value")
        if target is not None and target.type == "reference_declarator" and \
                value is not None and any(m.type == "identifier" and text(m) == name
                                          for m in walk(value)):
            return n.parent if n.parent is not None else n
    return None


def _passed(scope: list[Node], name: str) -> Node | None:
    """A call in ``scope``, not of a pure function, with ``name`` an argument of its own."""
    for s in scope:
        for n in walk(s):
            if n.type != "call_expression" or \
                    text(n.child_by_field_name("function")) in PURE_CALLS:
                continue
            args = n.child_by_field_name("arguments")
            if args is not None and any(a.type == "identifier" and text(a) == name
                                        for a in args.named_children):
                return n
    return None


def _header(region: Region) -> list[Node]:
    """A loop's initializer, condition and update (a for statement's parts besides its body)."""
    if not region.loop or region.node.type != "for_statement":
        return []
    parts = (region.node.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    return [p for p in parts if p is not None]


def _written_names(scope: list[Node]) -> dict[str, Node]:
    """The locals (and scalars) ``scope`` assigns or steps, each with its first write."""
    out: dict[str, Node] = {}
    for s in scope:
        for n in walk(s):
            target = write_target(n)
            root = local_root(target) if target is not None else None
            if root is not None:
                out.setdefault(text(root), n)
            if n.type == "pointer_expression" and \
                    text(n.child_by_field_name("operator")) == "&":
                arg = n.child_by_field_name("argument")
                if arg is not None and arg.type == "identifier":
                    out.setdefault(text(arg), n)
    return out


def _written_memory(plan: Plan, region: Region) -> dict[str, Node]:
    """The arrays (by the kernel pointer they index) the region writes, each with a write."""
    out: dict[str, Node] = {}
    for n in region.walk():
        target = write_target(n)
        if target is None or local_root(target) is not None:
            continue
        base = target.child_by_field_name("argument") if target.type in (
            "subscript_expression", "pointer_expression", "field_expression") else None
        name = text(base) if base is not None else text(target)
        out.setdefault(root_array(plan, name), n)
    return out


def _steady_memory(plan: Plan, bound: Node, read: Node, memory: dict[str, Node]) -> None:
    """A memory read of the bound: the region writes no memory it may alias."""
    if read.type == "pointer_expression" and text(read.child_by_field_name("operator")) != "*":
        return  # &x: an address, no read
    if not memory:
        return
    base = read.child_by_field_name("argument")
    array = root_array(plan, text(base)) if base is not None else text(read)
    if array in memory:
        at = memory[array]
        raise Illegal(f"the bound `{text(bound)}` reads {text(read)}, which the region writes "
                      f"(`{text(at)[:50]}`): the bound must be the same "
                      f"value throughout the region", at)
    restrict = [plan.pointer(a) and plan.kernel.param(a).is_restrict for a in (array, *memory)]
    if not all(restrict):
        raise Illegal(f"the bound `{text(bound)}` reads {text(read)} and the region writes "
                      f"{', '.join(sorted(memory))}, which may alias it (not __restrict__): "
                      f"the bound must be the same value throughout the region", bound)
