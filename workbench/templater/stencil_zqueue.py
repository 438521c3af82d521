"""Z_QUEUE: a thread that marches Z_ITEMS planes (:mod:`.stencil_zgrid`) keeps the input
values its planes share in a register queue, loaded once each.

Where Z_ITEMS makes a thread run the body for planes ``z, z + 1, ...`` one after another, a
3-D stencil's reads of plane ``z + d`` at in-plane offset ``G`` are, one plane later, its
reads of plane ``(z + 1) + (d - 1)`` at ``G``: a box of radius 1 loads each input value
three times (27 loads an output where 9 are new), which only L1 or L2 serve again. Known
practice (2.5-D blocking, the z-march of plane sums in registers) keeps them in registers.

Recognised on the parse, whatever the spelling: every read ``A[P]`` of a const input ``A``
(a pointer parameter whose pointee is const) whose index, as an integer polynomial over the
kernel's names (single-assignment locals expanded), depends on ``blockIdx.z`` as
``P = blockIdx.z * S + rest`` with one plane stride ``S`` for every such read; ``rest`` may
hold counters of enclosing loops with constant bounds (``for (int dz = -1; dz <= 1; dz++)``,
``for (int a = 0; a < 3; ++a)``) and names a plane does not change (kernel arguments,
macros, thread and block indices other than ``blockIdx.z``). Each value of the counters
gives the read a plane offset ``d`` (``rest``'s multiple of ``S``) and an in-plane offset
``G``: the queue's row ``d`` and its slot for ``G`` (counted the same way for every read,
so ``in[c]`` and the box's centre share a slot where their offsets are one polynomial); a
read's row and slot are affine in its counters, constants once its loops are unrolled.

The rewrite (``Z_QUEUE = 1``; 0 is the kernel as written): the queue and a flag a slot are
declared before the planes' loop; a read returns its slot, loading it first where its flag
is clear (``wb_zq_once``: loaded exactly where the kernel as written loads, so no address the
kernel does not read is touched); at each later plane the rows move down one and the top
row's flags clear. Every output is computed by the same operations on the same values as
written (bit-identical). Legal because the input is const and only read: an output aliasing
it would race between the kernel's own threads (a neighbour's point is stored by another
thread), so a value kept from an earlier plane changes no defined result. The loops around
the reads are unrolled under ``Z_QUEUE`` (a queue indexed at run time would live in local
memory). Reads whose index does not move with the plane, or whose counters have no constant
bounds, are left as written; anything that would make a read's slot unknown is refused with
the reason and the line.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import strip, text, walk
from workbench.templater.apron_window import loop_range
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, _locals
from workbench.templater.rewrite import Rewriter
from workbench.templater.stencil import Poly, Polys, add, derivative, mul, scale
from workbench.templater.stencil_rows import _LDG_TYPES
from workbench.templater.warp_regs import _min_blocks_follows

KNOB = "Z_QUEUE"
#: an in-plane offset: its polynomial's (monomial, coefficient) pairs, sorted
Key = tuple[tuple[tuple[str, ...], int], ...]
PLANE = "blockIdx.z"
#: counter values one read is enumerated at (a 7 x 7 x 7 box at most)
MAX_CELLS = 343
#: planes a queue holds (z - 4 .. z + 4)
MAX_ROWS = 9
#: slots of a row (an in-plane 9 x 9 neighbourhood)
MAX_SLOTS = 81

#: the read of a queued value (the kernel as written's load at Z_QUEUE 0); a row's flags are
#: the bits of 32-bit words (one register a word, where a flag a slot took one each)
ACCESS = (f"#if {KNOB}\n"
          "#define wb_zq_at(load, q, row, slot, at) wb_zq_once<load>(q##_has[row][(slot) / 32], "
          "1u << ((slot) % 32), q[row][slot], at)\n"
          f"#else\n#define wb_zq_at(load, q, row, slot, at) (*(at))\n#endif")
#: a queue slot, loaded where its flag bit is clear (``LDG``: through the read-only path)
ONCE = """template <bool LDG, typename T>
__device__ __forceinline__ T wb_zq_once(unsigned& have, unsigned bit, T& slot, const T* at) {
  if (!(have & bit)) {
    if constexpr (LDG) slot = __ldg(at); else slot = *at;
    have |= bit;
  }
  return slot;
}"""


@dataclass(frozen=True)
class Site:
    """One queued read: its subscript, its row and slot (C expressions of its counters) and
    the loops to unroll around it."""

    node: Node
    row: str
    slot: str
    loops: tuple[Node, ...]


@dataclass(frozen=True)
class Queue:
    """One input's queue: ``rows`` planes of ``slots`` values of type ``elem``."""

    array: str
    name: str
    elem: str
    rows: int
    slots: int
    sites: tuple[Site, ...]

    @property
    def load(self) -> str:
        """``wb_zq_once``'s LDG argument: the read-only path where ``__ldg`` takes the type."""
        return "true" if self.elem in _LDG_TYPES else "false"

    @property
    def words(self) -> int:
        return (self.slots + 31) // 32

    def declare(self) -> str:
        return (f"  {self.elem} {self.name}[{self.rows}][{self.slots}];  // planes of {self.array} "
                "this thread's walk shares\n"
                f"  unsigned {self.name}_has[{self.rows}][{self.words}] = {{}};  // loaded slots' "
                "bits\n")

    def shift(self) -> str:
        q, r, s, w = self.name, self.rows, self.slots, self.words
        return ("#pragma unroll\n"
                f"    for (int wb_r = 0; wb_r + 1 < {r}; ++wb_r) {{\n#pragma unroll\n"
                f"      for (int wb_s = 0; wb_s < {s}; ++wb_s) {q}[wb_r][wb_s] = "
                f"{q}[wb_r + 1][wb_s];\n#pragma unroll\n"
                f"      for (int wb_w = 0; wb_w < {w}; ++wb_w) {q}_has[wb_r][wb_w] = "
                f"{q}_has[wb_r + 1][wb_w];\n    }}\n"
                f"#pragma unroll\n    for (int wb_w = 0; wb_w < {w}; ++wb_w) "
                f"{q}_has[{r - 1}][wb_w] = 0u;\n")


