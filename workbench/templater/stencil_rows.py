"""Consecutive output rows per thread for 2-D stencils read straight from global memory (OUT_Y).

A 2-D stencil written one point per thread with explicit neighbour terms (a 5-point Jacobi
step, a 9-point Laplacian) reads every input row three times: once for the point above, once
for its own row, once for the point below. The usual practice for such kernels on GPUs is to
let a thread march down its column over OUT_Y consecutive outputs, keeping the rows the outputs
share in registers, so each input value a thread needs is loaded once; the block keeps a 2-D
shape whose x extent is a multiple of a warp (rows stay coalesced).

Recognised by roles, not by one spelling: a 2-D launch block of literal sizes; the point's
indices ``v = blockIdx.d * L + threadIdx.d`` (``L`` the literal or ``blockDim.d``) for x and y
at the top level; no loop, barrier or shared memory; one output array, stored at one index
``C`` (index expressions compared as polynomials over the kernel's names, single-assignment
locals expanded) and never read; one input array (the only one read at a neighbour row:
a time step's other inputs, the previous step or a source term, are read as written by each
output), read at least once at ``C + d * S + e`` with ``d != 0`` (``S`` the
derivative of ``C`` in y, ``d``, ``e`` integer offsets, |d|, |e| <= MAX_REACH); its other
reads (a clamped row, an index the polynomials do not follow) stay as written. The boundary handling is the kernel's own (a boundary
copy, a guarded interior, clamps in the bounds check): it is kept as written, per output.

The rewrite: ``y`` becomes ``((blockIdx.y * BLOCK_Y + threadIdx.y) * OUT_Y) + k`` in an
unrolled loop over the thread's ``k < OUT_Y`` outputs, each running the work after the index
declarations as written (an early ``return`` becomes ``continue``, so each output keeps its
own bounds check and boundary path). The input is read through a register window per column
offset ``e``: slot ``k + d - lo_e`` holds the row ``y + d`` of the thread's column ``x + e``,
loaded by the first read of the kernel that needs it (a per-slot flag), so a thread reads each
distinct input value once, only where the kernel as written reads it (nothing outside the
array is ever loaded), in the order the kernel's sums read them; every value is the one the
kernel reads and every sum is written as in the kernel, so the results are bit-identical.
Anything else in the family is refused with the reason and the line; a kernel that is no 2-D
stencil (no neighbour row read) is left to the other lifts.

A batch of 2-D fields (grid z the field, a 2-D block or a block z of 1) walks its rows the
same way, ``blockIdx.z`` read as written. An array may be a row pointer set once from one
argument by a value uniform for a thread's outputs (arguments, constants, the block's z and
locals of such values: ``U = u + plane``); its reads are placed against the output's index
by their indices, else by their addresses (the pointers' offsets added: ``U[here]`` against
``u_new[plane + here]``), one shift for every read either way. A row or column wrapped around
a periodic field (the selects :mod:`.periodic_index` writes) is keyed at its offset with the
wrap beside (:mod:`.stencil_rows_wrap`, which proves the reads sharing a slot agree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    shares_or_syncs,
    strip,
    subscript_array,
    subscript_index,
    text,
    walk,
    write_target,
    writer,
)
from workbench.templater.plan import Plan
from workbench.templater.read_only_loads import LDG_TYPES
from workbench.templater.regtile import Refused, apply_or_note, fresh_names, render
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.stencil import (
    Poly,
    Polys,
    add,
    derivative,
    index_decls,
    point_decls,
    poly_text,
    scale,
    statements,
)
from workbench.templater.stencil_rows_wrap import (
    Wrap,
    Wraps,
    check_shared,
    split_wraps,
    wraps_at,
)
from workbench.templater.warp_regs import _min_blocks_follows

#: the widest neighbour offset along x or y a read may have (a radius-4 star at most)
MAX_REACH = 4
#: Outputs per thread down the column. Known practice for register-marched 2-D stencils:
#: 4 to 8 rows per thread amortise the two halo rows of a radius-1 stencil (3 loads per
#: output become 1 + 2 / OUT_Y, 1.25 at 8); deeper walks save little more while a thread's
#: outputs run one after another (each waits for its own new row) and the grid loses rows
#: of threads, so 8 is the deep end (a smaller space for a 40-evaluation search, too).
OUT_Y_VALUES = [1, 2, 4, 8]
#: Threads along x: a warp's row of 32 reads whole 128-byte lines of a float row
#: (coalesced), so x starts at 32 (or the written size, if smaller).
BLOCK_X_VALUES = [32, 64, 128, 256]
BLOCK_Y_VALUES = [1, 2, 4, 8, 16]
BLOCK_THREADS_VALUES = [64, 128, 256, 512]
#: Columns per thread, a block's width apart (each a coalesced row of the warp): more
#: independent outputs per thread along x, as consecutive blocks' work per block gives.
OUT_X_VALUES = [1, 2, 4]
#: A thread's outputs at most (OUT_X * OUT_Y): every column's window and sums stay in
#: registers.
MAX_OUTPUTS = 16
#: The window's registers (values and flags) a thread may hold; deeper walks are left out.
MAX_WINDOW = 96
#: Registers besides the window (indices, bounds, pointers, the sums' temporaries).
WORKING_REGS = 16


#: A column of the window: its offset from the point's and its wrap's key ("" unwrapped).
_Column = tuple[int, str]


@dataclass(frozen=True)
class _Place:
    d: int  # row offset
    e: int  # column offset
    row: Wrap | None  # the row's wrap
    col: str  # the column's wrap's key ("" unwrapped)


@dataclass(frozen=True)
class _Read:
    node: Node  # the subtree replaced by the window read (``src[i]`` or ``__ldg(&src[i])``)
    d: int  # row offset
    e: int  # column offset
    row: Wrap | None = None  # the row's wrap (None: the row as the polynomials read it)
    col: str = ""  # the column's wrap's key

    @property
    def column(self) -> _Column:
        return self.e, self.col


@dataclass(frozen=True)
class _Facts:
    x: str
    y: str
    ydecl: Node
    later: Node  # the later of the two index declarations: the per-output work follows it
    rest: list[Node]
    src: str
    out: str
    reads: tuple[_Read, ...]
    columns: dict[_Column, tuple[int, int]]  # column -> (lowest, highest) row offset
    elem: str
    stride: str  # the row stride (the rows' distance in the arrays)
    xdecl: Node | None = None  # the column's declaration where OUT_X applies (else None)


def lift_rows(plan: Plan) -> bool:
    """OUT_Y for a 2-D stencil with explicit neighbour terms; False when the kernel is not of
    the family or the analysis refused (the finding says why)."""
    if shares_or_syncs(plan.body) or any(n.type in ("for_statement", "while_statement",
                                                    "do_statement") for n in walk(plan.body)):
        return False
    if len(plan.block) == 1 and len(plan.grid) == 2:
        split = _split_block(plan)
        if split is not None:
            plan.note("OUT_Y", False, f"the 1-D block of {plan.block[0]} threads is laid out "
                      f"as rows of points by `{text(split)}`: the rows lift takes a 2-D block "
                      "(threadIdx.x, threadIdx.y) and a split block is not modelled", split)
        return False
    if len(plan.block) == 1:
        return apply_or_note(plan, "OUT_Y", lambda: _flat_index(plan))
    # a batch: the grid's z the image, the block of one z (2-D, or a literal 1)
    batch = len(plan.grid) == 3 and len(plan.block) in (2, 3)
    if not (batch or len(plan.block) == len(plan.grid) == 2) or \
            any(literal(b) is None for b in plan.block) or \
            (len(plan.block) == 3 and literal(plan.block[2]) != 1):
        return False
    stmts = statements(plan.body)
    idx = point_decls(plan, stmts, "xy", "OUT_Y")
    if set(idx) != {"x", "y"}:
        return False
    return apply_or_note(plan, "OUT_Y", lambda: _analyse(plan, stmts, idx))


def _split_block(plan: Plan) -> Node | None:
    """``threadIdx.x / E`` in a top-level declaration of the point's row that reads
    ``blockIdx.y`` too (``y = blockIdx.y * TY + threadIdx.x / TX``: a 1-D block laid out as
    rows of ``E`` threads), else None."""
    for s in statements(plan.body):
        if s.type != "declaration":
            continue
        rows = any(builtin(n, "blockIdx") == "y" for n in walk(s))
        for n in walk(s):
            parts = binary(n)
            if rows and parts is not None and parts[1] == "/" and \
                    builtin(parts[0], "threadIdx") == "x":
                return n
    return None


def _flat_index(plan: Plan) -> Callable[[], None] | None:
    """A 2-D stencil launched 1-D over the flat point index ``t`` (``t = blockIdx.x * L +
    threadIdx.x``, rows of ``W`` points: reads at ``t + d * W + e``, ``W`` the divisor of a
    ``t / W`` or ``t % W`` local or of the bound). Its thread ``T`` takes the column ``T % W``
    and the rows ``T / W * OUT_Y + k``: ``t`` is re-declared per output as ``(row) * W +
    column``, the grid covers ``ceil(H / OUT_Y) * W`` threads; legal where the work's first
    statement returns for ``t >= H * W`` (every row past the last fails it)."""
    if len(plan.grid) != 1 or literal(plan.block[0]) is None:
        return None
    stmts = statements(plan.body)
    idx = index_decls(plan, stmts, "x")
    if "x" not in idx:
        return None
    tdecl, t, _ = idx["x"]
    width = _row_width(plan, t)
    if width is None:
        return None
    wpoly = Polys(plan.body, {t}).of(width)
    found = _stencil(plan, {t}, lambda c: wpoly if c == {(t,): 1} else None,
                     stmts[stmts.index(tdecl) + 1:])
    if found is None:
        return None
    rest = found[0]
    rows = _row_bound(plan, rest, t, wpoly)
    for n in walk(plan.body):
        if n.type == "field_expression" and not tdecl.start_byte <= n.start_byte < \
                tdecl.end_byte and any(builtin(n, b) for b in ("threadIdx", "blockIdx",
                                                                "blockDim", "gridDim")):
            raise Refused(f"`{text(n)}` is read outside the point's declaration: a thread's "
                          "points change with OUT_Y", n)
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is not None and text(target) == t:
                raise Refused(f"the point's index is assigned (`{text(n)}`)", n)
    if text(strip(width)) not in plan.scalars:  # the grid's rule names the width's argument
        raise Refused(f"the row width `{text(width)}` of the flat index {t} is not a kernel "
                      "argument", width)
    facts = _Facts(t, t, tdecl, tdecl, *found)
    return lambda: _emit_flat(plan, idx, facts, text(strip(width)), rows)


def _row_width(plan: Plan, t: str) -> Node | None:
    """``W`` of a local ``t / W`` or ``t % W`` (the row width of the flat index ``t``)."""
    for n in walk(plan.body):
        v = n.child_by_field_name("value") if n.type == "init_declarator" else None
        if v is None or strip(v).type != "binary_expression":
            continue
        v = strip(v)
        op, a, b = (v.child_by_field_name(k) for k in ("operator", "left", "right"))
        if op is not None and a is not None and b is not None and text(op) in ("/", "%") \
                and text(strip(a)) == t:
            return strip(b)
    return None


def _row_bound(plan: Plan, rest: list[Node], t: str, wpoly: Poly) -> str:
    """The kernel argument ``H`` of the work's first statement ``if (t >= H * W) return;``."""
    first = rest[0] if rest else None
    cond = first.child_by_field_name("condition") if first is not None and \
        first.type == "if_statement" else None
    cons = first.child_by_field_name("consequence") if first is not None else None
    inner = statements(cons) if cons is not None and cons.type == "compound_statement" \
        else [cons] if cons is not None else []
    parts = binary(strip(cond.named_children[0])) if cond is not None and \
        cond.named_child_count == 1 else None
    if first is None or parts is None or first.child_by_field_name("alternative") is not None \
            or len(inner) != 1 or inner[0].type != "return_statement" or \
            text(strip(parts[0])) != t or parts[1] != ">=":
        raise Refused(f"the work after the flat index {t} does not start with `if ({t} >= H * "
                      f"W) return;`: rows past the grid's last would be written", first)
    bound = Polys(plan.body, {t}).of(parts[2])
    for m, c in bound.items():
        rest_atoms = list(m)
        for a in (a for wm in wpoly for a in wm):
            if a in rest_atoms:
                rest_atoms.remove(a)
        if c == 1 and len(bound) == 1 and len(rest_atoms) == 1 and \
                rest_atoms[0] in plan.scalars and len(wpoly) == 1 and \
                set(next(iter(wpoly))) <= set(plan.scalars):
            return rest_atoms[0]
    raise Refused(f"the bound `{text(parts[2])}` of {t} is not rows * width of kernel "
                  "arguments", first)


