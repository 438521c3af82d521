"""Shared-memory k slices for the register tile of a naive product (issue 28).

The register tile of :mod:`.regtile_naive` reads every operand from global memory: a block's
threads each read the row operand's rows they need and the column operand's columns, and
the block's tile of ``THREADS_Y * TM`` by ``THREADS_X * TN`` outputs reads each of them
again from every thread that shares it. Known practice (the tiled GEMM of every textbook):
the loop over k runs in rounds of ``BK``; in each round every thread of the block loads part
of the block's slice of each operand (the tile's rows (columns) by BK) into ``__shared__``
arrays padded by ``PAD`` a row, a barrier, the register tile's inner products over the
slice from shared memory, a barrier. ``BK = 0`` (the default) is the register tile as
before, from global memory, chosen by the preprocessor.

An operand is a read in the loop whose address is affine in the loop's variable with a
base and a k stride that do not depend on the thread, at one output coordinate (row or
column) and values the same for every thread: its slice is that read at each of the tile's
coordinates and each k of the round, evaluated by the loop's own expression (macros,
1-based shifts, column- or row-major all read as written), so the loads read exactly what
the virtual threads read. Slice positions past the guard or past the loop's end are zero
and never summed: each thread runs the round's k in ascending order and stops at the loop's
end, so its sums are the kernel's, bit for bit. Every thread loads and reaches both
barriers; only the inner products run under the guard (a predicate, no barrier inside).
Reads that do not depend on k stay as written; one that reads both coordinates (or state
the loop updates) at k cannot be sliced and the knob is refused with its line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    inside,
    line,
    mentions,
    strip,
    subscript_index,
    terms,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Local, Refused, _assigned, _locals, fresh_names, render
from workbench.templater.regtile_naive import Naive, _closure, _Emit

#: shared memory a block may declare statically (bytes)
_STATIC_SMEM = 48 * 1024
_DEPTHS = [0, 8, 16, 32]
#: bytes of the element types a kernel parameter's ``base_type`` names beyond the dtypes
#: :meth:`Plan.elem_bytes` knows
_BYTES = {"double": 8, "float": 4, "int": 4, "unsigned": 4, "unsigned int": 4,
          "long long": 8, "short": 2, "char": 1, "signed char": 1, "unsigned char": 1}


@dataclass(frozen=True)
class Loop:
    """The loop over k: ``for (T var = start; var < end; ++var)`` (``end`` exclusive)."""

    var: str
    ctype: str
    start: str
    end: str


@dataclass
class Operand:
    """One staged read: its nodes in the loop (the same address each), the output dimension
    its address reads, its element type, and its load order (k fastest where k is its
    unit stride, else the tile's coordinate)."""

    reads: list[Node]
    dim: str
    coordinate: str
    ctype: str
    elem_bytes: str
    k_fastest: bool
    slot: int = 0


@dataclass
class Slices:
    """The analysed k slices of one naive product."""

    n: Naive
    loop: Loop
    operands: list[Operand] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)


def analyse(plan: Plan, n: Naive) -> Slices | None:
    """The operands to stage (None: refused, the finding says why)."""
    try:
        return _analyse(plan, n)
    except Refused as exc:
        plan.note("K_SLICE", False, exc.reason, exc.node)
        return None