def analyse_queues(plan: Plan) -> list[Queue]:
    """The queues of every const input read at the walk's planes (see the module doc);
    [] when no read moves with the plane. Raises Refused with the read it is about."""
    polys = Polys(plan.body, set())
    locals_ = _locals(plan.body)
    out: list[Queue] = []
    for param in plan.kernel.params:
        reads = [n for n in walk(plan.body) if n.type == "subscript_expression" and
                 text(strip(n.child_by_field_name("argument"))) == param.name]  # type: ignore[arg-type]
        moving = [(n, polys.of(_index(n))) for n in reads]
        moving = [(n, p) for n, p in moving if derivative(p, PLANE)]
        if moving and not param.is_const:
            if all(_stored(n) for n, _p in moving):
                continue  # an output, only stored
            raise Refused(f"{param.name} is read at the walk's planes but is not a const "
                          "input (a value kept from an earlier plane could be stale)",
                          moving[0][0])
        if moving:
            out.append(_queue(plan, param.name, param.base_type, f"wb_zq{len(out)}", moving,
                              set(locals_)))
    if out and all(q.rows == 1 for q in out):
        raise Refused("every queued read is of the walk's own plane: no value is shared "
                      "between planes", out[0].sites[0].node)
    return out


def _stored(sub: Node) -> bool:
    """Whether ``sub`` is the target of a plain ``=`` (stored, not read)."""
    parent = sub.parent
    return parent is not None and parent.type == "assignment_expression" and \
        parent.child_by_field_name("left") == sub and \
        text(parent.child_by_field_name("operator")) == "="


def _index(sub: Node) -> Node:
    idx = sub.child_by_field_name("indices")
    if idx is None or len(idx.named_children) != 1:
        raise Refused(f"`{text(sub)}` is not one index", sub)
    return idx.named_children[0]


@dataclass(frozen=True)
class _Read:
    node: Node
    counters: tuple[tuple[str, range], ...]
    loops: tuple[Node, ...]
    cells: tuple[tuple[int, Key], ...]  # (plane offset, G key) each