def _emit_flat(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Facts, width: str,
               rows: str) -> None:
    data, rw = plan.source.data, plan.rw
    names = fresh_names(plan, ["BLOCK_THREADS", "OUT_Y"])
    bt, oy = names["BLOCK_THREADS"], names["OUT_Y"]
    size = idx["x"][2]
    value = f.ydecl.children_by_field_name("declarator")[0].child_by_field_name("value")
    declarator = f.ydecl.children_by_field_name("declarator")[0]
    assert value is not None
    typ = data[f.ydecl.start_byte:declarator.start_byte].decode().strip()
    thread = render(data, value, lambda n: bt if n == size and builtin(n, "blockDim") is None
                    else None)
    head = (f"{typ} wb_t = {thread};  // this thread: a column and {oy} consecutive rows\n"
            f"  {typ} wb_col = wb_t % ({width}), wb_row0 = wb_t / ({width}) * {oy};")
    loop = _walk(plan, f, oy, f"{typ} {f.y} = (wb_row0 + wb_k) * ({width}) + wb_col;")
    for s in f.rest:
        rw.replace(s, "")
    rw.replace(f.ydecl, head + loop)
    wx = literal(plan.block[0]) or 1
    plan.add_param(bt, {"kind": "choice", "values": sorted(
        {wx, *(v for v in BLOCK_THREADS_VALUES if v >= min(32, wx))}), "default": wx,
        "description": f"threads per block (as written: {wx})"},
        f"{f.ydecl.start_point.row + 1}: {text(f.ydecl)}")
    _out_y(plan, f, oy)
    hs, ws = plan.scalars[rows], plan.scalars[width]
    if scale_divisor(plan.grid[0], plan.block[0], bt) is None:
        raise Refused(f"the grid `{plan.grid[0]}` is not a division by the block "
                      f"{plan.block[0]}", f.ydecl)
    plan.grid = [f"ceil_div(ceil_div({hs}, {oy}) * ({ws}), {bt})"]
    plan.block = [bt]
    plan.launch_bounds = bt
    plan.constrain(f"{bt} >= 32")
    _min_blocks(plan, f, bt, oy)
    plan.note("OUT_Y", True, f"each thread computes {oy} consecutive rows of the "
              f"{len({(r.d, r.column) for r in f.reads})}-point stencil at one column (thread T: "
              f"column T % {width}, rows T / {width} * {oy} + k); each value of {f.src} it reads "
              f"is loaded once and feeds every output that reads it; the grid covers "
              f"ceil({rows} / {oy}) rows of {width}", f.ydecl)


