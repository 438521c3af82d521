"""Recognising a per-row prefix scan on the parse, or refusing it with the line.

The family (:mod:`.scan` says what is lifted): one block per row (``blockIdx.x``) of
``B`` threads (a literal launch block, a multiple of 32) walks the row in chunks (a loop
around the body) or takes a row that fits the block (no loop); each element is loaded from
a kernel array by one *element expression* ``E`` (the user's load: ``xr[c]``,
``expf(x[base + c0 + t]) * scale``, kept as written) under a guard ``column < N``, and one
store writes the scanned value of each column. Which algorithm combines the elements, how
the carry between chunks is kept (a register, a shared word, a shuffle) and whether the
scan is inclusive or exclusive are not read from the text: the block is run on symbols
(:mod:`.scan_sim`) at the written block size for rows of 1, 7 and 2B + 5 elements (one
partial chunk, fewer than a warp, three chunks the last partial), and every column stored
must hold exactly the elements up to it (inclusive) or before it (exclusive), each once,
combined by one associative operator (``+``, ``*``, ``max``/``fmaxf``, ``min``/``fminf``)
with only its identity mixed in.

What the template keeps is then substituted into its own loop: in ``E``, in the store's
target and in ``N`` the thread index becomes the column ``wb_col``, the chunk loop's
variable its first value, and the chunk's locals their definitions; each global index of
``E`` and of the store must then be the row's first element plus ``wb_col`` (checked on the
substituted text at columns far past the written block, where only ``+ - *`` may reach the
column). The statements before the scan (row pointers, the row index) are kept as written.

``recognise(plan, warp=True)`` reads a warp a row instead (:mod:`.warp_scan`): the 32 lanes of
one warp run, the lane (``threadIdx.x % 32``, ``& 31`` or a local of it) is the column, and
threadIdx.x may be read elsewhere only in the warp index (``/ 32``, ``>> 5``), the same for
the row's lanes; the launch is the warp family's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.templater.analysis import (
    _CONSTANTS,
    builtin,
    int_expr_value,
    strip,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, render
from workbench.templater.rules import literal
from workbench.templater.scan_sim import _NAMED, OPERATORS, Block, Part, Ptr, identity_of

#: The element types a scan is regenerated for (shuffles move them whole).
SCALARS = ("float", "double", "int", "unsigned", "unsigned int", "long long",
           "unsigned long long")
_COLUMN = "wb_col"
#: Columns the substituted indices are evaluated at (far past any written block).
_FAR = (1, 2, 3, 5, 31, 32, 33, 255, 1000, 4099, 65537, 1000003)
_AFFINE = ("parenthesized_expression", "cast_expression", "binary_expression",
           "unary_expression", "subscript_argument_list")


@dataclass(frozen=True)
class RowScan:
    """A per-row scan as the analysis read it: the parts the template keeps, as text."""

    threads: int  # the block as written
    prologue: tuple[str, ...]  # statements kept before the scan (blockDim.x written out)
    element: str  # E with the column as ``wb_col``
    target: str  # the store's left side with the column as ``wb_col``
    length: str  # N: the row's element count
    scalar: str  # the scanned values' C type
    op: str  # "+", "*", "max", "min"
    spelling: str  # the operator as the kernel wrote it ("+", "fmaxf", "max", ...)
    identity: str
    inclusive: bool
    anchor: Node  # the chunk loop (or the store): the line findings name
    kept: tuple[Node, ...] = ()  # the top-level statements the prologue keeps


class _Reader:
    def __init__(self, plan: Plan, warp: bool = False) -> None:
        self.plan = plan
        self.data = plan.source.data
        # a warp a row: its 32 lanes run, the lane is the column, the warp index is a row's
        self.warp = warp
        self.threads = 32 if warp else literal(plan.block[0]) if plan.block else None
        self.block_index = 0 if warp else 1
        self.kept: list[Node] = []
        self.pointers = {p.name for p in plan.kernel.params if p.is_pointer} | {
            d.name for d in plan.facts.defs.values() if d.is_pointer and not d.is_shared}
        self.top = [c for c in plan.body.named_children if c.type != "comment"]
        self.loop: Node | None = None
        self.loop_var: str | None = None
        self.first: str | None = None
        self.chunk_locals: dict[str, Node] = {}
        self.bumped: set[str] = set()
        self.anchor: Node | None = None

    # -- what the kernel reads and writes -------------------------------------------------

    def _is_global(self, node: Node) -> bool:
        if node.type == "subscript_expression":
            base = strip(node.child_by_field_name("argument") or node)
            return base.type == "identifier" and text(base) in self.pointers
        if node.type == "pointer_expression" and \
                text(node.child_by_field_name("operator")) == "*":
            arg = node.child_by_field_name("argument")
            return arg is not None and any(n.type == "identifier" and text(n) in self.pointers
                                           for n in walk(arg))
        return False

    def stores(self) -> list[Node]:
        return [n for n in walk(self.plan.body) if n.type == "assignment_expression" and
                (left := n.child_by_field_name("left")) is not None and self._is_global(left)]

    def elements(self) -> list[Node]:
        """The element expressions: each global read grown over the arithmetic, casts and
        calls around it whose other operands are pure (parameters, constants, literals,
        never-assigned locals of pure values)."""
        lefts = {(s.child_by_field_name("left") or s).start_byte for s in self.stores()}
        out: dict[tuple[int, int], Node] = {}
        for n in walk(self.plan.body):
            if not self._is_global(n) or n.start_byte in lefts or self._in_read(n):
                continue
            node = n
            while node.parent is not None and self._grows(node.parent, node):
                node = node.parent
            out[(node.start_byte, node.end_byte)] = node
        return list(out.values())

    def _in_read(self, node: Node) -> bool:
        """Whether ``node`` lies in another global read (an index that loads: a gather)."""
        up = node.parent
        while up is not None and up != self.plan.body:
            if self._is_global(up):
                return True
            up = up.parent
        return False

    def _grows(self, parent: Node, child: Node) -> bool:
        kind = parent.type
        if kind in ("parenthesized_expression", "cast_expression", "argument_list"):
            return True
        if kind == "unary_expression":
            return text(parent.child_by_field_name("operator")) == "-"
        if kind == "binary_expression":
            op = text(parent.child_by_field_name("operator"))
            other = [c for c in (parent.child_by_field_name("left"),
                                 parent.child_by_field_name("right")) if c is not None and
                     c.start_byte != child.start_byte]
            return op in ("+", "-", "*", "/") and all(self._pure(o) for o in other)
        if kind == "call_expression":
            name = text(parent.child_by_field_name("function"))
            args = parent.child_by_field_name("arguments")
            return name not in OPERATORS and not name.startswith("__shfl") and \
                args is not None and all(self._pure(a) or self._is_global(strip(a)) or
                                         any(self._is_global(m) for m in walk(a))
                                         for a in args.named_children)
        return False

    def _pure(self, node: Node, depth: int = 0) -> bool:
        for n in walk(node):
            if n.type == "call_expression" and text(n.child_by_field_name("function")) \
                    .startswith("__shfl"):
                return False
            if self._is_global(n):
                continue
            if n.type != "identifier" or (n.parent is not None and
                                          n.parent.type == "call_expression" and
                                          n.parent.child_by_field_name("function") == n):
                continue
            d = self.plan.facts.defs.get(text(n))
            if d is None:
                continue  # a parameter, a constant or a built-in
            if d.is_shared or d.assigned or d.value is None or depth > 4 or \
                    not self._pure(d.value, depth + 1) or any(
                        self._is_global(m) for m in walk(d.value)):
                return False
        return True

    # -- the shape ------------------------------------------------------------------------

    def shape(self, store: Node) -> None:
        """The chunk loop around the store (a top-level ``for``; a warp's also inside blocks
        and ``if``s without ``else``: ``if (row < rows) { .. }``), or none."""
        outer = store
        while outer.parent is not None and outer.parent != self.plan.body:
            outer = outer.parent
        if self.warp:
            outer = _guarded_loop(self.plan.body, store) or outer
        if outer.type != "for_statement":
            return
        init = outer.child_by_field_name("initializer")
        if init is None or init.type != "declaration":
            raise Refused(f"`{_first_line(outer)}`: a chunk loop whose counter is not "
                          "declared in it", outer)
        decl = init.child_by_field_name("declarator")
        value = decl.child_by_field_name("value") if decl is not None else None
        if decl is None or value is None or decl.type != "init_declarator":
            raise Refused(f"`{_first_line(outer)}`: a chunk loop without a first value", outer)
        self.loop, self.loop_var = outer, text(decl.child_by_field_name("declarator"))
        self.first = text(value)
        body = outer.child_by_field_name("body")
        for n in walk(body) if body is not None else []:
            if n.type == "declaration" and n.parent == body:
                for d in n.children_by_field_name("declarator"):
                    v = d.child_by_field_name("value") if d.type == "init_declarator" else None
                    name = text(d.child_by_field_name("declarator") or d)
                    assigned = self.plan.facts.defs.get(name)
                    if v is not None and assigned is not None and not assigned.assigned:
                        self.chunk_locals[name] = v
        self.bumped = self._bumped(body) if body is not None else set()

    def _bumped(self, body: Node) -> set[str]:
        """The row pointers the chunk loop bumps a chunk at a time (``xr += CHUNK;``): locals
        declared before the loop whose only assignments are ``p += E`` (``E`` a constant)
        among the loop body's last statements, after every other statement that reads them.
        In each chunk they hold their value at the chunk's start, so the first chunk reads
        them as declared; the runs on symbols check that the bumps walk the row a chunk at
        a time (each column loaded and stored once)."""
        stmts = [c for c in body.named_children if c.type != "comment"]
        tail: list[Node] = []
        for stmt in reversed(stmts):
            if _bump(stmt) is None:
                break
            tail.append(stmt)
        found = {_bump(stmt) for stmt in tail}
        out = set()
        for name in filter(None, found):
            d = self.plan.facts.defs.get(name)
            assigns = [n for n in walk(self.plan.body) if n.type in (
                "assignment_expression", "update_expression") and text(
                    n.child_by_field_name("left") or n.child_by_field_name("argument") or n)
                == name]
            if d is None or not d.is_pointer or d.is_shared or self.loop is None or \
                    _inside(d.decl, self.loop) or any(a.parent not in tail for a in assigns):
                continue
            out.add(name)
        return out

    def column_text(self, node: Node, depth: int = 0) -> str:
        """``node`` with the column as ``wb_col`` (the thread index), the loop counter its
        first value and the chunk's locals their definitions."""
        def sub(n: Node) -> str | None:
            if self.warp:
                return self._warp_sub(node, n, depth)
            if builtin(n, "threadIdx") == "x" or (
                    n.type == "identifier" and text(n) in self.plan.facts.thread_alias["x"]):
                return _COLUMN
            if builtin(n, "blockDim") == "x":
                return str(self.threads)
            if builtin(n, "threadIdx") is not None or builtin(n, "blockDim") is not None:
                raise Refused(f"`{_short(node)}` reads `{text(n)}`", n)
            if n.type != "identifier":
                return None
            return self._local(node, n, depth)
        return render(self.data, node, sub)

    def _warp_sub(self, node: Node, n: Node, depth: int) -> str | None:
        """A warp a row: the lane (``threadIdx.x % 32``, ``& 31``, or a local of it) is the
        column; threadIdx.x elsewhere only in the warp index (``/ 32``, ``>> 5``)."""
        if self._lane(n):
            return _COLUMN
        if n.type == "binary_expression" and self._warp_uniform(n) and \
                self.plan.facts.mentions_thread(n, "x"):
            return text(n)  # the warp index, the same for the row's lanes
        if self.plan.facts.is_thread(n, "x"):
            raise Refused(f"`{_short(node)}` reads `{text(n)}` other than as the lane", n)
        if builtin(n, "blockDim") is not None or builtin(n, "threadIdx") is not None:
            raise Refused(f"`{_short(node)}` reads `{text(n)}`", n)
        return self._local(node, n, depth) if n.type == "identifier" else None

    def _lane(self, n: Node) -> bool:
        """``n`` is the lane: ``threadIdx.x % 32`` (``& 31``) or a never-assigned local of it."""
        n = strip(n)
        if n.type == "identifier":
            d = self.plan.facts.defs.get(text(n))
            return d is not None and not d.assigned and d.value is not None and \
                self._lane(d.value)
        if n.type == "cast_expression":
            value = n.child_by_field_name("value")
            return value is not None and self._lane(value)
        if n.type != "binary_expression":
            return False
        op = text(n.child_by_field_name("operator"))
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        return left is not None and right is not None and \
            self.plan.facts.is_thread(left, "x") and \
            (op, int_expr_value(right)) in (("%", 32), ("&", 31))

    def _warp_uniform(self, node: Node) -> bool:
        """Every threadIdx.x ``node`` reads sits in the warp index ``threadIdx.x / 32``."""
        for m in walk(node):
            if not (self.plan.facts.is_thread(m, "x") or builtin(m, "threadIdx") is not None):
                continue
            up = m.parent
            while up is not None and up.type == "parenthesized_expression":
                up = up.parent
            left = up.child_by_field_name("left") if up is not None else None
            if up is None or left is None or strip(left).start_byte != m.start_byte or (
                    text(up.child_by_field_name("operator")),
                    int_expr_value(up.child_by_field_name("right"))) not in (("/", 32),
                                                                              (">>", 5)):
                return False
        return True

    def _local(self, node: Node, n: Node, depth: int) -> str | None:
        """A name of ``node`` as the column text reads it (the loop counter its first value,
        a chunk local its definition), or refused where it changes within the scan."""
        name = text(n)
        if name == self.loop_var:
            return f"({self.first})"
        if name in self.chunk_locals and depth < 6:
            return f"({self.column_text(self.chunk_locals[name], depth + 1)})"
        d = self.plan.facts.defs.get(name)
        if d is not None and ((d.assigned and name not in self.bumped) or d.is_shared or (
                self.loop is not None and _inside(d.decl, self.loop))):
            raise Refused(f"`{_short(node)}` reads `{name}`, which changes within the "
                          "scan", n)
        if d is not None and any(self.plan.facts.is_thread(m, "x") or builtin(
                m, "threadIdx") is not None for m in walk(d.value or d.decl)) and not (
                self.warp and self._warp_uniform(d.value or d.decl)):
            raise Refused(f"`{_short(node)}` reads `{name}`, which depends on the thread "
                          "other than as its index", n)
        return None

    def guard_length(self, element: Node) -> str:
        """N of the guard ``column < N`` the element is loaded under."""
        child, node = element, element.parent
        while node is not None and node != self.plan.body:
            cond = None
            if node.type == "conditional_expression" and \
                    node.child_by_field_name("consequence") == child:
                cond = node.child_by_field_name("condition")
            elif node.type == "if_statement" and \
                    node.child_by_field_name("consequence") == child:
                cond = node.child_by_field_name("condition")
                if cond is not None and cond.type == "condition_clause":
                    cond = cond.child_by_field_name("value") or cond.named_children[0]
            if cond is not None:
                return self._length(strip(cond))
            child, node = node, node.parent
        raise Refused(f"`{_short(element)}` is loaded with no guard `column < N`: the "
                      "analysis cannot tell the row's length", element)

    def _length(self, cond: Node) -> str:
        op = text(cond.child_by_field_name("operator")) if cond.type == "binary_expression" \
            else ""
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        if left is None or right is None or op not in ("<", ">", "<=", ">="):
            raise Refused(f"`{_short(cond)}`: a load guard that is not `column < N`", cond)
        column, bound = (left, right) if op in ("<", "<=") else (right, left)
        length = self.column_text(bound)
        if self.column_text(column) == text(column) or _COLUMN in length:
            raise Refused(f"`{_short(cond)}`: a load guard that is not `column < N`", cond)
        return length if op in ("<", ">") else f"({length}) + 1"

    def prologue(self, elements: list[Node]) -> tuple[list[str], Node]:
        """The statements before the scan, kept (``__shared__`` declarations and the names
        the scan assigns dropped), and the scan's first statement: the first that is not a
        declaration free of shared memory, loads and barriers, nor an early return of the
        whole block."""
        kept: list[str] = []
        shared = {d.name for d in self.plan.facts.defs.values() if d.is_shared}
        for s in self.top:
            body = text(s)
            if any(_inside(e, s) for e in elements) or "__syncthreads" in body or \
                    "__shfl" in body or (s.type != "declaration" and s.type != "if_statement"):
                return kept, s
            names = [text(n) for n in walk(s) if n.type == "identifier"]
            if s.type == "declaration":
                declared = [d for d in (self.plan.facts.defs.get(n) for n in names)
                            if d is not None and d.decl == s]
                if any(d.is_shared for d in declared):
                    continue
                if any(n in shared for n in names):
                    return kept, s
                if not any(d.assigned and d.name not in self.bumped for d in declared):
                    kept.append(self._written_out(s))
                    self.kept.append(s)
            elif text(s.child_by_field_name("consequence")).strip(" {};") == "return" and \
                    not self.plan.facts.mentions_thread(s, "x") and \
                    not any(n in shared for n in names):
                kept.append(self._written_out(s))
                self.kept.append(s)
            else:
                return kept, s
        raise Refused("the kernel ends before its scan")

    def _written_out(self, node: Node) -> str:
        return render(self.data, node, lambda n: str(self.threads)
                      if builtin(n, "blockDim") == "x" else None)


