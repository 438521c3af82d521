"""What :mod:`.tile_batch` reads of a kernel that is a CTA per fixed-size data tile: the
launch block's literal tile shape, the kernel's barrier-separated phases, its top-level
locals (which a later phase can recompute), its ``__shared__`` arrays (tiles and tables
every tile fills alike) and the legality checks the lift needs (the module docstring of
:mod:`.tile_batch` lists them). Each check raises :class:`.regtile.Refused` with the line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    calls,
    declared_name,
    identifiers,
    int_expr_value,
    is_barrier,
    mentions,
    strip,
    text,
    walk,
    write_target,
    writer,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.rules import literal
from workbench.templater.tile_batch_rows import TileExit, held_type

#: Bytes of a shared array's element type.
ELEM_BYTES = {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "double": 8,
              "char": 1, "short": 2, "__half": 2, "half": 2}
BARRIER = "__syncthreads"


@dataclass(frozen=True)
class SharedArray:
    """A ``__shared__`` array: its declaration, extents (values and nodes), element bytes."""

    name: str
    decl: Node
    extents: tuple[int, ...]
    sizes: tuple[Node, ...]
    elem: int
    fills: tuple[Node, ...]  # a table's fills (every tile's alike); () for a tile

    @property
    def table(self) -> bool:
        return bool(self.fills)


@dataclass(frozen=True)
class TileLocal:
    """A top-level local: the phase that declares it, whether its value is recomputable
    (declared with a value reading no memory, never assigned) and whether it reads the
    block index."""

    name: str
    stmt: Node
    phase: int
    derived: bool
    by_block: bool


def tile_shape(plan: Plan) -> tuple[int, int] | None:
    """(NX, NY) of a 2-D literal block with a barrier whose CTA reads a shared array across a
    tile extent (a loop ``k < NX``, ``k < NY`` or ``k < blockDim.x`` indexing it by ``k``)."""
    if len(plan.block) != 2 or len(plan.grid) != 2 or BARRIER not in calls(plan.body):
        return None
    nx, ny = literal(plan.block[0]), literal(plan.block[1])
    if nx is None or ny is None:
        return None
    shared = {d.name for d in plan.facts.defs.values() if d.is_shared}
    for loop in walk(plan.body):
        if loop.type != "for_statement":
            continue
        cond = loop.child_by_field_name("condition")
        init = loop.child_by_field_name("initializer")
        if cond is None or init is None or init.type != "declaration" or \
                cond.type != "binary_expression" or \
                text(cond.child_by_field_name("operator")) != "<":
            continue
        var, bound = declared_name(init)[0], cond.child_by_field_name("right")
        extent = {"x": nx, "y": ny}.get(builtin(bound, "blockDim") or "") if bound else None
        if text(strip(cond.child_by_field_name("left") or cond)) != var or \
                (extent or int_expr_value(bound)) not in (nx, ny):
            continue
        if any(n.type == "subscript_expression" and _base(n) in shared and
               mentions(n, {var}) for n in walk(loop)):
            return nx, ny
    return None


def _base(subscript: Node) -> str:
    return text(_name_node(subscript))


def chain(ident: Node) -> tuple[Node, list[Node]]:
    """The outermost subscript over ``ident`` and its index expressions in source order."""
    node, indices = ident, []
    while node.parent is not None and node.parent.type == "subscript_expression" and \
            node.parent.child_by_field_name("argument") == node:
        node = node.parent
        args = node.child_by_field_name("indices")
        assert args is not None
        indices.append(args.named_children[0])
    return node, indices


def top_statements(plan: Plan) -> list[Node]:
    return [c for c in plan.body.children if c.type not in ("{", "}")]


def split_phases(stmts: Sequence[Node]) -> list[list[Node]]:
    out: list[list[Node]] = [[]]
    for s in stmts:
        if is_barrier(s):
            out.append([])
        else:
            out[-1].append(s)
    return out


def check_shape(plan: Plan, exit_: TileExit | None) -> None:
    """Raise with the line where the virtual CTAs could not be the kernel as written (a
    tile's early exit, ``exit_``, is read by :mod:`.tile_batch_rows`)."""
    for n in walk(plan.body):
        if n.type == "return_statement" and (exit_ is None or n != exit_.leave):
            raise Refused("a `return`: a thread that leaves would skip the tiles its CTA "
                           "runs after this one, and their barriers", n)
        name = text(n.child_by_field_name("function")) if n.type == "call_expression" else ""
        if name == BARRIER and (n.parent is None or n.parent.parent != plan.body):
            raise Refused("a barrier inside a statement (each must be a top-level statement "
                           "for the tiles of a CTA to meet it alike)", n)
        if name.startswith("atomic") or name.startswith("__threadfence"):
            raise Refused(f"`{name}`: a CTA's clamped duplicate of the last tile would "
                           "repeat it", n)
        if builtin(n, "gridDim") or builtin(n, "threadIdx") == "z" or \
                builtin(n, "blockIdx") == "z" or builtin(n, "blockDim") == "z":
            raise Refused(f"`{text(n)}`: the tiles' grid is modelled in x and y only", n)
    for d in plan.facts.defs.values():
        if d.is_pointer and not d.is_shared:
            raise Refused(f"the pointer local `{d.name}` (what it writes is not followed)",
                           d.decl)
    known = set(plan.facts.defs) | {p.name for p in plan.kernel.params if p.is_pointer}
    for n in walk(plan.body):
        if n.type == "subscript_expression" and writer(n) is not None and \
                _base(n) not in known:
            raise Refused(f"`{text(n)}` writes `{_base(n)}`, no argument, local or shared "
                           "array of the kernel (a clamped duplicate tile would write it "
                           "again)", n)
    for p in plan.kernel.params:
        if not p.is_pointer:
            continue
        bare = [u for u in plan.uses(p.name) if not chain(u)[1]]
        if bare:
            raise Refused(f"`{text(bare[0].parent)}` reads the argument `{p.name}` other than "
                           f"through a subscript (what it writes is not followed)", bare[0])
        uses = [chain(u)[0] for u in plan.uses(p.name)]
        writes = [(u, w) for u in uses if (w := writer(u)) is not None]
        if (writes and len(writes) < len(uses)) or any(
                text(w.child_by_field_name("operator")) != "=" for _u, w in writes):
            raise Refused(f"`{p.name}` is read and written: a CTA's clamped duplicate of "
                           "the last tile would read what it stored", writes[0][0])


def shared_arrays(plan: Plan, phases: list[list[Node]], locals_: dict[str, TileLocal]) -> list[SharedArray]:
    top = {s.start_byte for s in top_statements(plan)}
    out = []
    for d in plan.facts.defs.values():
        if not d.is_shared:
            continue
        if d.decl.start_byte not in top:
            raise Refused(f"the shared array `{d.name}` is declared inside a statement", d.decl)
        sizes: list[Node] = []
        node = d.decl.child_by_field_name("declarator")
        while node is not None and node.type == "array_declarator":
            size = node.child_by_field_name("size")
            if size is None:
                raise Refused(f"`{d.name}` has an open extent", d.decl)
            sizes.insert(0, size)
            node = node.child_by_field_name("declarator")
        values = [int_expr_value(s) for s in sizes]
        kind = text(d.decl.child_by_field_name("type"))
        if not 1 <= len(sizes) <= 2 or None in values or kind not in ELEM_BYTES:
            raise Refused(f"the shared array `{d.name}` is not a 1-D or 2-D array of a "
                           "scalar type with constant extents", d.decl)
        for use in plan.uses(d.name):
            if use.parent == node or (use.parent is not None and \
                    use.parent.type == "array_declarator"):
                continue
            if len(chain(use)[1]) != len(sizes):
                raise Refused(f"`{text(use.parent)}` reads the shared array `{d.name}` other "
                               "than through a whole subscript", use)
        out.append(SharedArray(d.name, d.decl, tuple(v for v in values if v is not None),
                          tuple(sizes), ELEM_BYTES[kind],
                          _table(plan, d.name, phases, locals_)))
    return out


def _phase_of(node: Node, phases: list[list[Node]]) -> int:
    return next(k for k, stmts in enumerate(phases)
                if any(s.start_byte <= node.start_byte < s.end_byte for s in stmts))


def _table(plan: Plan, name: str, phases: list[list[Node]],
           locals_: dict[str, TileLocal]) -> tuple[Node, ...]:
    """The top-level statements filling ``name`` where every tile fills it alike (each
    statement writing ``name`` reads no memory, no block index and no local that does, and
    writes nothing else declared outside it) and reads it only in later phases; else ()."""
    accesses = [chain(u)[0] for u in plan.uses(name) if chain(u)[1]]
    writes = [a for a in accesses if writer(a) is not None]
    fills = tuple(sorted({_top(plan, w) for w in writes}, key=lambda f: f.start_byte))
    if not writes or not all(fills_alike(f, name, locals_) for f in fills):
        return ()
    last_fill = max(_phase_of(f, phases) for f in fills)
    reads = [a for a in accesses if writer(a) is None]
    return fills if all(_phase_of(r, phases) > last_fill for r in reads) else ()


def _top(plan: Plan, node: Node) -> Node:
    """The top-level statement of the body holding ``node``."""
    while node.parent is not None and node.parent != plan.body:
        node = node.parent
    return node


def fills_alike(stmt: Node, name: str, locals_: dict[str, TileLocal]) -> bool:
    """Whether ``stmt`` does the same in every tile: no declaration, reads only ``name``'s
    entries it writes (no other subscript, no dereference, no block index, no local reading
    either) and assigns only ``name``'s entries and names it declares inside it."""
    if stmt.type == "declaration":  # its names would outlive the fill's own loop
        return False
    own = {declarator_of(d) for n in walk(stmt) if n.type == "declaration"
           for d in n.children_by_field_name("declarator")}
    for n in walk(stmt):
        if n.type == "subscript_expression" and (_base(n) != name or writer(chain(
                _name_node(n))[0]) is None):
            return False
        if builtin(n, "blockIdx") or n.type == "pointer_expression":
            return False
        if n.type == "identifier" and text(n) in locals_ and text(n) not in own:
            loc = locals_[text(n)]
            if not loc.derived or loc.by_block:
                return False
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is None or (target.type == "identifier" and text(target) not in own) or \
                    (target.type != "identifier" and _base(target) != name):
                return False
    return True


def _name_node(subscript: Node) -> Node:
    node = subscript
    while node.type == "subscript_expression":
        node = node.child_by_field_name("argument")  # type: ignore[assignment]
    return node


def tile_locals(plan: Plan, phases: list[list[Node]]) -> dict[str, TileLocal]:
    # a local array written by its elements (``s[k & 1] += ..``) is assigned too: its
    # declaration's value is not what a later phase reads
    assigned = {text(t) if t.type == "identifier" else _base(t) for n in walk(plan.body)
                if (t := write_target(n)) is not None and
                t.type in ("identifier", "subscript_expression")}
    out: dict[str, TileLocal] = {}
    for k, stmts in enumerate(phases):
        for s in stmts:
            if s.type != "declaration" or any(text(c) == "__shared__" for c in s.children):
                continue
            declarators = s.children_by_field_name("declarator")
            names = [declarator_of(d) for d in declarators]
            values = [d.child_by_field_name("value") if d.type == "init_declarator" else None
                      for d in declarators]
            reads = [n for v in values if v is not None for n in walk(v)]
            derived = None not in values and not (set(names) & assigned) and not any(
                n.type in ("subscript_expression", "pointer_expression") or
                (n.type == "identifier" and text(n) in out and not out[text(n)].derived)
                for n in reads)
            by_block = any(builtin(n, "blockIdx") or (n.type == "identifier" and
                           text(n) in out and out[text(n)].by_block) for n in reads)
            for name in names:
                out[name] = TileLocal(name, s, k, derived, bool(by_block))
    return out


def declarator_of(declarator: Node) -> str:
    node: Node | None = declarator
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    return text(node)


def carried_locals(phases: list[list[Node]], locals_: dict[str, TileLocal], fills: set[Node],
             exit_: TileExit | None) -> tuple[list[list[Node]], dict[str, str]]:
    """Each phase's rows' declarations of earlier phases that it reads, with those their
    values read (recomputed there; a table's fill recomputes its own, :func:`_fill_locals`;
    a later phase's rows read the tile exit's test too), and the locals no value recomputes
    that a later phase reads: one register a row (name -> element type,
    :mod:`.tile_batch_rows`); raises where one cannot be."""
    out: list[list[Node]] = []
    held: dict[str, str] = {}
    for k, stmts in enumerate(phases):
        need: list[Node] = []
        todo = [n for s in stmts if s not in fills for n in walk(s) if n.type == "identifier"]
        if exit_ is not None and k:
            todo += list(identifiers(exit_.test))
        while todo:
            n = todo.pop()
            loc = locals_.get(text(n))
            if loc is None or loc.phase >= k or loc.stmt in need or loc.name in held:
                continue
            if not loc.derived:
                held[loc.name] = held_type(loc.stmt, loc.name)
                continue
            need.append(loc.stmt)
            todo += [i for i in walk(loc.stmt) if i.type == "identifier"]
        out.append(sorted(need, key=lambda s: s.start_byte))
    return out, held
