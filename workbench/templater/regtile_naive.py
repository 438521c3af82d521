"""Register tiling of a product written without shared memory (issue 28, first contact).

The naive product: a 2-D block, each thread one output at ``row = blockIdx.y * By +
threadIdx.y``, ``col = blockIdx.x * Bx + threadIdx.x`` (By / Bx the block's size, literal or
``blockDim``), a guard ``row < R && col < C`` (an early return or an if around the rest), one
loop over k that only updates thread-private locals from reads of global memory, and an
epilogue per output. Known practice for it (thread coarsening, the register tile of the
tiled family without its shared tiles): a thread computes a TM x TN block of outputs, the
outputs of the *virtual threads* ``(tx + j * THREADS_X, ty + i * THREADS_Y)`` of a block of
``THREADS_Y * TM`` rows by ``THREADS_X * TN`` columns, their k loops fused into one so an
operand read that does not depend on the column (A's row) is read once for the TN columns
and one that does not depend on the row (B's column) once for the TM rows (the compiler
merges the identical loads of the unrolled tile: nothing in the loop writes memory).

Legal because no thread talks to another (no shared memory, barrier, warp or atomic
operation): running the original threads' loops side by side in one thread is one of their
schedules. A virtual thread past the guard's bound runs the loop at its coordinates clamped
to the last row (column) the guard lets through, so it reads only what a live thread reads,
and its results are dropped (the epilogue runs under the guard, at the true coordinates);
the loop runs only where the first virtual thread is live (each later one lies further out).
With ``BK > 0`` the fused loop runs in rounds of shared k slices (:mod:`.regtile_kslice`).

Refused with the reason and line: a thread index used other than through the two
coordinates, a bound that is not uniform or missing, a loop that writes memory or leaves
early (``break`` / ``continue`` / ``return``), state the rewrite cannot give each virtual
thread. Kernels without an operand shared by a row or by a column (a stencil's window) are
not of the family and are left to theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    builtin,
    int_value,
    line,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import (
    Local,
    Refused,
    _assigned,
    _locals,
    _statements,
    fresh_names,
    render,
)
from workbench.templater.rules import literal, scale_divisor

#: operations through which threads of a block talk to each other (or leave the schedule)
_TALK = ("__syncthreads", "__syncwarp", "__shfl", "atomic", "__ballot", "__any", "__all",
         "__activemask", "__threadfence")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {">=": "<", ">": "<=", "<": ">=", "<=": ">"}
#: register-tile sides searched (per dimension); accumulators per thread at most
_SIDES = [1, 2, 4, 8]
_MAX_STATE = 64


@dataclass
class Naive:
    """The facts of one naive product."""

    plan: Plan
    coords: dict[str, str] = field(default_factory=dict)  # local -> "x" / "y"
    bounds: dict[str, tuple[str, Node]] = field(default_factory=dict)  # dim -> (op, bound)
    loop: Node | None = None
    before: list[Node] = field(default_factory=list)  # statements before the loop
    after: list[Node] = field(default_factory=list)  # the epilogue
    states: list[str] = field(default_factory=list)  # locals each virtual thread keeps
    inlined: set[str] = field(default_factory=set)  # thread-dependent, set once
    pragma: Node | None = None  # a directive on the loop (``#pragma unroll``)


def _block_sizes(plan: Plan) -> tuple[int, int] | None:
    if len(plan.block) < 2 or any(literal(b) != 1 for b in plan.block[2:]):
        return None
    bx, by = literal(plan.block[0]), literal(plan.block[1])
    if bx is None or by is None or bx < 2 or by < 2:
        return None
    return bx, by


def _coordinate(value: Node, size: dict[str, int], aliases: dict[str, str],
                uniform: set[str]) -> str | None:
    """"x" / "y" when ``value`` is ``blockIdx.d * S + threadIdx.d`` (S the block's size
    along d, literal or ``blockDim.d``; casts and either order), shifted or not by terms the
    same for every thread (``+ 1`` of a 1-based index, ``- lo``, a scalar ``uniform``
    names), else None. A shift moves every virtual thread's coordinate alike."""
    parts = [(sign, t) for sign, t in terms(value) if not _shift(t, uniform)]
    if len(parts) != 2 or any(sign != 1 for sign, _ in parts):
        return None
    dims: set[str] = set()
    offset: str | None = None
    for _, t in parts:
        d = builtin(t, "threadIdx") or aliases.get(text(strip(t)))
        if d is not None:
            dims.add(d)
            continue
        f = binary(t)
        if f is None or f[1] != "*":
            return None
        for a, b in ((f[0], f[2]), (f[2], f[0])):
            d = builtin(a, "blockIdx")
            if d is not None and d in size and (builtin(b, "blockDim") == d or
                                                int_value(strip(b)) == size[d]):
                offset = d
    if offset is None or dims != {offset}:
        return None
    return offset