def recognise(plan: Plan, warp: bool = False) -> RowScan:
    """The row scan ``plan``'s kernel computes, or :class:`Refused` with the reason;
    ``warp``: each warp scans a row (its lanes the columns; the launch is the warp
    family's), else each block."""
    r = _Reader(plan, warp)
    if r.threads is None or (not warp and (len(plan.block) != 1 or len(plan.grid) != 1)):
        raise Refused(f"the launch ({plan.grid} x {plan.block}) is not one literal 1-D block "
                      "per row")
    if r.threads % 32:
        raise Refused(f"the block of {r.threads} threads is not whole warps")
    stores = r.stores()
    if len({text(s.child_by_field_name("left")) for s in stores}) != 1:
        raise Refused(f"expected one store of the scanned value, found {len(stores)}",
                      stores[1] if len(stores) > 1 else None)
    store = stores[0]
    r.shape(store)
    elements = r.elements()
    if not elements:
        raise Refused("no element is loaded from a kernel array", store)
    spelled = {r.column_text(e) for e in elements}
    if len(spelled) != 1:
        raise Refused(f"the element is loaded in {len(spelled)} spellings ("
                      f"{', '.join(sorted(spelled))})", elements[1])
    lengths = {r.guard_length(e) for e in elements}
    if len(lengths) != 1:
        raise Refused(f"the loads are guarded by different lengths ({sorted(lengths)})",
                      elements[0])
    length = lengths.pop()
    prologue, start = r.prologue(elements)
    if warp and r.loop is not None:  # the row's values declared in the blocks around it
        guarded = guarded_values(plan, r.loop)
        prologue += [text(d) for d in guarded]
        r.kept += guarded
    target = r.column_text(store.child_by_field_name("left") or store)
    scalar = _scalar(plan, elements[0])
    run = _simulate(plan, r, elements, length)
    element = spelled.pop()
    _check_columns(plan, r, prologue, element, target, length, run)
    return RowScan(threads=r.threads, prologue=tuple(prologue), element=element,
                   target=target, length=length, scalar=scalar, op=run.op,
                   spelling=run.spelling, identity=_identity(plan, start, run.op, scalar),
                   inclusive=run.inclusive, anchor=r.loop or store, kept=tuple(r.kept))


