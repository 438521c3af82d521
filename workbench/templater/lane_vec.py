"""LANE_VEC: each lane of the lane-inner layout owns LANE_VEC consecutive channels.

Where :mod:`.const_items` finds the lane-inner layout (K channels of a pixel over K lanes:
``c = threadIdx.x % K``, or ``threadIdx.x`` of a (K, P) block), every global read and write
the lane feeds is one 4-byte access a lane. Known practice for channels-last depthwise and
per-channel elementwise kernels is to give a lane VEC consecutive channels and move them as
one 8- or 16-byte access (float2 / float4): half or a quarter of the load and store
instructions for the same bytes, and the per-channel table reads of a lane come in the same
groups. The pixel then takes K / VEC lanes, so the block is (K / VEC) x P threads.

``LANE_VEC = 1`` is the kernel as written. At 2 or 4 the lane's first channel is
``lane * LANE_VEC`` and every value that is the lane's channel's (a read at the lane's index,
a local computed from one) becomes a ``wb_lanes<float, LANE_VEC>`` of its channels, whose
operators and math functions act channel by channel: each channel's output is computed by the
same operations on the same values as written (bit-identical).

The rule, checked on the parse (else refused with the reason and the line):

- every use of the lane (and of the integer locals computed from it) is inside the index of
  a read or write whose index, single-assignment locals expanded, is ``lane + R`` with unit
  coefficient: the lane is the fastest index (a lane at another stride, a lane in a
  condition, a call or another expression is refused);
- global accesses: the array is a ``float`` pointer parameter and every coefficient of ``R``
  divides by LANE_VEC. The harness allocates each pointer (a 256-byte aligned start) and the
  rows are whole multiples of the channels, so ``CHANNELS * 4 % (LANE_VEC * 4) == 0`` and the
  lane's first channel being a multiple of LANE_VEC make each access LANE_VEC * 4-byte
  aligned;
- per-channel tables in ``__constant__`` memory (``taps[k * C + c]``, ``scale[c]``,
  ``w[k][c]``): the lane only in the last index, at unit stride; a constant array is 4-byte
  aligned (its declaration cannot carry an alignment the folder loader reads), so its
  LANE_VEC entries are read one by one and assembled (no alignment needed); CONST_VIA's
  shared copy is declared 16-byte aligned, so where the other coefficients of the index (and
  the row of a 2-D table) divide by the widest LANE_VEC it is read as one vector;
- the lane's values are ``float`` locals (one declarator, not arrays) and flow only through
  ``+ - * /``, unary minus, the float math functions of :data:`MATH` and assignments to
  such locals or to the accesses above (never into a condition, a comparison, an index, a
  cast or another call); no double literal meets them (a float op keeps its float rounding);
- the lanes of a pixel K divide by LANE_VEC (the values offered are those of 2 and 4 that
  divide K and every global coefficient).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.core.module_constants import module_globals
from workbench.templater.analysis import binary, builtin, int_value, strip, terms, text, walk
from workbench.templater.const_items import LaneLayout
from workbench.templater.const_lanes import declaration_of
from workbench.templater.plan import Plan
from workbench.templater.regtile import single_assignment_values
from workbench.templater.rewrite import Rewriter, TextFn
from workbench.templater.stencil import add, derivative, poly_of
from workbench.templater.vector import Illegal
from workbench.templater.warp_regs import _min_blocks_follows

KNOB = "LANE_VEC"
#: The type of a lane's channels' values (``float`` at LANE_VEC = 1).
FLOAT = "wb_lv_float"
#: Float math functions applied channel by channel (each keeps its float arguments).
MATH = frozenset({"fmaxf", "fminf", "fmaf", "expf", "__expf", "exp2f", "logf", "__logf",
                  "log1pf", "sqrtf", "rsqrtf", "fabsf", "tanhf", "sinf", "cosf", "__sinf",
                  "__cosf", "erff", "erfcf", "__fdividef", "powf", "__powf", "floorf",
                  "ceilf", "truncf", "roundf", "rintf", "copysignf", "max", "min", "fmax",
                  "fmin", "__saturatef"})
_ARITH = ("+", "-", "*", "/")
_COMPOUND = ("=", "+=", "-=", "*=", "/=")
_WIDTHS = (1, 2, 4)


@dataclass(frozen=True)
class Site:
    """A read or write at the lane's index: its subscript and whether it is assembled from
    element reads (a ``__constant__`` table) or one vector access (a global pointer)."""

    node: Node
    gather: bool
    offsets: int = 0  # the gcd of the index's other coefficients (0: none)


@dataclass(frozen=True)
class LaneVec:
    """What LANE_VEC rewrites: the accesses at the lane's index, the lane's float locals,
    the math calls on them, and the outer index's thread part (1-D blocks)."""

    layout: LaneLayout
    values: tuple[int, ...]
    sites: tuple[Site, ...]
    locals_: tuple[Node, ...]  # the type nodes of the lane's float locals
    calls: tuple[Node, ...]  # the function names of math calls on the lane's values
    thread: Node | None  # ``threadIdx.x / K`` of the outer index (None: a 2-D block)
    #: the constant tables with an aligned shared copy -> the macro that reads a lane's
    #: channels of it (filled by :func:`emit_lane_vec`, read when the file is rendered)
    staged: dict[str, str] = field(default_factory=dict)

    def covers(self, node: Node) -> bool:
        return any(_same(s.node, node) for s in self.sites)

    def access(self, node: Node, written: str) -> str:
        """The lane's channels at the access ``node`` (``written`` its text as rendered)."""
        site = next(s for s in self.sites if _same(s.node, node))
        table = self.staged.get(_indices(site.node)[0])
        if site.gather and table is not None and site.offsets % max(self.values) == 0:
            return f"{table}(&({written}))"
        if site.gather:
            return f"wb_lv_gather(&({written}))"
        return f"(*wb_lv_ptr(&({written})))"

    @property
    def thread_text(self) -> str:
        return f"threadIdx.x / ({self.layout.k} / {KNOB})"

    def consecutive(self, rw: Rewriter) -> None:
        """The thread part of the outer index as LANE_VEC makes it (for a re-render)."""
        if self.thread is not None:
            rw.replace(self.thread, self.thread_text)