def _array_type(plan: Plan, name: str) -> str | None:
    """The pointer type ``name`` is declared with: a kernel pointer argument's, or a local
    pointer's set once from one (``const float* src = img + blockIdx.z * w * h;``, never
    assigned, its value reading kernel arguments, constants and the block's z only: the same
    array at one offset for every output of the thread); None for anything else."""
    if plan.pointer(name):
        return plan.kernel.param(name).type_text
    d = plan.facts.defs.get(name)
    if d is None or not d.is_pointer or d.is_shared or d.assigned or d.value is None:
        return None
    if not _uniform(plan, d.value, 0):
        return None
    bases = [text(n) for n in walk(d.value) if n.type == "identifier" and plan.pointer(text(n))]
    kind = d.decl.child_by_field_name("type")
    if len(bases) != 1 or kind is None:
        return None
    return text(d.decl)[:kind.end_byte - d.decl.start_byte] + "*"


def _uniform(plan: Plan, value: Node, depth: int) -> bool:
    """``value`` is one value for every output of a thread: it reads kernel arguments,
    constants, the block's z and locals declared once, never assigned, whose values are such
    (``const size_t plane = (size_t)blockIdx.z * H * W;``), 8 levels at most."""
    for n in walk(value):
        if builtin(n, "threadIdx") is not None or builtin(n, "blockDim") in ("x", "y") or \
                builtin(n, "blockIdx") in ("x", "y"):
            return False
        d = plan.facts.defs.get(text(n)) if n.type == "identifier" else None
        if d is not None and (d.assigned or d.value is None or d.is_shared or depth >= 8 or
                              not _uniform(plan, d.value, depth + 1)):
            return False
    return True