def _shift(term: Node, uniform: set[str]) -> bool:
    """Whether ``term`` is the same for every thread: literals and ``uniform`` names joined
    by arithmetic (no builtin index, no call, no memory read)."""
    return not _thread_uses(term) and all(
        m.type in ("number_literal", "binary_expression", "parenthesized_expression",
                   "unary_expression", "+", "-", "*", "/", "(", ")") or
        (m.type == "identifier" and text(m) in uniform) for m in walk(term))


def _thread_uses(node: Node) -> list[Node]:
    return [n for n in walk(node) if n.type == "field_expression" and (
        builtin(n, "threadIdx") is not None or builtin(n, "blockDim") in ("x", "y") or
        builtin(n, "blockIdx") in ("x", "y") or builtin(n, "gridDim") is not None)]


def _guard(cond: Node, negated: bool, coords: dict[str, str]) -> dict[str, tuple[str, Node]]:
    """dim -> (``<`` / ``<=``, bound) of the live threads, read from an if's condition
    (``negated``: the condition of an early return, a disjunction of the bounds' negations)."""
    if cond.type == "condition_clause" and cond.named_child_count == 1:
        cond = cond.named_children[0]
    cond = strip(cond)
    if cond.type == "unary_expression" and text(cond.child_by_field_name("operator")) == "!":
        inner = cond.child_by_field_name("argument")
        if inner is not None:
            return _guard(inner, not negated, coords)
    parts = binary(cond)
    join = "||" if negated else "&&"
    if parts is not None and parts[1] == join:
        return {**_guard(parts[0], negated, coords), **_guard(parts[2], negated, coords)}
    if parts is None or parts[1] not in _FLIP:
        raise Refused(f"`{text(cond)}` is not a bound on the output's row or column", cond)
    left, op, right = parts
    if strip(left).type != "identifier" or text(strip(left)) not in coords:
        left, op, right = right, _FLIP[op], left
    name = text(strip(left))
    if strip(left).type != "identifier" or name not in coords:
        raise Refused(f"`{text(cond)}` is not a bound on the output's row or column", cond)
    if negated:
        op = _NEGATE[op]
    if op not in ("<", "<="):
        raise Refused(f"`{text(cond)}` bounds the {coords[name]} coordinate from below", cond)
    return {coords[name]: (op, right)}


def _is_return_guard(s: Node) -> Node | None:
    """The condition of ``if (...) return;`` (no else), else None."""
    if s.type != "if_statement" or s.child_by_field_name("alternative") is not None:
        return None
    then = s.child_by_field_name("consequence")
    inner = _statements(then) if then is not None and then.type == "compound_statement" \
        else [then]
    if len(inner) == 1 and inner[0] is not None and inner[0].type == "return_statement" \
            and inner[0].named_child_count == 0:
        return s.child_by_field_name("condition")
    return None