def _same(a: Node, b: Node) -> bool:
    return (a.start_byte, a.end_byte) == (b.start_byte, b.end_byte)


def plan_lane_vec(plan: Plan, layout: LaneLayout) -> LaneVec | None:
    """The analysis (see the module doc): the rewrite where LANE_VEC is legal, with its
    launch edits made and its knob added; else a note why not and None. The accesses are
    rewritten by :func:`emit_lane_vec` once the register families took theirs."""
    try:
        vec = _analyse(plan, layout)
    except Illegal as exc:
        plan.note(KNOB, False, exc.reason, exc.node)
        return None
    _launch(plan, vec)
    return vec


def _analyse(plan: Plan, layout: LaneLayout) -> LaneVec:
    if KNOB in plan.params:
        raise Illegal(f"another transform lifted {KNOB}")
    lane = layout.lane_name
    values = single_assignment_values(plan.body, {lane})
    derived = _derived(values, lane)
    names = {lane} | derived
    sites, widths = _sites(plan, layout, values, names)
    if not sites:
        raise Illegal(f"no read or write is indexed by the lane `{lane}`", layout.lane_decl)
    widths = [v for v in widths if layout.k % v == 0]
    if len(widths) < 2:
        raise Illegal(f"the {layout.k} lanes of a pixel (or an access's offsets) do not divide "
                      "by 2: a lane cannot own 2 or 4 whole channels", layout.lane_decl)
    _lane_uses(plan, layout, sites, names)
    locals_ = _vector_locals(plan, layout, sites)
    calls = _contexts(plan, layout, sites, locals_)
    return LaneVec(layout, tuple(widths), tuple(sites), tuple(_type_node(d) for d in locals_),
                   tuple(calls), _thread(layout))


def _derived(values: dict[str, Node], lane: str) -> set[str]:
    """Single-assignment locals whose value (expanded) mentions the lane."""
    out = set()
    for name, value in values.items():
        opaque: list[Node] = []
        p = poly_of(value, values, opaque=opaque, divide=True)
        if any(lane in m for m in p) or any(_mentions(o, {lane}) for o in opaque):
            out.add(name)
    return out


def _mentions(node: Node, names: set[str]) -> bool:
    return any(n.type == "identifier" and text(n) in names for n in walk(node))