@dataclass(frozen=True)
class _Run:
    """What the runs on symbols found: the operator, the mode, and the last run's row."""

    op: str
    spelling: str
    inclusive: bool
    length: int  # the last run's row length
    first_read: int  # its row's first element's offset in the loaded array
    first_store: int  # and in the stored one


def _scalar(plan: Plan, element: Node) -> str:
    """The C type the element is first kept in (its shared array or register)."""
    node = element
    while node.parent is not None and node.type not in ("assignment_expression",
                                                         "init_declarator"):
        node = node.parent
    target = node.child_by_field_name("left") if node.type == "assignment_expression" else \
        node.child_by_field_name("declarator")
    while target is not None and target.type in ("subscript_expression", "array_declarator",
                                                 "pointer_declarator"):
        target = target.child_by_field_name("argument") or \
            target.child_by_field_name("declarator")
    d = plan.facts.defs.get(text(target)) if target is not None else None
    kind = d.decl.child_by_field_name("type") if d is not None else None
    name = " ".join(text(kind).split()) if kind is not None else ""
    if name not in SCALARS:
        raise Refused(f"`{_short(element)}` is kept as `{name or text(target)}`, not one of "
                      f"{', '.join(SCALARS)}", element)
    return name


def _args(plan: Plan, length: str, n: int) -> dict[str, Any]:
    """Every kernel argument's value for a run: pointers at offset 0, the row length ``n``
    (where it is a scalar argument), 3 for other integers (the rows), 1.5 for floats."""
    out: dict[str, Any] = {}
    for p in plan.kernel.params:
        if p.is_pointer:
            out[p.name] = Ptr(p.name, 0)
        else:
            out[p.name] = 1.5 if p.base_type in ("float", "double") else 3
    name = length.strip("() ")
    if name in out and not plan.kernel.param(name).is_pointer:
        out[name] = n
    elif _constant(length) is None:
        raise Refused(f"the row length `{length}` is neither a kernel scalar nor a constant")
    return out