def _note_moving_pointers(plan: Plan) -> None:
    """A note for each local pointer read by subscript that :func:`_array_type` does not
    take (its reads are not followed, so the kernel reads no neighbour row here)."""
    for name in sorted({subscript_array(n) for n in walk(plan.body) if n.type == "subscript_expression"}):
        d = plan.facts.defs.get(name)
        if d is not None and d.is_pointer and not d.is_shared and d.value is not None and \
                _array_type(plan, name) is None:
            plan.note("OUT_Y", False, f"`{name}` is set from `{text(d.value)}`, which is not one "
                      "array for every output of a thread (one kernel argument plus a value of "
                      "arguments, constants, the block's z and locals of such values): its "
                      "reads are not followed", d.decl)


def _element_type(plan: Plan, name: str) -> str:
    """The element type of the array ``name`` (:func:`_array_type`)."""
    if plan.pointer(name):
        return plan.kernel.param(name).base_type
    kind = plan.facts.defs[name].decl.child_by_field_name("type")
    assert kind is not None
    return text(kind)




def _is_store(sub: Node) -> bool:
    """``sub`` is assigned (``=`` or ``+=``); a step (``++``) reads it too."""
    w = writer(sub)
    return w is not None and w.type == "assignment_expression"


def _mentions(node: Node, name: str) -> bool:
    return any(n.type == "identifier" and text(n) == name for n in walk(node))


def _offsets(diff: Poly, stride: Poly, wraps: Wraps, axes: tuple[str, str] | None
             ) -> _Place | None:
    """(d, e) with ``diff == d * stride + e``, |d|, |e| <= MAX_REACH, or None; with
    ``axes`` (x, y) the row ``y + d`` and the column ``x + e`` may each be wrapped."""
    split = split_wraps(diff, stride, wraps)
    if split is None:
        return None
    diff, row, col = split
    if (row or col) and axes is None:
        return None
    for d in range(-MAX_REACH, MAX_REACH + 1):
        rest = add(diff, scale(stride, -d))
        e = rest.get((), 0) if set(rest) <= {()} else None
        if e is not None and abs(e) <= MAX_REACH and axes is not None and \
                not (wraps_at(row, axes[1], d) and wraps_at(col, axes[0], e)):
            return None
        if e is not None and abs(e) <= MAX_REACH:
            return _Place(d, e, row, col.key if col else "")
    return None


def _shift(plan: Plan, polys: Wraps, name: str) -> Poly:
    """The offset of the row pointer ``name`` from its argument (none for an argument)."""
    if plan.pointer(name):
        return {}
    value = plan.facts.defs[name].value
    assert value is not None  # an array of _array_type
    base = next(text(n) for n in walk(value) if n.type == "identifier" and plan.pointer(text(n)))
    return add(polys.of(value), {(base,): -1})