def _subscripts(plan: Plan, layout: LaneLayout) -> list[Node]:
    """The outermost subscripts after the lane's declaration (``a[i]``, ``w[k][c]``)."""
    start = layout.lane_decl.end_byte
    return [n for n in walk(plan.body) if n.type == "subscript_expression" and
            n.start_byte >= start and not (n.parent is not None and
                                           n.parent.type == "subscript_expression" and
                                           n.parent.child_by_field_name("argument") == n)]


def _indices(sub: Node) -> tuple[str, list[Node]]:
    """The array's name ('' where it is no identifier) and the indices, outermost first."""
    out: list[Node] = []
    node = sub
    while node.type == "subscript_expression":
        index = node.child_by_field_name("indices")
        out = (index.named_children if index is not None else []) + out
        arg = node.child_by_field_name("argument")
        if arg is None:
            return "", out
        node = strip(arg)
    return (text(node) if node.type == "identifier" else ""), out


def _sites(plan: Plan, layout: LaneLayout, values: dict[str, Node],
           names: set[str]) -> tuple[list[Site], list[int]]:
    lane = layout.lane_name
    constants = {g.name: g for g in module_globals(plan.source).values()
                 if g.qualifier == "__constant__"}
    widths = list(_WIDTHS)
    found: list[Site] = []
    for sub in _subscripts(plan, layout):
        array, indices = _indices(sub)
        lane_at = [i for i in indices if _mentions(i, names)]
        if not lane_at:
            continue
        shown = f"`{text(sub)[:60]}`"
        if lane_at != indices[-1:]:
            raise Illegal(f"the lane `{lane}` indexes {shown} other than in its last index",
                          sub)
        opaque: list[Node] = []
        p = poly_of(indices[-1], values, opaque=opaque, divide=True)
        if any(_mentions(o, names) for o in opaque) or derivative(p, lane) != {(): 1}:
            raise Illegal(f"the lane `{lane}` is not the unit-stride (fastest) index of "
                          f"{shown}: its channels are not consecutive in memory", sub)
        g = 0
        for c in add(p, {(lane,): -1}).values():
            g = math.gcd(g, c)
        gather = array in constants and not shadowed(plan, array)
        if gather:
            table = constants[array]
            if table.ctype != "float":
                raise Illegal(f"{array} holds {table.ctype}, not float", sub)
            if len(indices) > 1:  # the outer indices step by whole rows of the last extent
                g = math.gcd(g, table.counts[-1] if table.counts else 1)
        else:
            _global_float(plan, array, sub)
            widths = [v for v in widths if g % v == 0]
        found.append(Site(sub, gather, g))
    return found, widths


def shadowed(plan: Plan, name: str) -> bool:
    """Whether a kernel parameter or one of its locals is named ``name`` (a module constant
    of that name is not what the kernel reads)."""
    try:
        plan.kernel.param(name)
        return True
    except KeyError:
        return name in plan.facts.defs


def _global_float(plan: Plan, array: str, sub: Node) -> None:
    try:
        param = plan.kernel.param(array)
    except KeyError:
        param = None
    words = param.type_text.split("*")[0].split() if param is not None else []
    if param is None or not param.is_pointer or param.type_text.count("*") != 1 or \
            [w for w in words if w not in ("const", "volatile", "__restrict__")] != ["float"]:
        raise Illegal(f"`{text(sub)[:60]}` is indexed by the lane but `{array or text(sub)}` "
                      "is neither a float pointer parameter nor a float __constant__ table",
                      sub)


def _lane_uses(plan: Plan, layout: LaneLayout, sites: list[Site], names: set[str]) -> None:
    """Every use of the lane and of its derived locals is inside a site's last index or the
    value of a derived local's declaration."""
    last = [_indices(s.node)[1][-1] for s in sites]
    for n in walk(plan.body):
        if n.type != "identifier" or text(n) not in names or \
                n.start_byte < layout.lane_decl.end_byte:
            continue
        decl = declaration_of(n)
        if decl is None or _defines(n):
            continue
        if any(i.start_byte <= n.start_byte < i.end_byte for i in last):
            continue
        holder = _declaration_around(n)
        if holder is not None and set(_declared(holder)) <= names and \
                holder.parent is not None and holder.parent.type != "for_statement":
            continue
        raise Illegal(f"the lane `{text(n)}` is used in `{_line_text(n)}` other than as the "
                      "unit-stride index of a read or write: its channels would each need it",
                      n)