def _analyse(plan: Plan, n: Naive) -> Slices:
    assert n.loop is not None
    loop = _loop(n.loop)
    body = n.loop.child_by_field_name("body")
    assert body is not None
    if loop.var in _assigned(body):
        raise Refused(f"the loop's body assigns `{loop.var}`: rounds of k would not follow",
                      body)
    locals_ = _locals(plan.body)
    dims = {d: _closure({k for k, c in n.coords.items() if c == d}, locals_, plan.body)
            for d in ("x", "y")}
    steps = _closure({loop.var}, locals_, plan.body)
    states = set(n.states)
    found: dict[str, Operand] = {}
    for read in _reads(body):
        if not mentions(read, steps):
            continue  # the same at every k: read as written
        on = [d for d in ("x", "y") if mentions(read, dims[d])]
        if not on:
            continue  # the same for every thread: read as written
        if len(on) != 1:
            raise Refused(f"`{text(read)}` reads both output coordinates at k: no slice of "
                          "one operand holds it", read)
        if mentions(read, states):
            raise Refused(f"`{text(read)}` reads state the loop updates", read)
        base, index = _address(read)
        ctype, size = _element(plan, base, locals_, read)
        expanded = _Expand(plan, locals_, n, loop.var)
        unit = expanded.affine(index, dims[on[0]], read)
        key = expanded.text(read)
        coords = [k for k, d in n.coords.items() if d == on[0]]
        if len(coords) != 1:
            raise Refused(f"the {on[0]} coordinate has {len(coords)} locals: the slice loads "
                          "declare one", read)
        coord = coords[0]
        if key in found:
            found[key].reads.append(read)
        else:
            found[key] = Operand([read], on[0], coord, ctype, size, unit, len(found))
    if not found:
        raise Refused("no read in the loop depends on k and one output coordinate: nothing to "
                      "stage", n.loop)
    return Slices(n, loop, list(found.values()), fresh_names(plan, ["BK", "PAD"]))


def _loop(loop: Node) -> Loop:
    """The counted ascending loop's variable, type and range."""
    if loop.type != "for_statement":
        raise Refused("the loop over k is not a `for`: its rounds are not modelled", loop)
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or init.type != "declaration" or cond is None or update is None:
        raise Refused("the loop over k does not declare its variable, test and step it in its "
                      "header", loop)
    declarators = init.children_by_field_name("declarator")
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        raise Refused(f"`{text(init)}` does not declare one variable with a value", init)
    var_node = declarators[0].child_by_field_name("declarator")
    start = declarators[0].child_by_field_name("value")
    ctype = text(init.child_by_field_name("type"))
    var = text(var_node)
    parts = binary(cond)
    if parts is None or start is None:
        raise Refused(f"`{text(cond)}` is not a bound on `{var}`", cond)
    left, op, right = parts
    if text(strip(right)) == var and op in (">", ">="):
        left, op, right = right, "<" if op == ">" else "<=", left
    if text(strip(left)) != var or op not in ("<", "<="):
        raise Refused(f"`{text(cond)}` is not an upper bound on `{var}` (an ascending loop)",
                      cond)
    if not _unit_step(update, var):
        raise Refused(f"`{text(update)}` does not step `{var}` by one", update)
    end = f"({text(right)})" if op == "<" else f"({text(right)}) + 1"
    return Loop(var, ctype, text(start), end)


