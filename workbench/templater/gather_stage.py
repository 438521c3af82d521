"""USE_SMEM for window gathers: a 2-D point kernel whose reads of its input go through a
helper taking the position (issue 28, first contact of median3x3_clamp, set 14).

A median, min/max or rank filter reads the ``k x k`` neighbourhood of its point into
registers (``p[k] = img.at(y + k / 3 - 1, x + k % 3 - 1)``, ``v[..] = pix(in, h, w, r +
dy, c + dx)``) and then works on the values: no accumulation, so the window families
(:mod:`.conv`, :mod:`.conv_centre`) do not take it, and every input value is read by
``k * k`` threads through the cache. The known practice (the expert's SMEM) stages the
block's tile with its halo in shared memory once and reads the neighbourhood from there.

Recognised by roles: a 2-D block, the point ``x = blockIdx.x * B + threadIdx.x`` and ``y
= ...`` at the top level (as written, or as :mod:`.wrap` spread them over ITEMS_X /
ITEMS_Y), then a bounds check (``if (C) return;`` or ``if (C) { ... }`` around the rest)
whose condition reads only the point and values uniform over the block; no shared memory
or barrier. Every read of memory in the checked work is a *tap*: a call ``f(.., Y, .., X,
..)`` or ``obj.m(..)`` of a read-only function of the file (:mod:`.conv_reads`; ``obj`` a
local of a class of the file built from uniform values by a constructor that writes
nothing) whose one argument ``Y`` is ``y + a`` and one ``X`` is ``x + b`` (polynomials of
the index expressions; ``a``, ``b`` read only literals, macros and the counters of loops
with compile-time bounds around the call, every combination enumerated), its other
arguments uniform. The tap is then one function ``F(Y, X)`` of the global position.

The rewrite (USE_SMEM = 1; 0 is the kernel as written): before the work, the block's
threads fill a tile of ``B_y * ITEMS_Y + amax - amin`` rows by ``B_x * ITEMS_X + bmax -
bmin`` columns with ``F`` at each tile position, then one barrier; each tap reads the tile
at its position. A position is loaded only where some output of the block that passes the
bounds check reads it through some tap (the check and the tap offsets evaluated there), so
``F`` runs only at positions the kernel as written runs it; the rest of the tile is never
read. Where ``F`` is proven safe at any position (:mod:`.clamped_reads`: it clamps its
coordinates into the ``R x C`` array the kernel's check bounds the point by, and the
kernel reads its own position), every position is loaded with no per-element test, only
the uniform one that the extents it clamps against are at least 1: the test's branches
kept each thread to one load in flight (sm_90 SASS at 32 x 4, ITEMS_Y 4: one LDG then its
STS an element; without the test, four LDGs before their four STS, as the expert's fill).
Each output reads the same values in the same order: bit for bit the kernel's. Refused,
naming the line, where any part of this does not hold.
"""

from __future__ import annotations

import ast
import copy
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, shares_or_syncs, strip, text, walk
from workbench.templater.clamped_reads import total_helper
from workbench.templater.conv import _compile_time_defs, _Window, _window
from workbench.templater.conv_reads import read_only_functions
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.regtile import (
    _ELEM,
    _MAX_SMEM,
    Refused,
    _assigned,
    apply_or_note,
    fresh_names,
    single_assignment_values,
)
from workbench.templater.stencil import (
    Poly,
    _comparisons,
    _guard,
    derivative,
    index_decls,
    poly_of,
    statements,
)

#: Taps a thread may read (a window of up to 7 x 7).
MAX_TAPS = 49
#: built-ins with one value for every thread of a block (an image plane by ``blockIdx.z``)
_BLOCK_UNIFORM = frozenset({"blockIdx", "blockDim", "gridDim"})


@dataclass(frozen=True)
class _Tap:
    call: Node
    row: Node  # the argument Y = y + a
    col: Node  # the argument X = x + b
    offsets: frozenset[tuple[int, int]]  # (a, b) over the loops around the call