def _defines(n: Node) -> bool:
    up = n.parent
    return up is not None and up.type in ("init_declarator", "declaration") and \
        up.child_by_field_name("declarator") == n


def _declaration_around(n: Node) -> Node | None:
    up = n.parent
    while up is not None and up.type not in ("declaration", "compound_statement"):
        up = up.parent
    return up if up is not None and up.type == "declaration" else None


def _declared(decl: Node) -> list[str]:
    out = []
    for d in decl.children_by_field_name("declarator"):
        inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        if inner is not None:
            out.append(text(inner))
    return out


def _line_text(n: Node) -> str:
    up = n
    while up.parent is not None and up.parent.type not in ("compound_statement",
                                                           "for_statement", "if_statement"):
        up = up.parent
    return " ".join(text(up).split())[:60]


def _vector_locals(plan: Plan, layout: LaneLayout, sites: list[Site]) -> list[Node]:
    """The declarations of the locals that hold a lane's channel values (fixpoint: a local
    whose value or an assignment to it reads a site or such a local)."""
    start = layout.lane_decl.end_byte
    decls: dict[int, Node] = {}
    changed = True
    while changed:
        changed = False
        for n in walk(plan.body):
            if n.start_byte < start:
                continue
            target: Node | None = None
            value: Node | None = None
            if n.type == "init_declarator":
                target, value = n.child_by_field_name("declarator"), \
                    n.child_by_field_name("value")
            elif n.type == "assignment_expression":
                target, value = n.child_by_field_name("left"), n.child_by_field_name("right")
            if target is None or value is None or not _carries(value, sites, decls):
                continue
            decl = _local_decl(strip(target), n)
            if decl is None:
                continue  # a store: checked as a site's context
            if decl.start_byte not in decls:
                _float_local(decl, n)
                decls[decl.start_byte] = decl
                changed = True
    return list(decls.values())


def _local_decl(target: Node, at: Node) -> Node | None:
    if at.type == "init_declarator":
        return at.parent
    if target.type != "identifier":
        return None
    return declaration_of(target)


def _float_local(decl: Node, at: Node) -> None:
    typ = decl.child_by_field_name("type")
    declarators = decl.children_by_field_name("declarator")
    ok = typ is not None and text(typ) == "float" and len(declarators) == 1 and \
        (declarators[0].type == "identifier" or (
            declarators[0].type == "init_declarator" and
            (d := declarators[0].child_by_field_name("declarator")) is not None and
            d.type == "identifier")) and \
        (decl.parent is None or decl.parent.type != "for_statement")
    if not ok:
        raise Illegal(f"`{' '.join(text(decl).split())[:60]}` would hold a lane's channel "
                      "values but is not one float local", at)


def _carries(value: Node, sites: list[Site], decls: dict[int, Node]) -> bool:
    for n in walk(value):
        if any(_same(s.node, n) for s in sites):
            return True
        if n.type == "identifier":
            d = declaration_of(n)
            if d is not None and d.start_byte in decls:
                return True
    return False


def _type_node(decl: Node) -> Node:
    typ = decl.child_by_field_name("type")
    assert typ is not None
    return typ


def _contexts(plan: Plan, layout: LaneLayout, sites: list[Site],
              locals_: list[Node]) -> list[Node]:
    """Each lane value's way up the expression it is in is channel-wise; returns the names of
    the math calls it passes through."""
    starts = {d.start_byte for d in locals_}
    uses: list[Node] = [s.node for s in sites]
    for n in walk(plan.body):
        if n.type == "identifier" and n.start_byte >= layout.lane_decl.end_byte and \
                not _defines(n):
            d = declaration_of(n)
            if d is not None and d.start_byte in starts:
                uses.append(n)
    calls: dict[int, Node] = {}
    for u in uses:
        for call in _context(u, sites, starts):
            calls[call.start_byte] = call
    return list(calls.values())