def _constant(expr: str) -> int | None:
    node = parse_cuda(f"int wb_probe = {expr};", "probe.cu").tree.root_node
    values = [n for n in walk(node) if n.type == "init_declarator"]
    return int_expr_value(values[0].child_by_field_name("value")) if values else None


def _simulate(plan: Plan, r: _Reader, elements: list[Node], length: str) -> _Run:
    """Run the block at rows of 1, 7 and 2B + 5 elements (B with no chunk loop)."""
    assert r.threads is not None
    fixed = _constant(length)
    sizes = [fixed] if fixed is not None else \
        [1, 7, 2 * r.threads + 5 if r.loop is not None else r.threads]
    keys = {(e.start_byte, e.end_byte) for e in elements}
    constants = dict(_CONSTANTS.get() or {})
    modes: set[bool] = set()
    runs = []
    for n in sizes:
        block = Block(r.threads, r.block_index, 3, _args(plan, length, n), constants, keys)
        block.run(r.top)
        if block.op is None or block.spelling is None:
            raise Refused("no associative operator combines two loaded elements "
                          "(+, *, max/fmaxf, min/fminf)", r.loop)
        inclusive, first_read, first_store = _verify(block, n, r.loop or elements[0])
        modes.add(inclusive)
        runs.append(_Run(block.op, block.spelling, inclusive, n, first_read, first_store))
    if len(modes) != 1:
        raise Refused("some columns hold the inclusive scan, others the exclusive one",
                      r.loop)
    return runs[-1]