def apply_gather_stage(plan: Plan) -> None:
    """USE_SMEM for a 2-D window gather (see the module doc); a note where refused."""
    if len(plan.block) != 2 or shares_or_syncs(plan.body):
        return
    stmts = statements(plan.body)
    as_written = copy.copy(plan)  # the point's block sizes as the kernel spells them
    as_written.block = [str(plan.params[b].spec["default"]) if b in plan.params else b
                        for b in plan.block]
    try:
        idx = index_decls(as_written, stmts, "xy")
    except Refused:
        return
    if set(idx) != {"x", "y"}:
        return
    apply_or_note(plan, "USE_SMEM", lambda: _analyse(plan, stmts, idx))


def _analyse(plan: Plan, stmts: list[Node], idx: dict[str, tuple[Node, str, Node]]
             ) -> Callable[[], None] | None:
    x, y = idx["x"][1], idx["y"][1]
    last = max(stmts.index(idx["x"][0]), stmts.index(idx["y"][0]))
    if any(s.type != "declaration" for s in stmts[:last]):
        return None  # work before the point: not this family
    guard, cond, out_when_true, work = _guard(stmts[last + 1:])
    defs = _compile_time_defs(plan)
    uniform = _Uniform(plan, stmts, defs)
    for n in walk(cond):
        if n.type == "identifier" and text(n) not in (x, y) and not _member_name(n) and \
                not uniform.name(text(n)):
            raise Refused(f"the bounds check reads `{text(n)}`, neither the point nor a value "
                          "uniform over the block", n)
    if {x, y} & _assigned(plan.body):
        raise Refused(f"the point ({x}, {y}) is assigned after its declaration", guard)
    taps = _taps(plan, work, x, y, uniform, defs)
    if not taps:
        return None  # no read through a helper at the point: not this family
    other = next((t for t in taps if _function(t) != _function(taps[0])), None)
    if other is not None:
        raise Refused(f"`{text(other.call)}` reads another function of the position than "
                      f"`{text(taps[0].call)}`: one tile holds one", other.call)
    size = tap_bytes(plan, taps[0].call)
    spans = (_span(plan, idx, "y"), _span(plan, idx, "x"))
    anywhere = _anywhere(plan, taps, cond, out_when_true, uniform, x, y)
    return lambda: _emit(plan, idx, cond, out_when_true, taps, uniform, size, spans, anywhere)


def _anywhere(plan: Plan, taps: list[_Tap], cond: Node, out_when_true: bool,
              uniform: _Uniform, x: str, y: str) -> tuple[str, ...] | None:
    """The kernel scalars that must be at least 1 for the taps' function to be read at any
    position (:mod:`.clamped_reads`), or None where it is not proven: the kernel's check
    must bound the point by ``y < R`` and ``x < C`` and read its own position (tap 0, 0)."""
    if not any((0, 0) in t.offsets for t in taps):
        return None
    extents: dict[str, Poly] = {}
    keep, out = ("<",), (">=",)
    for part in _comparisons(cond, "||" if out_when_true else "&&"):
        parts = binary(part)
        if parts is None:
            continue
        left, op, right = parts
        if strip(right).type == "identifier" and text(strip(right)) in (x, y):
            left, op, right = right, {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op), \
                left
        point = text(strip(left))
        if point in (x, y) and op in (out if out_when_true else keep) and \
                all(uniform.name(text(n)) for n in walk(right) if n.type == "identifier"):
            extents[point] = poly_of(right, uniform.values)
    if set(extents) != {x, y}:
        return None
    first = taps[0]
    fn = first.call.child_by_field_name("function")
    obj = strip(fn.child_by_field_name("argument") or fn) if fn is not None and \
        fn.type == "field_expression" else None
    decl = None if obj is None else next(
        (s for s in uniform.copies if any(_declared(d) == text(obj)
                                          for d in s.children_by_field_name("declarator"))),
        None)
    return total_helper(plan, first.call, first.row, first.col, uniform.values, decl,
                        (extents[y], extents[x]))