def _queue(plan: Plan, array: str, elem: str, name: str, moving: list[tuple[Node, Poly]],
           body_locals: set[str]) -> Queue:
    strides = {tuple(sorted(derivative(p, PLANE).items())) for _n, p in moving}
    if len(strides) != 1:
        raise Refused(f"{array} is read at planes of different strides", moving[0][0])
    stride = dict(next(iter(strides)))
    if any(PLANE in m for m in stride):
        raise Refused(f"{array}'s index is not linear in the plane", moving[0][0])
    lead = max(stride, key=lambda m: (len(m), m))
    reads = sorted((_read(plan, n, p, stride, lead, body_locals) for n, p in moving),
                   key=lambda r: -len(r.cells))
    offsets = [d for r in reads for d, _g in r.cells]
    low, rows = min(offsets), max(offsets) - min(offsets) + 1
    if rows > MAX_ROWS:
        raise Refused(f"{array} is read at {rows} planes (at most {MAX_ROWS} are queued)",
                      reads[0].node)
    slot_of: dict[Key, int] = {}
    sites: list[Site] = []
    taken: list[int] = []  # every slot a read takes
    count = 0
    for r in reads:
        slots = _slots(r, slot_of, taken)
        taken += slots
        count = max(count, 1 + max(slots))
        sites.append(Site(r.node, _affine(r, [d - low for d, _g in r.cells]),
                          _affine(r, slots), r.loops))
    if count > MAX_SLOTS:
        raise Refused(f"{array}'s reads take {count} in-plane offsets (at most {MAX_SLOTS} are "
                      "queued)", reads[0].node)
    return Queue(array, name, elem, rows, count, tuple(sites))


def _read(plan: Plan, node: Node, p: Poly, stride: Poly, lead: tuple[str, ...],
          body_locals: set[str]) -> _Read:
    counters: dict[str, range] = {}
    loops: list[Node] = []
    up = node.parent
    while up is not None and up != plan.body:
        got = loop_range(up) if up.type == "for_statement" else None
        if got is not None and got[0] not in counters:
            counters[got[0]] = got[1]
            loops.append(up)
        up = up.parent
    atoms = {a for m in p for a in m}
    used = sorted(a for a in atoms if a in counters)
    for a in sorted(atoms - set(used) - {PLANE}):
        if a in body_locals or not a.replace(".", "").isidentifier():
            raise Refused(f"`{a}` in `{text(node)}` is neither a counter of a loop with "
                          "constant bounds nor a name a plane leaves unchanged", node)
    ranges = [counters[a] for a in used]
    if any(len(r) == 0 for r in ranges) or _product(ranges) > MAX_CELLS:
        raise Refused(f"`{text(node)}`'s counters take more than {MAX_CELLS} values", node)
    cells = []
    for values in itertools.product(*ranges):
        rest = add(_substitute(p, dict(zip(used, values, strict=True))),
                   scale(mul({(PLANE,): 1}, stride), -1))
        if any(PLANE in m for m in rest) or rest.get(lead, 0) % stride[lead]:
            raise Refused(f"`{text(node)}` is not at a whole plane from the walk's plane", node)
        d = rest.get(lead, 0) // stride[lead]
        cells.append((d, tuple(sorted(add(rest, scale(stride, -d)).items()))))
    kept = tuple((a, counters[a]) for a in used)
    return _Read(node, kept, tuple(lp for lp in loops if _counter(lp) in used),
                 tuple(cells))


def _counter(loop: Node) -> str:
    got = loop_range(loop)
    return got[0] if got is not None else ""


def _product(ranges: list[range]) -> int:
    out = 1
    for r in ranges:
        out *= len(r)
    return out


def _substitute(p: Poly, values: dict[str, int]) -> Poly:
    out: Poly = {}
    for m, c in p.items():
        keep = tuple(a for a in m if a not in values)
        for a in m:
            if a in values:
                c *= values[a]
        out = add(out, {keep: c})
    return out


def _slots(r: _Read, slot_of: dict[Key, int],
           taken: list[int]) -> list[int]:
    """Each cell's slot: the slots its keys have where every key has one and they are
    affine in the counters; else a fresh row-major block over the counters that move ``G``
    (a key met first here takes its cell's slot)."""
    keys = [g for _d, g in r.cells]
    if all(k in slot_of for k in keys):
        found = [slot_of[k] for k in keys]
        if _fits(r, found):
            return found
    base = 1 + max([*slot_of.values(), *taken], default=-1)
    moving = [i for i, (_a, rng) in enumerate(r.counters)
              if len(rng) > 1 and _moves_key(r, i)]
    strides, size = {}, 1
    for i in reversed(moving):
        strides[i] = size
        size *= len(r.counters[i][1])
    out = []
    for cell, values in zip(keys, itertools.product(*(rng for _a, rng in r.counters)),
                            strict=True):
        slot = base + sum(strides[i] * (values[i] - r.counters[i][1][0]) for i in moving)
        slot_of.setdefault(cell, slot)
        out.append(slot)
    return out