def _verify(block: Block, n: int, anchor: Node) -> tuple[bool, int, int]:
    """(inclusive, the row's first loaded offset, its first stored offset) where each of
    the ``n`` columns is stored once with its inclusive or exclusive scan; raises
    otherwise."""
    where = {s.ptr.name for s in block.stores}
    offsets = sorted(s.ptr.offset for s in block.stores)
    if len(where) != 1 or len(offsets) != n or offsets != list(
            range(offsets[0], offsets[0] + n)):
        raise Refused(f"a row of {n} elements is not stored once a column "
                      f"({len(offsets)} stores)", anchor)
    loaded = sorted({p.offset for p, _t in block.loaded})
    if len({p.name for p, _t in block.loaded}) != 1 or loaded != list(
            range(loaded[0], loaded[0] + n)):
        raise Refused(f"a row of {n} elements is not loaded once a column", anchor)
    first, base = loaded[0], offsets[0]
    modes = set()
    assert block.op is not None
    for s in block.stores:
        c, v = s.ptr.offset - base, s.value
        spans = v.spans if isinstance(v, Part) else () if isinstance(v, (int, float)) and \
            identity_of(block.op, v) else None
        if spans == ((first, first + c),):
            modes.add(True)
        elif (c == 0 and spans == ()) or (c > 0 and spans == ((first, first + c - 1),)):
            modes.add(False)
        else:
            raise Refused(f"column {c} of a row of {n} is stored as {_describe(v, first)}, "
                          "not a prefix scan of the row", anchor)
    if len(modes) != 1:
        raise Refused(f"in a row of {n}, some columns hold the inclusive scan, others the "
                      "exclusive one", anchor)
    return modes.pop(), first, base


