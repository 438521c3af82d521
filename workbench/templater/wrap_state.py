"""What a thread's items would share when :mod:`.wrap` runs the statements from the index on
once per item: every name those statements assign that is declared before them (a
parameter advanced to the item's row, ``a += i * K``; a pointer stepped, ``out += i``; a
local counted on, ``int base = 0; ... base += i``; ``n++``).

Rule: in the kernel as written each block ran those statements from the state the names had
at the index's declaration (the statements before it read no ``blockIdx`` of the wrapped
dimension, so every block reached the same state). Each item therefore starts from that
state: a name of it the items assign is kept before the items' loop and given back at each
item's start. That is exact only where the name is a plain variable of the kernel (a
parameter, or a local declared at the top of the body, not an array nor a reference) whose
address is never taken (nothing else reaches it); anything else the items assign is
refused with the line. A local declared without a value and never assigned before the
index (``float acc; ... acc = ...``) needs nothing: its value there is indeterminate as
written, so no item may read it before assigning it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import KernelSignature
from workbench.templater.analysis import text, walk
from workbench.templater.item_state import assigned_names, declarator_name, declarators
from workbench.templater.vector import Illegal


@dataclass(frozen=True)
class ItemState:
    """Names the items assign that live before them: ``kept`` (given back per item)."""

    kept: tuple[str, ...]

    def keep(self, tag: str) -> str:
        """The statements before the items' loop that save each kept name (``wb_at_<tag>_``
        locals: a nested loop's tag differs from its enclosing loop's)."""
        return "".join(f"auto wb_at_{tag}_{v} = {v};  // each item starts from it\n  "
                       for v in self.kept)

    def give(self, tag: str) -> str:
        """The statements at each item's start that give each kept name its saved value."""
        return "".join(f"{v} = wb_at_{tag}_{v};\n  " for v in self.kept)


def _plain(declarator: Node) -> bool:
    """The declarator declares a scalar or a pointer (no array, no reference)."""
    return not any(c.type in ("array_declarator", "reference_declarator")
                   for c in walk(declarator))


def _first_assignment(stmts: Sequence[Node], name: str,
                      arrays: frozenset[str]) -> Node | None:
    for stmt in stmts:
        for n in walk(stmt):
            if n.type in ("assignment_expression", "update_expression") and \
                    name in assigned_names(n, arrays):
                return n
    return None


def _address_taken(body: Node, name: str) -> Node | None:
    for n in walk(body):
        if n.type == "pointer_expression" and text(n).startswith("&"):
            arg = n.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier" and text(arg) == name:
                return n
    return None


def item_state(body: Node, kernel: KernelSignature, prefix: Sequence[Node],
               rest: Sequence[Node]) -> ItemState:
    """The names the items ``rest`` assign that are declared before them, each checked
    kept-able (module rule); raises :class:`Illegal` with the first assignment otherwise."""
    inner = declarators(rest)
    top = {name: d for stmt in prefix if stmt.type == "declaration"
           for d in stmt.children_by_field_name("declarator")
           for name in (declarator_name(d),)}
    nested = set(declarators(prefix)) - set(top)
    arrays = frozenset(n for n, d in top.items() if not _plain(d))
    params = {p.name for p in kernel.params}
    assigned = sorted(set().union(*(assigned_names(s, arrays) for s in rest)) - set(inner))
    kept = []
    for name in assigned:
        where = _first_assignment(rest, name, arrays)
        if name in nested or (name not in top and name not in params):
            raise Illegal(f"`{text(where)[:60] if where else name}` assigns `{name}`, declared "
                          "outside the kernel's top-level statements: the thread's items "
                          "would share it", where)
        if name in top and not _plain(top[name]):
            raise Illegal(f"`{text(where)[:60] if where else name}` assigns the array or "
                          f"reference `{name}` declared before the index: the thread's items "
                          "would share it", where)
        taken = _address_taken(body, name)
        if taken is not None:
            raise Illegal(f"`{text(taken)}` takes the address of `{name}`, which the items "
                          "assign: giving it back per item would not reach what the "
                          "address points to", taken)
        if name in top and top[name].type != "init_declarator" and \
                _first_assignment(prefix, name, arrays) is None:
            continue  # indeterminate at the index as written: no item may read it first
        kept.append(name)
    return ItemState(tuple(kept))