def _analyse(plan: Plan, stmts: list[Node], idx: dict[str, tuple[Node, str, Node]]
             ) -> Callable[[], None] | None:
    x, y = idx["x"][1], idx["y"][1]
    xdecl, ydecl = idx["x"][0], idx["y"][0]
    later = max(xdecl, ydecl, key=lambda s: s.start_byte)

    def stride_of(center: Poly) -> Poly | None:
        stride = derivative(center, y)
        if not stride or any(a in (x, y) for m in stride for a in m) or \
                derivative(center, x) != {(): 1}:
            return None
        return stride
    found = _stencil(plan, {x, y}, stride_of, stmts[stmts.index(later) + 1:], (x, y))
    if found is None:
        return None
    _check_rows(plan, ydecl, later, x, y)
    facts = _Facts(x, y, ydecl, later, *found, xdecl=xdecl if _columns_free(
        plan, xdecl, later, x) else None)
    return lambda: _emit(plan, idx, facts)


def _columns_free(plan: Plan, xdecl: Node, later: Node, x: str) -> bool:
    """OUT_X applies: the block's x index and the block's column are read only by the
    column's declaration, and no statement between the declarations reads the column."""
    for n in walk(plan.body):
        if n.type == "field_expression" and not xdecl.start_byte <= n.start_byte < \
                xdecl.end_byte and (builtin(n, "blockIdx") or builtin(n, "threadIdx")) == "x":
            return False
    return not any(_mentions(s, x) for s in statements(plan.body)
                   if xdecl.end_byte <= s.start_byte < later.start_byte)


def _stencil(plan: Plan, keep: set[str], stride_of: Callable[[Poly], Poly | None],
             rest: list[Node], axes: tuple[str, str] | None = None
             ) -> tuple[list[Node], str, str, tuple[_Read, ...], dict[_Column, tuple[int, int]],
                        str, str] | None:
    """(rest, input, output, window reads, column -> row offsets, element type, the row
    stride's text) of a stencil over the work ``rest``; None when it is none. With ``axes``
    (the point's x and y) a read may wrap its row and column (:mod:`.stencil_rows_wrap`)."""
    polys = Wraps(Polys(plan.body, keep).values)
    subs = [n for n in walk(plan.body) if n.type == "subscript_expression"
            and _array_type(plan, subscript_array(n)) is not None]
    stores = [n for n in subs if _is_store(n)]
    outs = {subscript_array(n) for n in stores}
    if len(outs) != 1:
        return None
    out = next(iter(outs))
    center = polys.of(subscript_index(stores[0]))
    stride = stride_of(center)
    if stride is None:
        return None
    read_arrays = sorted({subscript_array(n) for n in subs if not _is_store(n)} - {out})
    # the input's index against the output's (a row pointer of each set once: the same
    # offset a thread), else their addresses (``U = u + plane`` read at ``U[here]``, stored
    # at ``u_new[plane + here]``): either way one shift for every read of the input
    for view in (False, True):
        def place(n: Node, view: bool = view) -> _Place | None:
            at = add(polys.of(subscript_index(n)), _shift(plan, polys, subscript_array(n)) if view else {})
            base = add(center, _shift(plan, polys, out) if view else {})
            return _offsets(add(at, scale(base, -1)), stride, polys, axes)
        offsets = {a: [(n, place(n)) for n in subs if subscript_array(n) == a] for a in read_arrays}
        # the windowed input is the one read at a neighbour row; a time step's other inputs
        # (the previous step, a source term) are read as written by each output at its point
        rowed = [a for a in read_arrays
                 if any(o is not None and o.d != 0 for _, o in offsets[a])]
        if rowed:
            break
    if len(rowed) != 1:
        if len(rowed) > 1:
            raise Refused(f"several inputs ({', '.join(rowed)}) are read at neighbour rows: "
                          "one register window is modelled", stores[0])
        _note_moving_pointers(plan)
        return None  # no neighbour row read: not a 2-D stencil
    src = rowed[0]
    found = offsets[src]
    for n in stores:
        if polys.of(subscript_index(n)) != center:
            raise Refused(f"`{out}` is stored at `{text(subscript_index(n))}` and at "
                          f"`{text(subscript_index(stores[0]))}`: a thread's outputs must be one "
                          "point each", n)
    for n in subs:
        if subscript_array(n) == out and not _is_store(n):
            raise Refused(f"the output `{out}` is read (`{text(n)}`): the window would not see "
                          "what the thread's earlier outputs stored", n)
    reads = _reads(plan, found, src, rest)
    columns: dict[_Column, tuple[int, int]] = {}
    for r in reads:
        lo, hi = columns.get(r.column, (r.d, r.d))
        columns[r.column] = (min(lo, r.d), max(hi, r.d))
    if axes is not None:
        for key in columns:
            check_shared(plan.body, axes[1], [(r.node, r.d, r.row) for r in reads
                                              if r.column == key])
    return (rest, src, out, tuple(reads), columns, _element_type(plan, src),
            poly_text(stride))