def _describe(value: Any, first: int) -> str:
    if isinstance(value, Part):
        return "the elements " + ", ".join(f"{a - first}..{b - first}" for a, b in value.spans)
    return repr(value)


def _identity(plan: Plan, start: Node, op: str, scalar: str) -> str:
    """The kernel's own spelling of the operator's identity (a literal or named value in
    the scan that is one, a floating one for a floating scan), else the usual one."""
    floats = scalar in ("float", "double")
    found: list[tuple[bool, str]] = []
    probe = Block(1, 0, 1, {}, {}, set())
    for n in walk(plan.body):
        if n.start_byte < start.start_byte or not (
                n.type == "number_literal" or (n.type == "identifier" and text(n) in _NAMED) or
                (n.type == "unary_expression" and text(n.child_by_field_name("operator")) == "-"
                 and n.named_children and (n.named_children[-1].type == "number_literal" or
                                           text(n.named_children[-1]) in _NAMED))):
            continue
        try:
            value = probe.constant(n)
        except Refused:
            continue
        if isinstance(value, (int, float)) and identity_of(op, value):
            found.append((isinstance(value, float) or text(n) in _NAMED, text(n)))
    preferred = [t for is_float, t in found if is_float == floats] + [t for _f, t in found]
    if preferred and (floats or not any(c in preferred[0] for c in ".eEfF")):
        return f"({scalar})({preferred[0]})"
    if scalar.endswith("long long") and op in ("max", "min"):
        raise Refused(f"a {op} scan of `{scalar}` with no identity spelled in the kernel")
    usual = {"+": "0", "*": "1",
             "max": "-INFINITY" if floats else ("0u" if scalar.startswith("unsigned")
                                                else "(-2147483647 - 1)"),
             "min": "INFINITY" if floats else ("0xffffffffu" if scalar.startswith("unsigned")
                                               else "2147483647")}
    return f"({scalar})({usual[op]})"