def _context(use: Node, sites: list[Site], starts: set[int]) -> list[Node]:
    calls: list[Node] = []
    cur = use
    while True:
        p = cur.parent
        if p is None:
            raise Illegal(f"`{text(use)[:50]}` is outside any statement", use)
        t = p.type
        if t == "parenthesized_expression":
            cur = p
            continue
        if t == "binary_expression":
            op = text(p.child_by_field_name("operator"))
            other = p.child_by_field_name("right") if p.child_by_field_name("left") == cur \
                else p.child_by_field_name("left")
            if op not in _ARITH:
                raise Illegal(f"a lane's channel value meets `{op}` in `{text(p)[:60]}`: only "
                              "+ - * / act channel by channel", p)
            _no_double(other, p)
            cur = p
            continue
        if t == "unary_expression" and text(p.child_by_field_name("operator")) in "-+":
            cur = p
            continue
        if t == "argument_list":
            call = p.parent
            fn = call.child_by_field_name("function") if call is not None else None
            if call is None or fn is None or fn.type != "identifier" or text(fn) not in MATH:
                raise Illegal(f"a lane's channel value is passed to `{text(fn)[:30]}` in "
                              f"`{text(p.parent)[:60]}`: not a float math function known to "
                              "act channel by channel", p)
            for a in p.named_children:
                _no_double(a, call)
            calls.append(fn)
            cur = call
            continue
        if t == "init_declarator" and p.child_by_field_name("value") == cur:
            return calls  # a lane local's value (the fixpoint made it one)
        if t == "assignment_expression":
            op = text(p.child_by_field_name("operator"))
            left = p.child_by_field_name("left")
            target = strip(left) if left is not None else None
            if op not in _COMPOUND:
                raise Illegal(f"`{op}` on a lane's channel value in `{text(p)[:60]}`", p)
            if p.child_by_field_name("right") == cur:
                if target is not None and (_lane_local(target, starts) or
                                           any(_same(s.node, target) for s in sites)):
                    return calls
                raise Illegal(f"a lane's channel value is stored to `{text(left)[:40]}`, "
                              "which is neither one of the lane's locals nor its channel's "
                              "element", p)
            return calls  # the left side: a site or a lane local written
        if t == "expression_statement":
            return calls
        raise Illegal(f"a lane's channel value `{text(use)[:40]}` is used in "
                      f"`{' '.join(text(p).split())[:60]}` ({t.replace('_', ' ')}): not "
                      "channel by channel", p)


def _lane_local(target: Node, starts: set[int]) -> bool:
    if target.type != "identifier":
        return False
    d = declaration_of(target)
    return d is not None and d.start_byte in starts


def _no_double(node: Node | None, at: Node) -> None:
    for n in walk(node) if node is not None else []:
        if n.type == "number_literal" and int_value(n) is None and \
                not text(n).lower().endswith("f"):
            raise Illegal(f"the double literal {text(n)} meets a lane's channel value in "
                          f"`{text(at)[:60]}` (its rounding would change)", n)


def _thread(layout: LaneLayout) -> Node | None:
    if layout.two_d:
        return None
    for d in layout.outer_decl.children_by_field_name("declarator"):
        value = d.child_by_field_name("value")
        for _s, t in terms(value) if value is not None else []:
            parts = binary(t)
            if parts is not None and builtin(parts[0], "threadIdx") == "x":
                return t
    raise Illegal("the outer index has no threadIdx.x / K term", layout.outer_decl)