class _Uniform:
    """Names whose value is the same for every thread of the block: parameters never
    assigned, the file's constants and macros, and top-level locals declared once from such
    values without reading memory (their declarations are copied ahead of the stage)."""

    def __init__(self, plan: Plan, top: list[Node], defs: dict[str, str]) -> None:
        self.plan, self.defs, self.top = plan, defs, top
        self.params = {p.name for p in plan.kernel.params}
        self.values = single_assignment_values(plan.body, set())
        self.objects: set[str] = set()
        self.copies: list[Node] = []  # top-level declarations the stage repeats, in order

    def name(self, name: str, depth: int = 0) -> bool:
        if name in _BLOCK_UNIFORM:
            return True  # the block's own index, size and the grid's: one value a block
        if name in self.params:
            return name not in _assigned(self.plan.body)
        if name in self.defs or name in self.objects:
            return True
        value = self.values.get(name)
        if value is None or depth > 12 or _reads_memory(value):
            return False
        return all(self.name(text(n), depth + 1) for n in walk(value)
                   if n.type == "identifier" and not _member_name(n)) and self._copy(name)

    def object(self, name: str, classes: set[str]) -> bool:
        """``name`` is a top-level ``const T name(args);`` of a class of the file whose
        constructor writes nothing, built from uniform values."""
        if name in self.objects:
            return True
        verdict = read_only_functions(self.plan.source)
        for s in self.top:
            ctype, d = s.child_by_field_name("type"), s.child_by_field_name("declarator")
            if s.type != "declaration" or "const" not in {text(c) for c in s.children} or \
                    ctype is None or d is None or d.type != "function_declarator" or \
                    text(d.child_by_field_name("declarator")) != name or \
                    text(ctype) not in classes or verdict.get(text(ctype), "") is not None:
                continue
            params = d.child_by_field_name("parameters")
            args = [] if params is None else [a for a in params.named_children
                                              if a.type != "comment"]
            if all(len(a.named_children) == 1 and self.name(text(a)) for a in args):
                self.objects.add(name)
                return self._copy(name)
        return False

    def _copy(self, name: str) -> bool:
        """Repeat ``name``'s top-level declaration ahead of the stage (False: none)."""
        decl = next((s for s in self.top if s.type == "declaration" and any(
            _declared(d) == name for d in s.children_by_field_name("declarator"))), None)
        if decl is None:
            return False
        if decl not in self.copies:
            self.copies.append(decl)
        return True


def _declared(d: Node) -> str:
    """The name a declarator declares (``x = 1``, ``*img = in + ..``: ``img``)."""
    inner = d.child_by_field_name("declarator")
    if inner is None:
        return text(d)
    while inner.type in ("pointer_declarator", "reference_declarator") and \
            inner.child_by_field_name("declarator") is not None:
        inner = inner.child_by_field_name("declarator")
        assert inner is not None
    return text(inner)


def _member_name(n: Node) -> bool:
    return n.parent is not None and n.parent.type == "field_expression" and \
        n.parent.child_by_field_name("field") == n


def _reads_memory(node: Node) -> bool:
    return any(n.type in ("subscript_expression", "call_expression") or
               (n.type == "pointer_expression" and
                text(n.child_by_field_name("operator")) == "*") for n in walk(node))


def _taps(plan: Plan, work: list[Node], x: str, y: str, uniform: _Uniform,
          defs: dict[str, str]) -> list[_Tap]:
    classes = {text(n.child_by_field_name("name")) for n in walk(plan.source.tree.root_node)
               if n.type in ("class_specifier", "struct_specifier") and
               n.child_by_field_name("name") is not None}
    verdict = read_only_functions(plan.source)
    pure = pure_calls(plan.source)
    taps: list[_Tap] = []
    read: set[str] = set()  # the pointers the taps read
    for stmt in work:
        for n in walk(stmt):
            if n.type in ("subscript_expression", "pointer_expression") and \
                    _reads_pointer(plan, n):
                raise Refused(f"`{text(n)}` reads a kernel pointer outside a helper taking "
                              "the position: only reads through such a helper are staged", n)
            fn = n.child_by_field_name("function") if n.type == "call_expression" else None
            if fn is None or text(fn) in pure:
                continue
            if fn.type == "field_expression":
                obj = strip(fn.child_by_field_name("argument") or fn)
                method = text(fn.child_by_field_name("field"))
                if obj.type != "identifier" or not uniform.object(text(obj), classes) or \
                        verdict.get(method, "") is not None:
                    raise Refused(f"`{text(n)}` is no read-only method of a uniform local "
                                  "object of a class of this file", n)
                read |= _pointers(plan, uniform, text(obj))
            else:
                args = n.child_by_field_name("arguments")
                pointers = {q for i in walk(args) if i.type == "identifier"
                            for q in _buffers(plan, uniform, text(i))} \
                    if args is not None else set()
                if not pointers:
                    continue  # reads its arguments only (a swap of two registers)
                if verdict.get(text(fn), "") is not None:
                    raise Refused(f"`{text(fn)}` reads {', '.join(sorted(pointers))} and is "
                                  "not a read-only __device__ function of this file", n)
                read |= pointers
            tap = _tap(plan, n, x, y, uniform, defs, stmt)
            if tap is not None:
                taps.append(tap)
    written = {text(i) for n in walk(plan.body) if n.type in ("assignment_expression",
                                                               "update_expression")
               for i in walk(n.child_by_field_name("left") or
                             n.child_by_field_name("argument") or n)
               if i.type == "identifier" and plan.pointer(text(i))}
    if read & written:
        raise Refused(f"the kernel writes {', '.join(sorted(read & written))}, which the taps "
                      "read: a staged value could be stale", taps[0].call if taps else None)
    return taps