def _split(n: Naive, statements: list[Node]) -> None:
    """Find the guard, the loop, what comes before and after it."""
    coords = n.coords
    for i, s in enumerate(statements):
        cond = _is_return_guard(s)
        if cond is not None:
            n.bounds.update(_guard(cond, True, coords))
            continue
        if s.type in LOOPS:
            n.loop = s
            n.after = statements[i + 1:]
            if n.before and n.before[-1].type == "preproc_call":  # ``#pragma unroll 4``
                n.pragma = n.before.pop()
            return
        if s.type == "if_statement" and not n.bounds and i == len(statements) - 1 and \
                s.child_by_field_name("alternative") is None:
            cond = s.child_by_field_name("condition")
            then = s.child_by_field_name("consequence")
            if cond is None or then is None:
                break
            n.bounds = _guard(cond, False, coords)
            _split(n, _statements(then) if then.type == "compound_statement" else [then])
            return
        n.before.append(s)


def analyse(plan: Plan, size: dict[str, int]) -> Naive | None:
    """The naive product's facts (None: not of the family); raises Refused."""
    body = plan.body
    if any(n.type == "declaration" and "__shared__" in {text(c) for c in n.children}
           for n in walk(body)):
        return None
    if any(text(n).startswith(_TALK) for n in walk(body) if n.type == "identifier"):
        return None
    locals_ = _locals(body)
    assigned = _assigned(body)
    single = {k: lo for k, lo in locals_.items()
              if lo.count == 1 and k not in assigned and lo.value is not None}
    thread_alias = {k: d for k, lo in single.items() if lo.value is not None and
                    (d := builtin(lo.value, "threadIdx")) in ("x", "y")}
    n = Naive(plan)
    for k, lo in single.items():
        if lo.value is not None and (d := _coordinate(lo.value, size, thread_alias,
                                                      set(plan.scalars) - assigned)):
            n.coords[k] = d
    if sorted(n.coords.values()) != ["x", "y"]:
        return None
    _split(n, _statements(body))
    if n.loop is None or any(s.type in LOOPS for s in n.before):
        return None
    if not _reuses(n, locals_):
        return None  # no operand shared along a row or a column: not a product
    _check(n, locals_, assigned, thread_alias)
    return n


def _mentions(node: Node, names: set[str]) -> bool:
    return any(m.type == "identifier" and text(m) in names for m in walk(node))


def _closure(names: set[str], locals_: dict[str, Local], node: Node) -> set[str]:
    """The locals ``node`` reads that depend on ``names`` (directly or through others)."""
    out = set(names)
    changed = True
    while changed:
        changed = False
        for k, lo in locals_.items():
            if k not in out and lo.value is not None and _mentions(lo.value, out):
                out.add(k)
                changed = True
    return out


def _reuses(n: Naive, locals_: dict[str, Local]) -> bool:
    """Whether the loop reads memory at an index of the row and not the column, and at one
    of the column and not the row (the reuse a register tile exists for)."""
    rows = _closure({k for k, d in n.coords.items() if d == "y"}, locals_, n.plan.body)
    cols = _closure({k for k, d in n.coords.items() if d == "x"}, locals_, n.plan.body)
    seen: set[str] = set()
    assert n.loop is not None
    for m in walk(n.loop):
        if m.type not in ("subscript_expression", "pointer_expression") and not (
                m.type == "call_expression" and
                text(m.child_by_field_name("function")) == "__ldg"):
            continue
        r, c = _mentions(m, rows), _mentions(m, cols)
        if r != c:
            seen.add("y" if r else "x")
    return seen == {"x", "y"}