def _launch(plan: Plan, vec: LaneVec) -> None:
    """The lane's first channel, the outer index's thread part, the block and the knob."""
    lay = vec.layout
    k = lay.k
    decl = lay.lane_decl
    value = next(d.child_by_field_name("value") for d in
                 decl.children_by_field_name("declarator") if d.type == "init_declarator")
    assert value is not None
    if lay.two_d:
        plan.rw.replace(value, f"{text(value)} * {KNOB}")
        plan.block[0] = f"{plan.block[0]} // {KNOB}"
    else:
        plan.rw.replace(value, f"(threadIdx.x % ({k} / {KNOB})) * {KNOB}")
        assert vec.thread is not None
        plan.rw.replace(vec.thread, vec.thread_text)
        plan.block[0] = f"({k} // {KNOB}) * {_rest_of(plan.block[0], k)}"
    plan.launch_bounds = f"({k} / {KNOB}) * {_rest_of(plan.launch_bounds or str(k), k)}"
    # a pixel of k / LANE_VEC lanes: a block that is not whole warps leaves lanes of its last
    # warp idle (16 or 8 threads at 32 channels and one outer thread), where more outer
    # threads run the same code on whole warps; with LANE_VEC the block keeps whole warps
    threads = " * ".join(f"({b})" for b in plan.block)
    plan.constrain(f"{KNOB} == 1 or {threads} % 32 == 0")
    if _min_blocks_follows(plan):
        # a lane's channels each keep a sum, a loaded value and a table entry live across
        # the unrolled taps: under a register cap below 64 (the block's threads times the
        # resident blocks past 1024) 2 channels a lane spilled (8 bytes at 32 registers,
        # dwconv3_nhwc at 8 items x 4 rows; ptxas -v, sm_90)
        plan.constrain(f"{KNOB} == 1 or MIN_BLOCKS_PER_SM == 0 or ({plan.launch_bounds}) * "
                       "MIN_BLOCKS_PER_SM <= 1024")
    plan.add_param(KNOB, {"kind": "choice", "values": list(vec.values), "default": 1,
                          "description": f"consecutive channels a lane owns, moved as one "
                          f"{'/'.join(str(4 * v) for v in vec.values)}-byte access; a pixel "
                          f"takes {k} / {KNOB} lanes (as written: 1)"},
                   f"{decl.start_point.row + 1}: {text(decl)[:60]}")
    gathered = sorted({_indices(s.node)[0] for s in vec.sites if s.gather})
    plan.note(KNOB, True, f"the lane `{lay.lane_name}` is the unit-stride "
              f"index of {len(vec.sites)} access(es) (values {list(vec.values)}: they divide the "
              f"{k} lanes and every row offset; the pointers are allocation starts, so "
              f"CHANNELS * 4 % ({KNOB} * 4) == 0 keeps each access aligned)"
              + (f"; {', '.join(gathered)} read entry by entry (constant memory is 4-byte "
                 "aligned)" if gathered else ""), decl)


def _rest_of(rule: str, k: int) -> str:
    """``OUTER_THREADS`` of ``K * OUTER_THREADS`` (the rule as const_items wrote it)."""
    head = f"{k} * "
    return rule[len(head):] if rule.startswith(head) else f"({rule}) / {k}"


def emit_lane_vec(plan: Plan, vec: LaneVec, staged: dict[str, str], switch: str) -> None:
    """The sites the register families did not take, the locals' types, the math calls and
    the helpers. ``staged``: the constant tables ``switch`` = 1 reads from a 16-byte aligned
    shared copy (CONST_VIA's), whose lane's channels are then one vector read."""
    for typ in vec.locals_:
        plan.rw.replace(typ, FLOAT)
    for fn in vec.calls:
        plan.rw.replace(fn, f"wb_lv_{text(fn)}")
    taken = {(e.start, e.end) for e in plan.rw.edits}
    for s in vec.sites:
        if (s.node.start_byte, s.node.end_byte) not in taken:
            plan.rw.replace_span(s.node.start_byte, s.node.end_byte,
                                 make=_access(vec, s.node))
    plan.helper(_HELPERS)
    for name in sorted(staged):
        if any(s.gather and _indices(s.node)[0] == name for s in vec.sites):
            vec.staged[name] = f"wb_lv_tab_{name}"
            plan.helper(f"#if {switch} == 1 && {KNOB} > 1  // the 16-byte aligned shared "
                        f"copy of {name}\n#define wb_lv_tab_{name}(p) (*wb_lv_ptr(p))\n"
                        f"#else\n#define wb_lv_tab_{name}(p) wb_lv_gather(p)\n#endif")
    for name, arity in sorted({(text(f), _arity(f)) for f in vec.calls}):
        plan.helper(_math(name, arity))


def _access(vec: LaneVec, node: Node) -> TextFn:
    """The access as rendered (the edits inside it shown) through LANE_VEC's view."""
    def make(rw: Rewriter) -> str:
        return vec.access(node, rw.render(node.start_byte, node.end_byte))
    return make


def _arity(fn: Node) -> int:
    call = fn.parent
    args = call.child_by_field_name("arguments") if call is not None else None
    return len(args.named_children) if args is not None else 0