def _reads(plan: Plan, found: list[tuple[Node, _Place | None]], src: str,
           rest: list[Node]) -> list[_Read]:
    """The reads of ``src`` at constant offsets from the point in the per-output work (the
    window's); a read elsewhere stays as written (each output still reads it at its own y).
    Refused where ``src`` is used other than by loads."""
    span = (rest[0].start_byte, rest[-1].end_byte) if rest else (0, 0)
    out: list[_Read] = []
    for n, o in found:
        if o is None or not span[0] <= n.start_byte < span[1] or \
                any(c.type == "subscript_expression" for c in walk(subscript_index(n))):
            continue  # not at a constant offset from the point (a clamped row): as written
        node = n
        parent = n.parent
        if parent is not None and parent.type == "pointer_expression":
            call = parent.parent.parent if parent.parent is not None else None
            if call is None or call.type != "call_expression" or \
                    text(call.child_by_field_name("function")) != "__ldg":
                raise Refused(f"the address `{text(parent)}` is taken: only loads are kept in "
                              "registers", parent)
            node = call
        out.append(_Read(node, o.d, o.e, o.row, o.col))
    uses = [n for n in walk(plan.body) if n.type == "identifier" and text(n) == src
            and (n.parent is None or n.parent.type not in ("subscript_expression",
                                                          "pointer_declarator"))]
    if uses:
        raise Refused(f"`{src}` is used other than by reading `{src}[...]` "
                      f"(`{text(uses[0].parent or uses[0])}`)", uses[0])
    return out


def _check_rows(plan: Plan, ydecl: Node, later: Node, x: str, y: str) -> None:
    """The per-output work may read ``y`` but not assign it, and no one reads the block's or
    the grid's y (they change with BLOCK_Y and OUT_Y); statements between the two index
    declarations do not read ``y``."""
    batch = len(plan.grid) == 3  # a block of one z, the grid's z the batch: z as written
    for n in walk(plan.body):
        if n.type == "field_expression" and not (ydecl.start_byte <= n.start_byte
                                                 < ydecl.end_byte):
            for name in ("threadIdx", "blockDim", "blockIdx", "gridDim"):
                dim = builtin(n, name)
                if (dim == "y" or (dim == "z" and not batch) or (
                        name == "gridDim" and dim is not None and dim != "z")):
                    raise Refused(f"`{text(n)}` is read outside the row's declaration: the "
                                  "block's rows change with BLOCK_Y and OUT_Y", n)
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is not None and text(target) in (x, y):
                raise Refused(f"the point's index is assigned (`{text(n)}`)", n)
    between = [s for s in statements(plan.body)
               if ydecl.end_byte <= s.start_byte < later.start_byte]
    for s in between:
        if _mentions(s, y):
            raise Refused(f"`{text(s)}` reads {y} before the work after the indices", s)


# -- the rewrite ---------------------------------------------------------------------------

def _emit(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Facts) -> None:
    data, rw = plan.source.data, plan.rw
    names = fresh_names(plan, ["BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X"])
    bx, by, oy, ox = names["BLOCK_X"], names["BLOCK_Y"], names["OUT_Y"], names["OUT_X"]
    ysize = idx["y"][2]
    ydecl_text = f"{_decl_type(data, f.ydecl)} wb_y0 = ({_value(data, f.ydecl, ysize, by)}) " \
        f"* {oy};  // the first of this thread's {oy} rows"
    loop = _walk(plan, f, oy, f"{_decl_type(data, f.ydecl)} {f.y} = wb_y0 + wb_k;")
    texts = {f.ydecl.start_byte: ydecl_text}
    xsize = idx["x"][2]
    if f.xdecl is None:
        if builtin(xsize, "blockDim") is None:
            rw.replace(xsize, bx)
    else:
        # OUT_X columns BLOCK_X apart (a warp's row of each stays coalesced), each walking its
        # own OUT_Y rows with its own window
        step = "blockDim.x" if builtin(xsize, "blockDim") is not None else bx
        typ = _decl_type(data, f.xdecl)
        texts[f.xdecl.start_byte] = (f"{typ} wb_x0 = {_value(data, f.xdecl, xsize, f'({step} * {ox})')};"
                                     f"  // the first of this thread's {ox} columns")
        loop = (f"\n#pragma unroll\n  for (int wb_j = 0; wb_j < {ox}; ++wb_j) {{\n"
                f"    {typ} {f.x} = wb_x0 + wb_j * {step};{loop}\n  }}")
    for s in f.rest:
        rw.replace(s, "")
    for decl in {f.ydecl, f.later, *([f.xdecl] if f.xdecl is not None else [])}:
        at = texts.get(decl.start_byte)
        tail = loop if decl == f.later else ""
        if at is not None:
            rw.replace(decl, at + tail)
        elif tail:
            rw.insert(decl.end_byte, tail)
    _params(plan, idx, f, (bx, by, oy, ox))


def _decl_type(data: bytes, decl: Node) -> str:
    declarator = decl.children_by_field_name("declarator")[0]
    return data[decl.start_byte:declarator.start_byte].decode().strip()


def _value(data: bytes, decl: Node, size: Node, new: str) -> str:
    """The declaration's value with the block size ``size`` (a literal) made ``new``; a
    ``blockDim`` size is made ``new`` too where ``new`` scales it."""
    value = decl.children_by_field_name("declarator")[0].child_by_field_name("value")
    assert value is not None
    scaled = "*" in new
    return render(data, value, lambda n: new if n == size and (
        scaled or builtin(n, "blockDim") is None) else None)