def _buffers(plan: Plan, uniform: _Uniform, name: str) -> set[str]:
    """The kernel pointers ``name`` reads: itself where it is one; where it is a local
    pointer uniform over the block (``img = in + (size_t)blockIdx.z * H * W * CIN``, one
    declaration, never assigned), the kernel pointers its value names."""
    if plan.pointer(name):
        return {name}
    d = plan.facts.defs.get(name)
    if d is None or not d.is_pointer or d.value is None or not uniform.name(name):
        return set()
    return {text(i) for i in walk(d.value) if i.type == "identifier" and plan.pointer(text(i))}


def _pointers(plan: Plan, uniform: _Uniform, obj: str) -> set[str]:
    decl = next(s for s in uniform.copies if any(_declared(d) == obj for d in
                                                 s.children_by_field_name("declarator")))
    return {text(i) for i in walk(decl) if i.type in ("identifier", "type_identifier")
            and plan.pointer(text(i))}


def _reads_pointer(plan: Plan, n: Node) -> bool:
    """``n`` (a subscript or a dereference) reads memory through a kernel pointer (a plain
    ``=`` store to it is a write, not a read)."""
    if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) != "*":
        return False
    up = n.parent
    if up is not None and up.type == "assignment_expression" and \
            up.child_by_field_name("left") == n and \
            text(up.child_by_field_name("operator")) == "=":
        return False
    base = n.child_by_field_name("argument")
    return base is not None and any(plan.pointer(text(i)) for i in walk(base)
                                    if i.type == "identifier")


def _tap(plan: Plan, call: Node, x: str, y: str, uniform: _Uniform, defs: dict[str, str],
         top: Node) -> _Tap | None:
    """The tap ``call`` is (None: it reads at no position of the point)."""
    args_node = call.child_by_field_name("arguments")
    args = [] if args_node is None else [a for a in args_node.named_children
                                         if a.type != "comment"]
    loops = _loops(plan, call, top, defs)
    counters = {w.var for w in loops}
    keep = {x, y, *counters}
    values = {k: v for k, v in uniform.values.items() if k not in keep}
    rows, cols = [], []
    for a in args:
        names = _names(a, values)
        if y in names and x not in names:
            rows.append(a)
        elif x in names and y not in names:
            cols.append(a)
        elif names & keep or not all(uniform.name(m) for m in names):
            raise Refused(f"the argument `{text(a)}` of `{text(call)}` is neither the point's "
                          "row, its column nor uniform over the block", a)
    if not rows and not cols:
        return None
    if len(rows) != 1 or len(cols) != 1:
        raise Refused(f"`{text(call)}` takes no one row argument {y} + a and one column "
                      f"argument {x} + b", call)
    offsets = set()
    for combo in itertools.product(*[range(w.count) for w in loops]):
        env = {w.var: _c_eval(w.lo_text, {}, defs) + k
               for w, k in zip(loops, combo, strict=True)}
        offsets.add((_offset(rows[0], y, env, values, defs),
                     _offset(cols[0], x, env, values, defs)))
    if len(offsets) > MAX_TAPS:
        raise Refused(f"`{text(call)}` reads {len(offsets)} positions (1 .. {MAX_TAPS} are "
                      "staged)", call)
    return _Tap(call, rows[0], cols[0], frozenset(offsets))