def _math(name: str, arity: int) -> str:
    letters = "abcd"[:arity]
    params = ", ".join(f"const {x.upper()}& {x}" for x in letters)
    tparams = ", ".join(f"typename {x.upper()}" for x in letters)
    args = ", ".join(f"wb_lv_at({x}, q)" for x in letters)
    return (f"#if {KNOB} > 1\ntemplate <{tparams}>\n__device__ __forceinline__ {FLOAT} "
            f"wb_lv_{name}({params}) {{\n  {FLOAT} r;\n#pragma unroll\n  for (int q = 0; q < "
            f"{KNOB}; ++q) r.v[q] = {name}({args});\n  return r;\n}}\n#else\n#define "
            f"wb_lv_{name} {name}\n#endif")


_HELPERS = f"""#if {KNOB} > 1  // a lane's {KNOB} consecutive channels, one value each
template <typename T, int N>
struct alignas(sizeof(T) * N) wb_lanes {{
  T v[N];
  wb_lanes() = default;
  __device__ __forceinline__ wb_lanes(T s) {{
#pragma unroll
    for (int q = 0; q < N; ++q) v[q] = s;
  }}
#define WB_LV_OP(op)                                                          \\
  __device__ __forceinline__ wb_lanes& operator op##=(const wb_lanes& o) {{    \\
    for (int q = 0; q < N; ++q) v[q] op##= o.v[q];                          \\
    return *this;                                                           \\
  }}                                                                         \\
  friend __device__ __forceinline__ wb_lanes operator op(wb_lanes a, const wb_lanes& b) {{ \\
    return a op##= b;                                                       \\
  }}
  WB_LV_OP(+) WB_LV_OP(-) WB_LV_OP(*) WB_LV_OP(/)
#undef WB_LV_OP
  friend __device__ __forceinline__ wb_lanes operator-(wb_lanes a) {{
    for (int q = 0; q < N; ++q) a.v[q] = -a.v[q];
    return a;
  }}
  friend __device__ __forceinline__ wb_lanes operator+(wb_lanes a) {{ return a; }}
}};
typedef wb_lanes<float, {KNOB}> {FLOAT};
__device__ __forceinline__ float wb_lv_at(float s, int) {{ return s; }}
__device__ __forceinline__ float wb_lv_at(const {FLOAT}& x, int q) {{ return x.v[q]; }}
// the lane's channels at p: one aligned vector access (p is LANE_VEC-aligned)
template <typename T>
__device__ __forceinline__ wb_lanes<T, {KNOB}>* wb_lv_ptr(T* p) {{
  return reinterpret_cast<wb_lanes<T, {KNOB}>*>(p);
}}
template <typename T>
__device__ __forceinline__ const wb_lanes<T, {KNOB}>* wb_lv_ptr(const T* p) {{
  return reinterpret_cast<const wb_lanes<T, {KNOB}>*>(p);
}}
// the lane's channels of a table whose alignment is not known: entry by entry
template <typename T>
__device__ __forceinline__ wb_lanes<T, {KNOB}> wb_lv_gather(const T* p) {{
  wb_lanes<T, {KNOB}> r;
#pragma unroll
  for (int q = 0; q < {KNOB}; ++q) r.v[q] = p[q];
  return r;
}}
#ifdef __CUDA_ARCH__
// read-only loads of a lane's channels (the register window's wb_once_ldg)
__device__ __forceinline__ wb_lanes<float, 2> __ldg(const wb_lanes<float, 2>* p) {{
  const float2 t = __ldg(reinterpret_cast<const float2*>(p));
  wb_lanes<float, 2> r;
  r.v[0] = t.x; r.v[1] = t.y;
  return r;
}}
__device__ __forceinline__ wb_lanes<float, 4> __ldg(const wb_lanes<float, 4>* p) {{
  const float4 t = __ldg(reinterpret_cast<const float4*>(p));
  wb_lanes<float, 4> r;
  r.v[0] = t.x; r.v[1] = t.y; r.v[2] = t.z; r.v[3] = t.w;
  return r;
}}
#endif
#else
#define {FLOAT} float
#define wb_lv_ptr(p) (p)
#define wb_lv_gather(p) (*(p))
#endif"""