def _check_columns(plan: Plan, r: _Reader, prologue: list[str], element: str, target: str,
                   length: str, run: _Run) -> None:
    """Each global index of the substituted element and store is the row's first element
    (as the runs found it) plus ``wb_col``, at columns far past the block, where only
    + - * reach the column."""
    program = "void wb_probe() {\n" + "\n".join(prologue) + \
        f"\n  wb_e = {element};\n  {target} = 0;\n}}\n"
    tree = parse_cuda(program, "probe.cu").tree.root_node
    body = next(n for n in walk(tree) if n.type == "compound_statement")
    statements = [c for c in body.named_children if c.type != "comment"]
    assert r.threads is not None
    block = Block(r.threads, r.block_index, 3, _args(plan, length, run.length),
                  dict(_CONSTANTS.get() or {}), set())
    env = block.prologue_env(statements[:-2])
    for statement, first in ((statements[-2], run.first_read),
                             (statements[-1], run.first_store)):
        reads = [n for n in walk(statement) if n.type == "subscript_expression" or (
            n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "*")]
        for k, read in enumerate(reads):
            _affine(read)
            at = set()
            for col in (0, *_FAR):
                place = block.place(read, {**env, _COLUMN: col})
                if not isinstance(place, Ptr):
                    raise Refused(f"`{_short(read)}` is not an element of a kernel array",
                                  r.anchor)
                at.add(place.offset - col)
            if len(at) != 1 or (k == 0 and at != {first}):
                raise Refused(f"`{_short(read)}` does not address the column's element at "
                              "columns past the written block", r.anchor)