def _function(tap: _Tap) -> str:
    """The tap's call with its row and column arguments blanked: the function ``F``."""
    raw, base = tap.call.text or b"", tap.call.start_byte
    (a, b), (c, d) = sorted([(tap.row.start_byte, tap.row.end_byte),
                             (tap.col.start_byte, tap.col.end_byte)])
    kept = raw[:a - base] + b"@" + raw[b - base:c - base] + b"@" + raw[d - base:]
    return " ".join(kept.decode().split())


def _names(node: Node, values: dict[str, Node], depth: int = 0) -> set[str]:
    """Identifiers ``node`` reads, single-assignment locals expanded (their names too)."""
    out: set[str] = set()
    for n in walk(node):
        if n.type == "identifier" and not _member_name(n):
            out.add(text(n))
            if text(n) in values and depth < 12:
                out |= _names(values[text(n)], values, depth + 1)
    return out


def _loops(plan: Plan, node: Node, top: Node, defs: dict[str, str]) -> list[_Window]:
    """The counted loops around ``node`` up to ``top``, outermost first."""
    out = []
    up = node.parent
    while up is not None and up != top.parent:
        if up.type in ("while_statement", "do_statement"):
            raise Refused("a tap inside a loop that is no counted `for`", up)
        if up.type == "for_statement":
            out.append(_window(plan, up, defs))
        up = up.parent
    return out[::-1]


def _offset(arg: Node, v: str, env: dict[str, int], values: dict[str, Node],
            defs: dict[str, str]) -> int:
    """``arg - v`` at the loop counters ``env``: ``arg`` must be ``v`` plus a part of
    literals, macros and the counters only."""
    p = poly_of(arg, values, divide=True)
    if derivative(p, v) != {(): 1}:
        raise Refused(f"`{text(arg)}` is not {v} + an offset", arg)
    total = 0
    for monomial, c in p.items():
        if monomial == (v,):
            continue
        for atom in monomial:
            try:
                c *= _c_eval(atom, env, defs)
            except Refused as exc:
                raise Refused(f"the offset of `{text(arg)}` from {v} reads `{atom}`: only "
                              "literals, macros and compile-time loop counters", arg) from exc
        total += c
    return total


def _c_eval(raw: str, env: dict[str, int], defs: dict[str, str], depth: int = 0) -> int:
    """An integer expression in C's arithmetic (division and remainder toward zero)."""
    def ev(n: ast.expr) -> int:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name) and n.id in env:
            return env[n.id]
        if isinstance(n, ast.Name) and n.id in defs and depth < 8:
            return _c_eval(defs[n.id], env, defs, depth + 1)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            return -ev(n.operand) if isinstance(n.op, ast.USub) else ev(n.operand)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, (ast.FloorDiv, ast.Mod)) and b:
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
                return a - q * b if isinstance(n.op, ast.Mod) else q
        raise Refused(f"`{raw}` is not a compile-time integer at the loop counters")
    try:
        tree = ast.parse(raw.strip().rstrip("uUlL").replace("/", "//"), mode="eval").body
    except SyntaxError as exc:
        raise Refused(f"`{raw}` is not a compile-time integer") from exc
    return ev(tree)


def tap_bytes(plan: Plan, call: Node) -> int:
    """Bytes of the value the tap returns (its function's declared return type)."""
    fn = call.child_by_field_name("function")
    name = text(fn.child_by_field_name("field")) if fn is not None and \
        fn.type == "field_expression" else text(fn)
    definition = plan.source.function_definitions().get(name)
    ctype = definition.child_by_field_name("type") if definition is not None else None
    size = _ELEM.get(text(ctype)) if ctype is not None else None
    if size is None and ctype is not None:
        size = _record_bytes(plan, text(ctype))
    if size is None:
        raise Refused(f"`{name}` returns `{text(ctype)}`, no element of known size", call)
    return size


#: CUDA's vector records of 4-byte lanes
_VECTOR_BYTES = {"float3": 12, "float4": 16, "int2": 8, "int3": 12, "int4": 16}