def _check(n: Naive, locals_: dict[str, Local], assigned: set[str],
           thread_alias: dict[str, str]) -> None:
    assert n.loop is not None
    if set(n.bounds) != {"x", "y"}:
        missing = " and ".join(d for d in ("y", "x") if d not in n.bounds)
        raise Refused(f"no bound on the output's {missing} coordinate before the loop: a "
                      "larger block tile would compute outputs past the edge", n.loop)
    for _op, bound in n.bounds.values():
        if _thread_uses(bound) or _mentions(bound, set(assigned)):
            raise Refused(f"the bound `{text(bound)}` is not the same for every thread", bound)
    allowed = {lo.value.id for k, lo in locals_.items()
               if (k in n.coords or k in thread_alias) and lo.value is not None}
    for use in _thread_uses(n.plan.body):
        if not any(a.id == use.id or _within(use, a) for a in _alloweds(locals_, allowed)):
            raise Refused(f"`{text(use)}` is used other than through the output's row and "
                          "column", use)
    for m in walk(n.loop):
        if m.type in ("break_statement", "continue_statement", "return_statement",
                      "goto_statement"):
            raise Refused(f"`{text(m)}` leaves the loop early: each virtual thread's loop is "
                          "fused into one", m)
        if m.type in ("assignment_expression", "update_expression"):
            target = m.child_by_field_name("left") or m.child_by_field_name("argument")
            if target is None or strip(target).type != "identifier":
                raise Refused(f"`{text(m)}` writes memory inside the loop over k", m)
    for s in n.after:
        _check_epilogue_exits(s)
    threaded = _closure(set(n.coords) | set(thread_alias), locals_, n.plan.body)
    for s in n.before:
        if s.type != "declaration":
            raise Refused(f"`{text(s).strip()[:60]}` before the loop is not a declaration",
                          s)
    for use in (m for m in walk(n.plan.body) if m.type == "identifier" and
                text(m) in thread_alias):
        if not any(_within(use, a) for a in _alloweds(locals_, allowed)) and \
                not _declares(use):
            raise Refused(f"`{text(use)}` (threadIdx.{thread_alias[text(use)]}) is used "
                          "other than through the output's row and column", use)
    before = [k for k, lo in locals_.items() if any(lo.decl.id == s.id for s in n.before)]
    for k in before:
        lo = locals_[k]
        if k in n.coords or k in thread_alias:
            continue
        if lo.count != 1:
            raise Refused(f"`{k}` is declared more than once", lo.decl)
        if k in assigned:
            inner = lo.declarator.child_by_field_name("declarator") \
                if lo.declarator.type == "init_declarator" else lo.declarator
            if inner is not None and inner.type == "array_declarator":
                raise Refused(f"`{k}` is an array each thread updates", lo.decl)
            n.states.append(k)
        elif k in threaded:
            n.inlined.add(k)
    _check_declarations(n, locals_, thread_alias)
    _check_header(n, threaded)


def _check_epilogue_exits(statement: Node) -> None:
    """The epilogue runs once per virtual thread inside the tile's loops: a ``return`` (or a
    ``break`` / ``continue`` of no loop of its own) would end the others' too."""
    for m in walk(statement):
        if m.type == "return_statement":
            raise Refused(f"`{text(m)}` after the loop would end every output of the thread",
                          m)
        if m.type in ("break_statement", "continue_statement"):
            up = m.parent
            while up is not None and up.id != statement.id and \
                    up.type not in (*LOOPS, "switch_statement"):
                up = up.parent
            if up is None or up.type not in (*LOOPS, "switch_statement"):
                raise Refused(f"`{text(m)}` after the loop leaves the tile's loop", m)


def _declares(use: Node) -> bool:
    """Whether identifier ``use`` is the name a declarator declares."""
    parent = use.parent
    if parent is None or parent.type not in ("init_declarator", "declaration"):
        return False
    declarator = parent.child_by_field_name("declarator")
    return declarator is not None and declarator.id == use.id