def _affine(read: Node) -> None:
    """Only + - * (and casts) between ``wb_col`` and the read's index."""
    for use in (n for n in walk(read) if n.type == "identifier" and text(n) == _COLUMN):
        up = use.parent
        while up is not None and up != read:
            op = text(up.child_by_field_name("operator"))
            if up.type not in _AFFINE or (
                    up.type == "binary_expression" and op not in ("+", "-", "*")) or (
                    up.type == "unary_expression" and op != "-"):
                raise Refused(f"`{_short(read)}` reaches the column through `{_short(up)}` "
                              "(only + - * are followed)")
            up = up.parent


def _guarded_loop(body: Node, store: Node) -> Node | None:
    """The outermost ``for`` around ``store`` inside nothing but blocks and ``if``s without
    ``else`` below ``body``, or None."""
    found, node = None, store.parent
    while node is not None and node != body:
        if node.type == "for_statement":
            found = node
        elif (found is not None and node.type not in ("compound_statement", "if_statement")) or (
                node.type == "if_statement" and node.child_by_field_name("alternative")):
            found = None
        node = node.parent
    return found


def guarded_values(plan: Plan, loop: Node) -> list[Node]:
    """The declarations before ``loop`` in the blocks around it below the body (top-level
    ones aside) that declare names never assigned: the row's values (``x = in + r * n``)."""
    out: list[Node] = []
    node = loop
    while node.parent is not None and node.parent != plan.body:
        block = node.parent
        if block.type == "compound_statement":
            before = [c for c in block.named_children if c.end_byte <= node.start_byte]
            out = [c for c in before if c.type == "declaration" and (declared := [
                d for d in plan.facts.defs.values() if d.decl == c]) and not any(
                    d.assigned or d.is_shared for d in declared)] + out
        node = block
    return out


def _bump(node: Node | None) -> str | None:
    """``p`` of a statement ``p += E;`` with ``E`` a constant integer, else None."""
    if node is None or node.type != "expression_statement" or node.named_child_count != 1:
        return None
    step = node.named_children[0]
    left, right = step.child_by_field_name("left"), step.child_by_field_name("right")
    if step.type != "assignment_expression" or left is None or left.type != "identifier" or \
            text(step.child_by_field_name("operator")) != "+=" or int_expr_value(right) is None:
        return None
    return text(left)


def _inside(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _first_line(node: Node) -> str:
    return text(node).splitlines()[0].strip()[:60]


def _short(node: Node) -> str:
    return " ".join(text(node).split())[:60]