def _record_bytes(plan: Plan, ctype: str) -> int | None:
    """Bytes of a vector record (``float3``) or of a struct of the file whose members are
    all ``float`` or all ``int`` (``struct Rgb { float r, g, b; }``: 12), else None."""
    if ctype in _VECTOR_BYTES:
        return _VECTOR_BYTES[ctype]
    for n in walk(plan.source.tree.root_node):
        if n.type != "struct_specifier" or text(n.child_by_field_name("name")) != ctype:
            continue
        body = n.child_by_field_name("body")
        fields = [] if body is None else [f for f in body.named_children
                                          if f.type != "comment"]
        kinds = {text(f.child_by_field_name("type")) for f in fields}
        if not fields or len(kinds) != 1 or any(f.type != "field_declaration" for f in fields):
            return None
        kind = kinds.pop()
        if kind not in ("float", "int"):
            return None
        names = [d for f in fields for d in f.children_by_field_name("declarator")]
        if any(d.type != "field_identifier" for d in names):
            return None
        return 4 * len(names)
    return None


def _emit(plan: Plan, idx: dict[str, tuple[Node, str, Node]], cond: Node,
          out_when_true: bool, taps: list[_Tap], uniform: _Uniform, size: int,
          spans: tuple[str, str], anywhere: tuple[str, ...] | None) -> None:
    names = fresh_names(plan, ["USE_SMEM", "wb_tile", "wb_Y", "wb_X", "wb_e"])
    smem, tile, ty_, tx_, e = (names[k] for k in ("USE_SMEM", "wb_tile", "wb_Y", "wb_X",
                                                  "wb_e"))
    data = plan.source.data
    offsets = sorted({o for t in taps for o in t.offsets})
    amin, amax = min(a for a, _ in offsets), max(a for a, _ in offsets)
    bmin, bmax = min(b for _, b in offsets), max(b for _, b in offsets)
    span_y, span_x = spans
    rows, cols = f"({span_y} + {amax - amin})", f"({span_x} + {bmax - bmin})"
    renamed = {_declared(d): f"wb_{_declared(d)}" for s in uniform.copies
               for d in s.children_by_field_name("declarator")}
    x, y = idx["x"][1], idx["y"][1]

    def spelled(node: Node, subst: dict[tuple[int, int], str]) -> str:
        """``node``'s text with ``subst``'s spans replaced and the copied locals renamed."""
        edits = dict(subst)
        for n in walk(node):
            if n.type == "identifier" and text(n) in renamed and not _member_name(n):
                edits.setdefault((n.start_byte, n.end_byte), renamed[text(n)])
        out, pos = [], node.start_byte
        for (s, e), t in sorted(edits.items()):
            if s < pos:
                continue
            out += [data[pos:s].decode(), t]
            pos = e
        return "".join(out) + data[pos:node.end_byte].decode()

    def live(parts: list[Node], yy: str, xx: str) -> str:
        """The check's ``parts`` (its terms that leave the output out, or keep it) at the
        output ``(yy, xx)``: whether that output passes them."""
        if not parts:
            return "true"
        terms = []
        for part in parts:
            spots = {(n.start_byte, n.end_byte): f"({yy if text(n) == y else xx})"
                     for n in walk(part) if n.type == "identifier" and text(n) in (x, y)}
            terms.append(f"({spelled(part, spots)})")
        return f"!({' || '.join(terms)})" if out_when_true else " && ".join(terms)

    def at(t: _Tap, row: str, col: str) -> str:
        return spelled(t.call, {(t.row.start_byte, t.row.end_byte): row,
                                (t.col.start_byte, t.col.end_byte): col})

    y0, x0 = f"(int)(blockIdx.y * {span_y})", f"(int)(blockIdx.x * {span_x})"
    parts = _comparisons(cond, "||" if out_when_true else "&&")
    reads = [{text(n) for n in walk(part) if n.type == "identifier"} & {x, y}
             for part in parts]
    rows_of = sorted({a for a, _ in offsets})
    cols_of = sorted({b for _, b in offsets})

    def rows_in(a: object) -> str:
        return f"{ty_} - ({a}) >= {y0} && {ty_} - ({a}) < {y0} + {span_y}"

    def cols_in(b: object) -> str:
        return f"{tx_} - ({b}) >= {x0} && {tx_} - ({b}) < {x0} + {span_x}"

    if anywhere is not None:
        # the helper clamps into the array: any position is safe, the scalars it clamps
        # against at least 1 (one uniform test)
        needed = " && ".join(f"{s} >= 1" for s in anywhere) or "true"
    elif len(offsets) == len(rows_of) * len(cols_of) and all(r != {x, y} for r in reads):
        # a full product of taps and a check of a row part and a column part: a position is
        # read by a checked output iff its row is by some row tap and its column by some
        # column tap
        row_parts = [p for p, r in zip(parts, reads, strict=True) if r != {x}]
        col_parts = [p for p, r in zip(parts, reads, strict=True) if r == {x}]
        needed = "(" + " ||\n        ".join(
            f"({rows_in(a)} && {live(row_parts, f'{ty_} - ({a})', '')})"
            for a in rows_of) + ") &&\n        (" + " ||\n        ".join(
            f"({cols_in(b)} && {live(col_parts, '', f'{tx_} - ({b})')})"
            for b in cols_of) + ")"
    else:
        needed = " ||\n        ".join(
            f"({rows_in(a)} && {cols_in(b)} && "
            f"{live(parts, f'{ty_} - ({a})', f'{tx_} - ({b})')})" for a, b in offsets)
    copies = "".join(f"  {spelled(s, {})}\n" for s in uniform.copies)
    bx, by = plan.block
    first = taps[0]
    stage = (
        f"\n#if {smem}\n{copies}"
        f"  __shared__ decltype({at(first, '0', '0')}) {tile}[{rows} * {cols}];  "
        "// the block's outputs and their halo\n"
        f"  for (int {e} = threadIdx.y * ({bx}) + threadIdx.x; {e} < {rows} * {cols}; "
        f"{e} += ({bx}) * ({by})) {{\n"
        f"    const int {ty_} = {y0} + ({amin}) + {e} / {cols}, "
        f"{tx_} = {x0} + ({bmin}) + {e} % {cols};\n"
        f"    if ({needed})\n      {tile}[{e}] = {at(first, ty_, tx_)};  "
        f"{'// safe at any position' if anywhere is not None else '// read by a checked output'}\n"
        f"  }}\n  __syncthreads();\n#endif\n")
    plan.rw.insert(plan.body.start_byte + 1, stage)
    for t in taps:
        read = (f"{tile}[(({plan.rw.text(t.row)}) - {y0} - ({amin})) * {cols} + "
                f"(({plan.rw.text(t.col)}) - {x0} - ({bmin}))]")
        plan.rw.replace(t.call, f"(\n#if {smem}\n{read}\n#else\n{plan.rw.text(t.call)}\n"
                                "#endif\n)")
    plan.add_param(smem, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "the block's tile and its halo staged in shared "
                                         "memory (0: read through the helper, as written)"},
                   f"{first.call.start_point.row + 1}: {text(first.call)[:60]}")
    plan.constrain(f"{smem} == 0 or {rows} * {cols} * {size} <= {_MAX_SMEM}")
    plan.note(smem, True, f"{len(taps)} tap(s) like `{text(first.call)}` read one function "
              f"of the position, rows {amin} .. {amax}, columns {bmin} .. {bmax} around the "
              "point: 1 stages the block's tile with its halo in shared memory, " +
              ("loading every position (the helper clamps into the array: safe at any)"
               if anywhere is not None else "loading only positions a checked output reads"),
              first.call)