def _walk(plan: Plan, f: _Facts, oy: str, each: str) -> str:
    """The windows and the loop over the thread's outputs (``each`` declares the point)."""
    data = plan.source.data
    window = {e: lo_hi for e, lo_hi in f.columns.items() if lo_hi[1] > lo_hi[0]}
    read_at = {r.node.start_byte: r for r in f.reads}
    # Read-only loads (the non-coherent path): the input is const-qualified and never stored
    # by the kernel; an output aliasing it would race between the kernel's own threads (a
    # neighbour's point is stored by another thread), so the path changes no defined result.
    ro = "const" in (_array_type(plan, f.src) or "").split("*")[0] and \
        f.elem in LDG_TYPES
    if any(r.column in window and (ro or r.node.type == "call_expression") for r in f.reads):
        plan.helper(_ONCE_LDG)
    if any(r.column in window and not ro and r.node.type != "call_expression" for r in f.reads):
        plan.helper(_ONCE)

    last = _last_exit(plan, f)

    def sub(n: Node) -> str | None:
        r = read_at.get(n.start_byte)
        if r is None or n.end_byte != r.node.end_byte:
            if n.type != "return_statement":
                return None
            return "break;" if last is not None and n.start_byte == last.start_byte \
                else "continue;"
        if r.node.type == "call_expression":  # __ldg(&src[i])
            args = r.node.child_by_field_name("arguments")
            assert args is not None
            address = text(args.named_children[0])
        else:
            address = f"&{text(r.node)}"
        if r.column not in window:
            return f"__ldg({address})" if ro else None
        at = f"wb_k + {r.d - window[r.column][0]}"
        name = _window(r.column)
        once = "wb_once_ldg" if ro or r.node.type == "call_expression" else "wb_once"
        return f"{once}({name}_has[{at}], {name}[{at}], {address})"

    body = "\n".join("    " + render(data, s, sub) for s in f.rest)
    windows = "".join(
        f"  {f.elem} {_window(e)}[{oy} + {hi - lo}];  // rows {lo:+d} .. {hi:+d} of the "
        f"outputs, column {e[0]:+d}{' wrapped' if e[1] else ''}\n"
        f"  bool {_window(e)}_has[{oy} + {hi - lo}];\n"
        f"#pragma unroll\n  for (int wb_r = 0; wb_r < {oy} + {hi - lo}; ++wb_r) "
        f"{_window(e)}_has[wb_r] = false;\n"
        for e, (lo, hi) in sorted(window.items()))
    return (f"\n  // each input value of the thread's column strip is loaded once, by the first "
            f"output that reads it, and kept for the outputs below\n{windows}"
            f"#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{\n"
            f"    {each}\n{body}\n  }}")


def _last_exit(plan: Plan, f: _Facts) -> Node | None:
    """The ``return`` of the work's first statement ``if (C) return;`` where ``C`` holds for
    every later output once it holds for one (an ``||`` / ``&&`` of tests ``y >= E``, ``y >
    E`` and tests free of ``y``, ``E`` of the column, the kernel's unassigned arguments and
    literals): the thread's outputs below fail it too, so the walk may stop there (the
    compiler then knows each window slot an earlier output loaded is loaded); else None."""
    first = f.rest[0] if f.rest else None
    cond = first.child_by_field_name("condition") if first is not None and \
        first.type == "if_statement" and first.child_by_field_name("alternative") is None \
        else None
    then = first.child_by_field_name("consequence") if first is not None else None
    if then is not None and then.type == "compound_statement" and then.named_child_count == 1:
        then = then.named_children[0]
    if cond is None or then is None or then.type != "return_statement" or \
            then.named_child_count or cond.named_child_count != 1 or \
            not _rising(plan, f, strip(cond.named_children[0])):
        return None
    return then


def _rising(plan: Plan, f: _Facts, cond: Node) -> bool:
    """``cond`` stays true as ``f.y`` grows (see :func:`_last_exit`)."""
    parts = binary(cond)
    if parts is None:
        return _fixed(plan, f, cond)
    left, op, right = strip(parts[0]), parts[1], strip(parts[2])
    if op in ("||", "&&"):
        return _rising(plan, f, left) and _rising(plan, f, right)
    if op in ("<=", "<"):
        left, right, op = right, left, {"<=": ">=", "<": ">"}[op]
    if op in (">=", ">") and left.type == "identifier" and text(left) == f.y and \
            _fixed(plan, f, right):
        return True
    return _fixed(plan, f, cond)


def _fixed(plan: Plan, f: _Facts, node: Node) -> bool:
    """``node`` is one value for a thread's outputs of one column: it reads the column,
    unassigned kernel arguments and literals only."""
    params = {p.name for p in plan.kernel.params}
    for n in walk(node):
        if n.type in ("call_expression", "subscript_expression", "field_expression",
                      "assignment_expression", "update_expression", "pointer_expression"):
            return False
        if n.type == "identifier" and text(n) != f.x and (
                text(n) == f.y or text(n) not in params or
                (text(n) in plan.facts.defs and plan.facts.defs[text(n)].assigned) or
                any(a.type in ("assignment_expression", "update_expression") and
                    _mentions(a.child_by_field_name("left") or
                              a.child_by_field_name("argument") or a, text(n))
                    for a in walk(plan.body))):
            return False
    return True