def _check_declarations(n: Naive, locals_: dict[str, Local],
                        thread_alias: dict[str, str]) -> None:
    """A declaration before the loop is dropped (coordinates, aliases, inlined locals),
    kept as written (uniform locals) or given per virtual thread (a state): never two kinds
    in one statement."""
    for s in n.before:
        names = [k for k, lo in locals_.items() if lo.decl.id == s.id]
        kinds = {"coordinate" if k in n.coords or k in thread_alias else
                 "inlined" if k in n.inlined else "state" if k in n.states else "uniform"
                 for k in names}
        if kinds == {"uniform"} and _mentions(s, set(n.states)):
            raise Refused(f"`{text(s).strip()[:60]}` reads a local the loop updates before "
                          "the loop: not modelled", s)
        if len(kinds) > 1 or ("state" in kinds and len(names) > 1):
            raise Refused(f"`{text(s).strip()[:60]}` declares locals the rewrite treats "
                          "differently (coordinates, per-output state, thread-dependent, "
                          "uniform) in one statement", s)


def _check_header(n: Naive, threaded: set[str]) -> None:
    """The fused loop's header runs once for every virtual thread: it must be uniform."""
    loop = n.loop
    assert loop is not None
    if loop.type == "do_statement":
        raise Refused("a do-while loop over k is not modelled (its test follows the body)",
                      loop)
    body = loop.child_by_field_name("body")
    header = [c for c in loop.children if body is None or c.id != body.id]
    names = threaded | set(n.states)
    for part in header:
        if _mentions(part, names) or _thread_uses(part):
            raise Refused(f"the loop's header `{text(part)}` depends on the thread or on "
                          "state its body updates: the fused loop runs one header for every "
                          "output", part)


def _alloweds(locals_: dict[str, Local], ids: set[int]) -> list[Node]:
    return [lo.value for lo in locals_.values() if lo.value is not None and lo.value.id in ids]