def _span(plan: Plan, idx: dict[str, tuple[Node, str, Node]], dim: str) -> str:
    """The outputs a block covers along ``dim``, spelled with the launch's block size (a
    compile-time knob or literal): the block size, times the items where :mod:`.wrap`
    (ITEMS_<dim>) or :mod:`.ilp` (ITEMS_PER_THREAD) made the index's ``blockIdx.d`` the
    item's block ``(blockIdx.d * ITEMS + item)``."""
    decl = idx[dim][0]
    rule = plan.block["xy".index(dim)]
    if rule not in plan.params and not rule.isdigit():
        raise Refused(f"the block's {dim} size `{rule}` is no compile-time knob or literal: the "
                      "tile's extent must be", decl)
    block = next(n for n in walk(decl) if n.type == "field_expression" and
                 text(n).replace(" ", "") == f"blockIdx.{dim}")
    spelled = plan.rw.text(block).replace(" ", "")
    if spelled == f"blockIdx.{dim}":
        return f"({rule})"
    items = re.fullmatch(rf"\(blockIdx\.{dim}\*(\w+)\+wb_it\w*\)", spelled)
    if items is None or items.group(1) not in plan.params:
        raise Refused(f"the {dim} index's block `{plan.rw.text(block)}` is spread over items "
                      "this stage does not model", decl)
    return f"({rule} * {items.group(1)})"