#: A window slot read by the first output that needs it (function calls are sequenced, so
#: two reads of one slot in one expression are well defined); the address is the kernel's own.
_ONCE = """template <typename T>
__device__ __forceinline__ T wb_once(bool& have, T& slot, const T* at) {
  if (!have) { slot = *at; have = true; }
  return slot;
}"""
_ONCE_LDG = """template <typename T>
__device__ __forceinline__ T wb_once_ldg(bool& have, T& slot, const T* at) {
  if (!have) { slot = __ldg(at); have = true; }
  return slot;
}"""


def _window(column: _Column) -> str:
    e, wrap = column
    return f"wb_col_{'m' if e < 0 else 'p'}{abs(e)}{'_' + wrap.replace(':', '_') if wrap else ''}"


def _window_regs(f: _Facts, oy: int) -> int:
    """Values and flags (predicates, counted as half a register each) of the windows."""
    return sum((3 * (oy + hi - lo) + 1) // 2 for lo, hi in f.columns.values() if hi > lo)


def _params(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Facts,
            names: tuple[str, str, str, str]) -> None:
    bx, by, oy, ox = names
    wx, wy = literal(plan.block[0]) or 1, literal(plan.block[1]) or 1
    for name, written, values, axis in ((bx, wx, BLOCK_X_VALUES, "x"),
                                        (by, wy, BLOCK_Y_VALUES, "y")):
        plan.add_param(name, {"kind": "choice", "values": sorted(
            {written, *(v for v in values if v >= min(values[0], written))}), "default": written,
            "description": f"threads per block along {axis} (as written: {written})"},
            f"{idx[axis][0].start_point.row + 1}: {text(idx[axis][0])}")
    _out_y(plan, f, oy)
    if f.xdecl is not None:
        plan.add_param(ox, {"kind": "choice", "values": OUT_X_VALUES, "default": 1,
                            "description": f"columns ({f.x}) per thread, {bx} apart, each "
                                           f"walking its {oy} rows (as written: 1)"},
                       f"{f.xdecl.start_point.row + 1}: {text(f.xdecl)}")
        plan.constrain(f"{ox} * {oy} <= {MAX_OUTPUTS}")
    cols = f"{bx} * {ox}" if f.xdecl is not None else bx
    gx = scale_divisor(plan.grid[0], plan.block[0], cols)
    if gx is None and f.xdecl is not None:
        raise Refused(f"the grid's x extent `{plan.grid[0]}` is not a division by the block's "
                      f"columns {plan.block[0]}", f.xdecl)
    gx = gx or plan.grid[0]
    gy = scale_divisor(plan.grid[1], plan.block[1], f"{by} * {oy}")
    if gy is None:
        raise Refused(f"the grid's y extent `{plan.grid[1]}` is not a division by the block's "
                      f"rows {plan.block[1]}", f.ydecl)
    plan.grid = [gx, gy, *plan.grid[2:]]
    plan.block = [bx, by, *plan.block[2:]]
    plan.launch_bounds = f"{bx} * {by}"
    plan.constrain(f"{bx} * {by} >= 32")
    plan.constrain(f"{bx} * {by} <= 1024")
    _min_blocks(plan, f, f"{bx} * {by}", oy, ox if f.xdecl is not None else "1")
    plan.note("OUT_Y", True, f"each thread computes {oy} consecutive rows of the "
              f"{len({(r.d, r.column) for r in f.reads})}-point stencil down its column; each "
              f"value of {f.src} it reads is loaded once (a register window per column "
              f"offset) and feeds every output that reads it; the block is {bx} x {by} and the "
              f"grid's y divisor {by} * {oy}", f.ydecl)


def _out_y(plan: Plan, f: _Facts, oy: str) -> None:
    values = [v for v in OUT_Y_VALUES if _window_regs(f, v) <= MAX_WINDOW]
    plan.add_param(oy, {"kind": "choice", "values": values, "default": 1,
                        "description": f"consecutive output rows ({f.y}) per thread; each input "
                                       f"value of the thread's column strip is loaded once "
                                       "(as written: 1)"},
                   f"{f.ydecl.start_point.row + 1}: {text(f.ydecl)}")


def _min_blocks(plan: Plan, f: _Facts, threads: str, oy: str, ox: str = "1") -> None:
    if _min_blocks_follows(plan):
        # the window's values and flags are live across the thread's outputs: a register cap
        # from a minimum of resident blocks below them would spill the window
        need = " + ".join(f"2 * ({oy} + {hi - lo})" for lo, hi in f.columns.values()
                          if hi > lo)
        need = f"{ox} * ({need})" if ox != "1" else need
        plan.constrain(f"MIN_BLOCKS_PER_SM == 0 or {need} + {WORKING_REGS} <= 65536 // "
                       f"(({threads}) * MIN_BLOCKS_PER_SM)")