def _unit_step(update: Node, var: str) -> bool:
    spelled = text(update).replace(" ", "")
    return spelled in (f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1", f"{var}=1+{var}")


def _reads(body: Node) -> list[Node]:
    """The outermost memory reads of ``body``: subscripts, ``*p`` and ``__ldg(...)``; an
    address taken (``&P[i]`` outside ``__ldg``) is refused."""
    out: list[Node] = []
    for m in walk(body):
        if any(m.start_byte >= r.start_byte and m.end_byte <= r.end_byte for r in out):
            continue
        if m.type == "pointer_expression" and text(m).lstrip().startswith("&"):
            raise Refused(f"`{text(m)}` takes an address in the loop: not modelled", m)
        if m.type == "subscript_expression" or (
                m.type == "pointer_expression" and text(m).lstrip().startswith("*")) or (
                m.type == "call_expression" and
                text(m.child_by_field_name("function")) == "__ldg"):
            out.append(m)
    return out


def _address(read: Node) -> tuple[Node, Node | None]:
    """(base pointer, index) of ``P[i]``, ``*(P + i)``, ``__ldg(&P[i])``, ``__ldg(P + i)``;
    the index None for a bare ``*P``."""
    node = read
    if node.type == "call_expression":
        args = node.child_by_field_name("arguments")
        if args is None or args.named_child_count != 1:
            raise Refused(f"`{text(read)}` is not a read of one address", read)
        node = strip(args.named_children[0])
        if node.type == "pointer_expression" and text(node).lstrip().startswith("&"):
            node = strip(node.child_by_field_name("argument") or node)
        else:
            return _sum_address(node, read)
    elif node.type == "pointer_expression":
        arg = node.child_by_field_name("argument")
        return _sum_address(strip(arg) if arg is not None else node, read)
    if node.type != "subscript_expression":
        raise Refused(f"`{text(read)}` is not a read the slice can address", read)
    base = strip(node.child_by_field_name("argument") or node)
    if base.type != "identifier":
        raise Refused(f"`{text(read)}` reads through `{text(base)}`, not a pointer's name",
                      read)
    return base, subscript_index(node)


def _sum_address(node: Node, read: Node) -> tuple[Node, Node | None]:
    pointers = [t for sign, t in terms(node) if sign == 1 and t.type == "identifier"]
    if len(terms(node)) == 1 and node.type == "identifier":
        return node, None
    if len(pointers) < 1:
        raise Refused(f"`{text(read)}` has no pointer's name as a term of its address", read)
    return pointers[0], node


def _element(plan: Plan, base: Node, locals_: dict[str, Local], read: Node) -> tuple[str, str]:
    """The element type and its bytes of the pointer ``base`` (a kernel parameter, or a
    local set once from one); refused where the pointer is thread-dependent or assigned."""
    name = text(base)
    seen: set[str] = set()
    while not plan.pointer(name):
        lo = locals_.get(name)
        if lo is None or lo.value is None or lo.count != 1 or name in _assigned(plan.body) \
                or name in seen:
            raise Refused(f"`{name}` in `{text(read)}` is not a kernel pointer or a local "
                          "set once from one", read)
        seen.add(name)
        roots = [text(m) for m in walk(lo.value)
                 if m.type == "identifier" and plan.pointer(text(m))]
        if len(roots) != 1:
            raise Refused(f"`{name}` in `{text(read)}` is not set from one kernel pointer",
                          read)
        name = roots[0]
    param = plan.kernel.param(name)
    size = plan.elem_bytes(name) or (str(_BYTES[param.base_type])
                                     if param.base_type in _BYTES else None)
    if size is None or size == "elem_bytes":
        raise Refused(f"the element type `{param.base_type}` of `{name}` has no known size",
                      read)
    return param.base_type, size


class _Expand:
    """A read's expression with the locals it reads (thread-dependent or declared in the
    loop) replaced by their values, down to the coordinates, the loop's variable and
    values the same for every thread."""

    def __init__(self, plan: Plan, locals_: dict[str, Local], n: Naive, var: str) -> None:
        self.plan, self.locals, self.n, self.var = plan, locals_, n, var
        assert n.loop is not None
        body = n.loop.child_by_field_name("body")
        assert body is not None
        assigned = _assigned(plan.body)
        self.inline = {k for k, lo in locals_.items()
                       if lo.value is not None and lo.count == 1 and k not in assigned and
                       (k in n.inlined or inside(lo.decl, body))}
        self.blocked = (set(n.states) | {k for k in assigned if k != var}) - set(n.coords)

    def text(self, node: Node) -> str:
        def sub(m: Node) -> str | None:
            if m.type != "identifier":
                return None
            name = text(m)
            if name in self.blocked:
                raise Refused(f"`{name}` is assigned in the kernel: the read's address at "
                              "another k or coordinate is not modelled", m)
            lo = self.locals.get(name)
            if name in self.inline and lo is not None and lo.value is not None:
                return f"({self.text(lo.value)})"
            return None
        return render(self.plan.source.data, node, sub)

    def affine(self, index: Node | None, coordinate: set[str], read: Node) -> bool:
        """Refuses a read whose index is not ``base + k * stride`` with ``stride`` free of
        the thread; True where the stride is one (k the unit stride: load k fastest)."""
        if index is None:
            raise Refused(f"`{text(read)}` reads one address at every k", read)
        k_terms = [(sign, t) for sign, t in self._terms(index, 1) if self._mentions_k(t)]
        for _sign, t in k_terms:
            if not self._linear(t, coordinate):
                raise Refused(f"the address of `{text(read)}` is not affine in `{self.var}` "
                              "with a stride the same for every thread", read)
        return len(k_terms) == 1 and text(strip(k_terms[0][1])) == self.var

    def _terms(self, node: Node, sign: int) -> list[tuple[int, Node]]:
        out: list[tuple[int, Node]] = []
        for s, t in terms(node):
            lo = self.locals.get(text(t)) if t.type == "identifier" else None
            if lo is not None and text(t) in self.inline and lo.value is not None:
                out += self._terms(lo.value, sign * s)
            else:
                out.append((sign * s, t))
        return out

    def _mentions_k(self, node: Node) -> bool:
        for m in walk(node):
            if m.type != "identifier":
                continue
            lo = self.locals.get(text(m))
            if text(m) == self.var or (text(m) in self.inline and lo is not None and
                                       lo.value is not None and self._mentions_k(lo.value)):
                return True
        return False

    def _linear(self, term: Node, coordinate: set[str]) -> bool:
        """``term`` is ``k``, ``k ± c`` or a product of one such factor and factors free of
        k and of the thread (no read, no coordinate)."""
        term = strip(term)
        if term.type == "identifier":
            lo = self.locals.get(text(term))
            if text(term) == self.var:
                return True
            return lo is not None and lo.value is not None and text(term) in self.inline \
                and self._linear(lo.value, coordinate)
        parts = binary(term)
        if parts is None:
            return False
        left, op, right = parts
        if op not in ("+", "-", "*"):
            return False
        linear, other = (left, right) if self._mentions_k(left) else (right, left)
        return not self._mentions_k(other) and self._linear(linear, coordinate) and \
            self._free(other, coordinate)

    def _free(self, node: Node, coordinate: set[str]) -> bool:
        return not mentions(node, coordinate | self.inline) and not any(
            m.type in ("subscript_expression", "call_expression", "pointer_expression",
                       "field_expression") for m in walk(node))


def body(s: Slices, emit: _Emit) -> str:
    """The product's body: the register tile from global memory (as before) under ``BK ==
    0``, the rounds of k slices otherwise."""
    return "\n".join(["{", f"#if {s.names['BK']} > 0", _staged(s, emit), "#else",
                      emit.body(), "#endif", "}"])


def _staged(s: Slices, emit: _Emit) -> str:
    n, loop = s.n, s.loop
    assert n.loop is not None
    bk, pad = s.names["BK"], s.names["PAD"]
    threads = f"({emit.names['THREADS_X']} * {emit.names['THREADS_Y']})"
    declared, starts = emit.prologue()
    out = ["{", *declared]
    for op in s.operands:
        out.append(f"  __shared__ {op.ctype} wb_slice{op.slot}[{bk}][{emit.tile(op.dim)} + "
                   f"{pad}];")
    out.append(f"  const int wb_tid = threadIdx.y * {emit.names['THREADS_X']} + threadIdx.x;")
    out.append(f"  const bool wb_live = {emit.live(first=True)};")
    out.append("  if (wb_live) {")
    out += starts
    out.append("  }")
    out.append("  // every thread loads its part of each k slice and reaches both barriers: the "
               "full rounds, then the last (partial) one")
    out.append(f"  {loop.ctype} wb_k0 = {loop.start};")
    out.append(f"  for (; wb_k0 < {loop.end} && {loop.end} - wb_k0 >= {bk}; wb_k0 += {bk}) {{")
    out += _rounds(s, emit, threads, False)
    out.append("  }")
    out.append(f"  if (wb_k0 < {loop.end}) {{")
    out += _rounds(s, emit, threads, True)
    out.append("  }")
    epilogue = [render(emit.data, st, emit.states()) for st in n.after]
    out += emit.tiled([*emit.opening(False), f"if ({emit.live()}) {{", *epilogue, "}"], "  ")
    out.append("}")
    return "\n".join(out)


def _rounds(s: Slices, emit: _Emit, threads: str, last: bool) -> list[str]:
    """One round: the loads, a barrier, the inner products under the guard (over ``BK`` k
    unrolled, or the ``last`` round's rest), a barrier."""
    bk, end = s.names["BK"], s.loop.end
    out = [row for op in s.operands for row in _load(s, op, emit, threads, last)]
    out += ["    __syncthreads();", "    if (wb_live) {"]
    out += _round(s, emit, f"{end} - wb_k0" if last else bk, "      ", not last)
    return [*out, "    }", "    __syncthreads();"]


def _load(s: Slices, op: Operand, emit: _Emit, threads: str, last: bool) -> list[str]:
    """The cooperative load of ``op``'s slice: position (kk, p) holds the read at k = k0 +
    kk and the coordinate of the tile's p-th virtual thread along ``op.dim``, zero past the
    guard or (the ``last`` round) the loop's end."""
    bk, tile = s.names["BK"], emit.tile(op.dim)
    loop = s.loop
    kk, p = (f"wb_e % {bk}", f"wb_e / {bk}") if op.k_fastest else \
        (f"wb_e / {tile}", f"wb_e % {tile}")
    coord = emit.coordinate(op.coordinate).replace(emit.virtual(op.dim), "(wb_p)")
    cmp, bound = s.n.bounds[op.dim]
    read = _Expand(s.n.plan, emit.locals, s.n, loop.var).text(op.reads[0])
    within = f"{loop.var} < {loop.end} && " if last else ""
    return [
        f"    for (int wb_e = wb_tid; wb_e < {bk} * {tile}; wb_e += {threads}) {{",
        f"      const int wb_kk = {kk};",
        f"      const int wb_p = {p};",
        f"      const {loop.ctype} {loop.var} = wb_k0 + wb_kk;",
        f"      const {emit.ctype(op.coordinate)} {op.coordinate} = {coord};",
        f"      wb_slice{op.slot}[wb_kk][wb_p] = {within}{op.coordinate} {cmp} "
        f"({text(bound)}) ? {read} : ({op.ctype})0;",
        "    }"]


def _round(s: Slices, emit: _Emit, count: str, ind: str, unrolled: bool) -> list[str]:
    """The register tile's inner products over ``count`` k of the slice, k ascending."""
    n, loop = s.n, s.loop
    assert n.loop is not None
    loop_body = n.loop.child_by_field_name("body")
    assert loop_body is not None
    reads = {r.id: op for op in s.operands for r in op.reads}
    states = emit.states()

    def sub(m: Node) -> str | None:
        op = reads.get(m.id)
        if op is not None:
            return f"wb_slice{op.slot}[wb_kk][{emit.virtual(op.dim)}]"
        return states(m)
    inner = emit.tiled(["{", *emit.opening(True), render(emit.data, loop_body, sub), "}"],
                       ind + "  ")
    return [*([f"{ind}#pragma unroll"] if unrolled else []),
            f"{ind}for (int wb_kk = 0; wb_kk < {count}; ++wb_kk) {{",
            f"{ind}  const {loop.ctype} {loop.var} = wb_k0 + wb_kk;", *inner, f"{ind}}}"]


def declare(plan: Plan, s: Slices, emit: _Emit) -> None:
    """BK, PAD and their constraints (the slices within static shared memory)."""
    bk, pad = s.names["BK"], s.names["PAD"]
    where = f"{line(plan.body)}"
    plan.add_param(bk, {"kind": "choice", "values": _DEPTHS, "default": 0,
                        "description": "k per shared slice of the operands (0: the register "
                                       "tile reads global memory, as lifted before)"}, where)
    plan.add_param(pad, {"kind": "choice", "values": [0, 1], "default": 0,
                         "description": "elements of padding a row of each k slice"}, where)
    plan.constrain(f"{bk} > 0 or {pad} == 0")
    rows = " + ".join(f"({emit.tile(op.dim)} + {pad}) * {op.elem_bytes}" for op in s.operands)
    plan.constrain(f"{bk} * ({rows}) <= {_STATIC_SMEM}")
    assert s.n.loop is not None
    plan.note("K_SLICE", True, f"the loop over k (line {line(s.n.loop)}) in rounds of {bk}: "
              f"{len(s.operands)} operand(s) staged in shared slices of the block's tile "
              f"({', '.join(text(op.reads[0]) for op in s.operands)}), two barriers a round "
              "reached by every thread, k ascending in each thread", s.n.loop)