def _moves_key(r: _Read, i: int) -> bool:
    """Whether counter ``i`` changes a cell's in-plane key (the others at their first)."""
    firsts = [rng[0] for _a, rng in r.counters]
    cells = dict(zip(itertools.product(*(rng for _a, rng in r.counters)), r.cells, strict=True))
    second = list(firsts)
    second[i] = r.counters[i][1][1]
    return cells[tuple(firsts)][1] != cells[tuple(second)][1]


def _fits(r: _Read, values: list[int]) -> bool:
    try:
        _affine(r, values)
    except Refused:
        return False
    return True


def _affine(r: _Read, values: list[int]) -> str:
    """A C expression of the read's counters that is ``values`` at each cell (in the order
    of ``itertools.product`` over the counters); Refused where none is affine."""
    grid = list(itertools.product(*(rng for _a, rng in r.counters)))
    at = dict(zip(grid, values, strict=True))
    firsts = tuple(rng[0] for _a, rng in r.counters)
    base = at[firsts]
    coef = []
    for i, (_a, rng) in enumerate(r.counters):
        step = list(firsts)
        step[i] = rng[1] if len(rng) > 1 else rng[0]
        coef.append(at[tuple(step)] - base if len(rng) > 1 else 0)
    for cell, v in at.items():
        if base + sum(c * (x - f) for c, x, f in zip(coef, cell, firsts, strict=True)) != v:
            raise Refused(f"`{text(r.node)}`'s queue slot is not affine in its counters",
                          r.node)
    parts = [str(base)] + [f"{c} * ({a} - ({rng[0]}))" for c, (a, rng) in
                           zip(coef, r.counters, strict=True) if c]
    return "(" + " + ".join(parts) + ")"


def emit_queues(plan: Plan, queues: list[Queue], items: str) -> None:
    """The reads' rewrite, the loops' unrolling, the helpers and the knob (the declarations
    and the shift go into the planes' loop: :meth:`Queue.declare`, :meth:`Queue.shift`)."""
    rw = plan.rw
    loops: dict[int, Node] = {}
    for q in queues:
        for site in q.sites:
            start, end = site.node.start_byte, site.node.end_byte

            def make(rw: Rewriter, q: Queue = q, site: Site = site, start: int = start,
                     end: int = end) -> str:
                inner = rw.render(start, end)
                return f"wb_zq_at({q.load}, {q.name}, {site.row}, {site.slot}, &({inner}))"
            rw.replace_span(start, end, make=make)
            loops.update({lp.start_byte: lp for lp in site.loops})
    plan.helper(ONCE)
    plan.helper(ACCESS)
    for start, loop in sorted(loops.items()):
        column = loop.start_point.column
        unroll = f"#if {KNOB}\n#pragma unroll\n#endif\n"
        if not plan.source.data[start - column:start].strip():  # the loop opens its line
            rw.insert(start - column, unroll)
        else:
            rw.insert(start, f"\n{unroll}{' ' * column}")
    first = queues[0].sites[0].node
    plan.add_param(KNOB, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: the input values consecutive planes share are "
                                         "kept in registers, loaded once each (0: read again "
                                         "at each plane, as written)"},
                   f"{first.start_point.row + 1}: {text(first)}")
    plan.constrain(f"{KNOB} == 0 or {items} > 1")
    if _min_blocks_follows(plan):
        # the queues' values and about 32 working registers under MIN_BLOCKS_PER_SM's cap
        # (else they spill: a cap of 32 at 512 threads x 4 blocks)
        kept = sum(q.rows * q.slots for q in queues)
        plan.constrain(f"{KNOB} == 0 or MIN_BLOCKS_PER_SM == 0 or {kept} + 32 <= 65536 // "
                       f"(({plan.launch_bounds}) * MIN_BLOCKS_PER_SM)")
    for q in queues:
        plan.note(KNOB, True, f"{len(q.sites)} read(s) of {q.array} move with the plane: "
                  f"{q.rows} planes of {q.slots} in-plane offset(s) queued in registers, "
                  "each loaded once (where the kernel as written loads it)", q.sites[0].node)