def _within(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _assigned_in(statements: list[Node], name: str) -> bool:
    return any(name in _assigned(s) for s in statements)


class _Emit:
    """The register-tiled body of an analysed naive product: each region a virtual thread
    runs (the state's start, the loop's body, the epilogue) opens with the output's row and
    column at that virtual thread and the thread-dependent locals as written."""

    def __init__(self, n: Naive, names: dict[str, str], size: dict[str, int]) -> None:
        self.n, self.names, self.size = n, names, size
        self.data = n.plan.source.data
        self.locals = _locals(n.plan.body)
        self.alias = {k: d for k, lo in self.locals.items() if lo.value is not None and
                      lo.count == 1 and (d := builtin(lo.value, "threadIdx")) in ("x", "y")}

    def virtual(self, dim: str) -> str:
        threads = self.names["THREADS_X" if dim == "x" else "THREADS_Y"]
        step = "wb_j" if dim == "x" else "wb_i"
        return f"(threadIdx.{dim} + {step} * {threads})"

    def tile(self, dim: str) -> str:
        if dim == "x":
            return f"({self.names['THREADS_X']} * {self.names['TN']})"
        return f"({self.names['THREADS_Y']} * {self.names['TM']})"

    def coordinate(self, name: str) -> str:
        """The coordinate ``name``'s value at the virtual thread (wb_i, wb_j)."""
        lo = self.locals[name]
        dim = self.n.coords[name]
        assert lo.value is not None

        def sub(m: Node) -> str | None:
            if m.type == "field_expression" and builtin(m, "threadIdx") == dim:
                return self.virtual(dim)
            if m.type == "identifier" and self.alias.get(text(m)) == dim:
                return self.virtual(dim)
            parts = binary(m)
            if parts is not None and parts[1] == "*":
                for a, b in ((parts[0], parts[2]), (parts[2], parts[0])):
                    if builtin(a, "blockIdx") == dim and (
                            builtin(b, "blockDim") == dim or
                            int_value(strip(b)) == self.size[dim]):
                        return f"{text(a)} * {self.tile(dim)}"
            return None
        return render(self.data, lo.value, sub)

    def ctype(self, name: str) -> str:
        return text(self.locals[name].decl.child_by_field_name("type"))

    def opening(self, clamped: bool) -> list[str]:
        """The coordinates (``clamped``: to the guard's last row / column) and the
        thread-dependent locals, declared as the region's first statements."""
        out = []
        for name in sorted(self.n.coords, key=lambda k: self.locals[k].decl.start_byte):
            value, ctype = self.coordinate(name), self.ctype(name)
            if clamped:
                op, bound = self.n.bounds[self.n.coords[name]]
                last = f"({text(bound)}) - 1" if op == "<" else f"({text(bound)})"
                out.append(f"const {ctype} wb_v_{name} = {value};")
                value = f"wb_v_{name} {op} ({text(bound)}) ? wb_v_{name} : {last}"
            out.append(f"const {ctype} {name} = {value};")
        seen: set[int] = set()
        for name in sorted(self.n.inlined, key=lambda k: self.locals[k].decl.start_byte):
            decl = self.locals[name].decl
            if decl.id not in seen:
                seen.add(decl.id)
                out.append(text(decl))
        return out

    def states(self) -> Callable[[Node], str | None]:
        states = set(self.n.states)

        def sub(m: Node) -> str | None:
            if m.type == "identifier" and text(m) in states:
                return f"{text(m)}[wb_i][wb_j]"
            return None
        return sub

    def tiled(self, lines: list[str], ind: str) -> list[str]:
        tm, tn = self.names["TM"], self.names["TN"]
        return [f"{ind}#pragma unroll", f"{ind}for (int wb_i = 0; wb_i < {tm}; ++wb_i) {{",
                f"{ind}  #pragma unroll", f"{ind}  for (int wb_j = 0; wb_j < {tn}; ++wb_j) {{",
                *(f"{ind}    {s}" for s in lines), f"{ind}  }}", f"{ind}}}"]

    def live(self, first: bool = False) -> str:
        """The guard at the virtual thread's true coordinates (``first``: at (0, 0))."""
        conds = []
        for name in sorted(self.n.coords, key=lambda k: self.locals[k].decl.start_byte):
            op, bound = self.n.bounds[self.n.coords[name]]
            coord = name
            if first:
                value = self.coordinate(name).replace("wb_i", "0").replace("wb_j", "0")
                coord = f"({self.ctype(name)})({value})"
            conds.append(f"{coord} {op} ({text(bound)})")
        return " && ".join(conds)

    def prologue(self) -> tuple[list[str], list[str]]:
        """The statements before the loop (the uniform ones as written, each state an array
        of the tile) and each state's value at the start, per virtual thread."""
        n = self.n
        sub = self.states()
        out: list[str] = []
        starts: list[str] = []
        state_ids = {self.locals[k].decl.id for k in n.states}
        dropped = {self.locals[k].decl.id for k in (*n.coords, *n.inlined, *self.alias)}
        for s in n.before:
            if s.id in state_ids:
                lo = next(self.locals[k] for k in n.states if self.locals[k].decl.id == s.id)
                head = text(lo.decl)[:lo.declarator.start_byte - lo.decl.start_byte]
                inner = lo.declarator.child_by_field_name("declarator") \
                    if lo.value is not None else lo.declarator
                out.append(f"  {head}{text(inner)}[{self.names['TM']}][{self.names['TN']}];")
                if lo.value is not None:
                    init = f"{lo.name}[wb_i][wb_j] = {render(self.data, lo.value, sub)};"
                    starts += self.tiled([*self.opening(True), init], "    ")
            elif s.id not in dropped:
                out.append("  " + text(s))
        return out, starts

    def body(self) -> str:
        n = self.n
        assert n.loop is not None
        sub = self.states()
        declared, starts = self.prologue()
        out = ["{", *declared]
        loop_body = n.loop.child_by_field_name("body")
        assert loop_body is not None
        header = render(self.data, n.loop, lambda m: "" if m == loop_body else None).rstrip()
        out.append("  // outputs past the guard run at its last row / column, then are "
                   "dropped; none runs past (0, 0)")
        out.append(f"  if ({self.live(first=True)}) {{")
        out += starts
        if n.pragma is not None:
            out.append(text(n.pragma).strip())
        out.append(f"    {header} {{")
        out += self.tiled(["{", *self.opening(True), render(self.data, loop_body, sub), "}"],
                          "      ")
        out += ["    }", "  }"]
        epilogue = [render(self.data, s, sub) for s in n.after]
        out += self.tiled([*self.opening(False), f"if ({self.live()}) {{", *epilogue, "}"],
                          "  ")
        out.append("}")
        return "\n".join(out)


def lift_naive(plan: Plan) -> bool:
    """Register tiling of a product without shared memory; False when the kernel is not of
    the family (or is, and the analysis refused: the finding says why)."""
    sizes = _block_sizes(plan)
    if sizes is None:
        return False
    size = {"x": sizes[0], "y": sizes[1]}
    try:
        n = analyse(plan, size)
    except Refused as exc:
        plan.note("REGISTER_TILE", False, exc.reason, exc.node)
        return False
    if n is None:
        return False
    names = fresh_names(plan, ["THREADS_X", "THREADS_Y", "TM", "TN"])
    grid = [scale_divisor(plan.grid[i], str(size[d]), f"{names['THREADS_' + d.upper()]} * "
                          f"{names['TN' if d == 'x' else 'TM']}") if i < len(plan.grid) else None
            for i, d in enumerate(("x", "y"))]
    if grid[0] is None or grid[1] is None:
        plan.note("REGISTER_TILE", False, f"the grid rules {plan.grid[:2]} do not divide by "
                  f"the block's size ({size['x']}, {size['y']}): a block tile would not "
                  "follow", plan.body)
        return False
    from workbench.templater import regtile_kslice  # it imports this module
    emit = _Emit(n, names, size)
    slices = regtile_kslice.analyse(plan, n)
    plan.rw.replace(plan.body, emit.body() if slices is None else regtile_kslice.body(slices, emit))
    plan.grid[0], plan.grid[1] = grid[0], grid[1]
    tx, ty, tm, tn = (names[k] for k in ("THREADS_X", "THREADS_Y", "TM", "TN"))
    plan.block[0], plan.block[1] = tx, ty
    where = f"{line(plan.body)}"
    # a warp's reads of the column operand coalesce along x: at least 8 threads along it
    # (a 32-byte sector of floats); powers of two and the size as written
    for k, dim, low, high in ((tx, "x", 8, 256), (ty, "y", 1, 64)):
        values = sorted({1 << e for e in range(11) if low <= 1 << e <= high} | {size[dim]})
        plan.add_param(k, {"kind": "choice", "values": values, "default": size[dim],
                           "description": f"threads per block along {dim} (as written: "
                                          f"{size[dim]})"}, where)
    for k, what in ((tm, "rows"), (tn, "columns")):
        plan.add_param(k, {"kind": "choice", "values": _SIDES, "default": 1,
                           "description": f"output {what} per thread (register tile)"}, where)
    plan.constrain(f"{tx} * {ty} <= 1024")
    plan.constrain(f"{tx} * {ty} >= 32")
    states = max(1, len(n.states))
    plan.constrain(f"{states} * {tm} * {tn} <= {_MAX_STATE}")
    # GEMM practice: a tile more than 2:1 (1 x 4, 2 x 8) reads more operands per
    # multiply-add than a near-square one of as many outputs
    plan.constrain(f"{tm} <= 2 * {tn} and {tn} <= 2 * {tm}")
    if slices is not None:
        regtile_kslice.declare(plan, slices, emit)
    plan.launch_bounds = f"{tx} * {ty}"
    assert n.loop is not None
    plan.note("REGISTER_TILE", True, f"product without shared memory: each thread computes "
              f"{tm} x {tn} outputs (virtual threads strided by the block's threads), their "
              f"loops over k fused (line {line(n.loop)}) so a row's operand is read once for "
              f"its {tn} columns and a column's once for its {tm} rows; outputs past the "
              f"guard run clamped and are dropped; {len(n.states)} state(s) per output "
              f"({', '.join(n.states)}) kept in registers", n.loop)
    return True
