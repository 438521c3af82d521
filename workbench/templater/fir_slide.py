"""T_ITEMS and USE_SMEM for a 1-D filter with no channel loop (a FIR, a correlation): a
thread's consecutive outputs slide one register window over the taps, and the block's input
span can be staged in shared memory (issue 28, first contact of fir128_const, set 11).

The family: ``i = blockIdx.x * B + threadIdx.x`` (any order, casts allowed) guarded by a
check bounding it from above, and inside the check one loop over the taps ``t = lo ..
lo + K - 1`` (compile-time, up to :data:`MAX_TAPS`) whose one read that depends on ``i``
reads ``i`` and ``t`` only through ``i + t`` (a correlation), or only through ``i - t`` (a
convolution, ``x[n - k]``: the window then slides the other way, its new input entering at
the bottom) (:func:`.conv_mix_window.find_slide`, which reads the semantics: locals
expanded, the conditions between the loop and the read kept).
The taps live anywhere (``__constant__``, global, a literal table): their reads do not
depend on ``i``. The grid's y and z may be anything the thread reads for its pointers (a
channel on ``blockIdx.y``), since they are the same for a thread's items. A loop around the
tap loop (input channels) is :mod:`.conv_mix`'s, not this family's.

Known practice (the expert's): a thread computes ``T_ITEMS`` consecutive outputs ``i .. i +
T_ITEMS - 1`` and keeps the inputs their current taps read in ``T_ITEMS`` registers: at tap
``t`` slot ``u`` holds the input output ``u`` reads; after the tap every slot takes its
neighbour's value and the last slot loads the one new input, so a tap costs one load for
``T_ITEMS`` multiply-adds instead of ``T_ITEMS`` loads (the tap loop unrolled whole: the
slots are registers only at constant indices). ``USE_SMEM = 1`` stages the block's span
(``B * T_ITEMS + K - 1`` inputs) in shared memory once, every thread of the block loading a
stride of it, and the window reads the stage.

Every output adds its taps in the written order from the same values (the read's value is
the slot; the conditions around it are kept as written), so results are bit for bit the
kernel's. Nothing is read that the kernel as written does not read: a slot, or a staged
input, is loaded where the first output that reads it (the lowest) passes the bounds check
and the read's conditions hold there; otherwise it holds zero and no live output reads it.
The tap loop's body may write locals only (no memory, pure calls): items past the bound run
it on their zero slots and are never stored. The grid's x divides by ``B * T_ITEMS``.

Legal only where (refusals name the line): the kernel shares no memory and has no barrier;
the grid's x is ``ceil_div(X, B)`` with ``X`` the check's bound; the tap loop is a statement
of the check's own block; the statements of that block that depend on ``i`` are
declarations of one plain local (they become one copy per item) or statements run per item
under the item's check; locals written by them or by the tap loop are those copies or their
own; the windowed input is never written by the kernel. USE_SMEM is offered where the read
can be evaluated before the check (it reads the thread's pointers, parameters, constants
and the expanded locals only), nothing before the check leaves the thread, and the element
size is known.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import (
    line,
    mentions,
    shares_or_syncs,
    text,
    walk,
    write_target,
)
from workbench.templater.block import lift_block
from workbench.templater.conv_mix import _closure
from workbench.templater.conv_mix_window import CHOICES, KNOB, Slide, find_slide
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls, why_not_pure
from workbench.templater.regtile import Refused, fresh_names, render
from workbench.templater.rules import literal, scale_divisor

SMEM = "USE_SMEM"
#: Taps a loop may have: unrolled whole, each tap T_ITEMS multiply-adds and one load.
MAX_TAPS = 256
#: Bytes of the element types a stage holds.
_SIZES = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4, "__half": 2,
          "half": 2, "__nv_bfloat16": 2, "short": 2, "char": 1, "signed char": 1,
          "unsigned char": 1, "long long": 8, "float2": 8, "float4": 16}
_ESCAPES = ("return_statement", "break_statement", "goto_statement")
_ASSIGN = ("assignment_expression", "update_expression")


def lift_fir(plan: Plan) -> bool:
    """T_ITEMS (and USE_SMEM where it applies) for a 1-D filter; False where the kernel is
    not of the family (silently) or the analysis refused (noted with the line)."""
    if len(plan.grid) < 1 or len(plan.block) < 1 or \
            any(literal(b) != 1 for b in plan.block[1:]) or shares_or_syncs(plan.body):
        return False
    own = set(plan.facts.defs)
    try:
        slide = find_slide(plan, lambda v, check: _closure(
            plan.body, {v}, own, lambda n: False, control=True, skip=check), most=MAX_TAPS,
            mirrored=True)
    except Refused:
        return False  # no filter of this family (a channel mix notes its own refusal)
    if slide is None or slide.loop not in slide.region or slide.count < 2:
        return False
    try:
        arrays, units = _sort(plan, slide)
    except Refused as exc:
        plan.note(KNOB, False, exc.reason, exc.node)
        return False
    staged = _stage_refusal(plan, slide)
    if staged is not None:
        plan.note(SMEM, False, staged[0], staged[1])
    _emit(plan, slide, arrays, units, staged is None)
    return True


# -- the analysis ---------------------------------------------------------------------------


def _sort(plan: Plan, slide: Slide) -> tuple[list[Node], list[Node]]:
    """The check's statements that depend on the index: (declarations that become one copy
    per item, statements run per item); raises Refused where one breaks the rule."""
    slide.require_grid(plan)
    arrays: list[Node] = []
    units: list[Node] = []
    for s in slide.region:
        if s == slide.loop or not mentions(s, slide.dep):
            continue
        if s.type == "declaration":
            arrays.append(_plain_local(plan, s))
        else:
            units.append(s)
    copies = {_name(d) for d in arrays}
    for part in [slide.loop, *units]:
        _locals_only(plan, part, copies, part is slide.loop)
    read = _roots(plan, slide.read.child_by_field_name("argument") or slide.read)
    for n in walk(plan.body):
        target = n.child_by_field_name("left") or n.child_by_field_name("argument") \
            if n.type in _ASSIGN else None
        if target is not None and target.type in ("subscript_expression",
                                                  "pointer_expression") and \
                _roots(plan, target.child_by_field_name("argument") or target) & read:
            raise Refused(f"`{text(n)[:50]}` writes through the windowed input "
                          f"`{text(slide.read)[:40]}`'s pointer: the window would hold values "
                          "read before the write", n)
    return arrays, units


def _roots(plan: Plan, node: Node, depth: int = 0) -> set[str]:
    """The pointer parameters ``node``'s address derives from, through the values of the
    pointer locals it reads (a pointer local assigned again, or without a value: itself)."""
    params = {p.name for p in plan.kernel.params if p.is_pointer}
    out: set[str] = set()
    for m in walk(node):
        name = text(m) if m.type == "identifier" else ""
        d = plan.facts.defs.get(name)
        if name in params:
            out.add(name)
        elif d is not None and d.is_pointer:
            out |= {name} if d.value is None or d.assigned or depth > 8 else \
                _roots(plan, d.value, depth + 1)
    return out


def _plain_local(plan: Plan, decl: Node) -> Node:
    declarators = decl.children_by_field_name("declarator")
    typ = decl.child_by_field_name("type")
    d = declarators[0] if len(declarators) == 1 else None
    inner = d.child_by_field_name("declarator") if d is not None and \
        d.type == "init_declarator" else d
    if inner is None or inner.type not in ("identifier", "pointer_declarator") or \
            typ is None or text(typ) == "auto" or \
            any(text(c) in ("static", "extern", "constexpr") for c in decl.children):
        raise Refused(f"`{text(decl)[:60]}` depends on the output and is not one plain local: "
                      "it could not become one copy per item", decl)
    name = _name(decl)
    if sum(1 for n in walk(plan.body) if n.type == "declaration" and _name(n) == name) > 1:
        raise Refused(f"`{name}` is declared more than once", decl)
    return decl


def _locals_only(plan: Plan, part: Node, copies: set[str], taps: bool) -> None:
    """``part`` runs once per item: it leaves nothing, calls pure functions, writes only
    the items' copies or its own locals (the tap loop: no memory at all)."""
    declared = {_name(n) for n in walk(part) if n.type == "declaration"}
    if part.type == "for_statement":
        init = part.child_by_field_name("initializer")
        declared |= {_name(init)} if init is not None and init.type == "declaration" else set()
    pure = pure_calls(plan.source)
    for n in walk(part):
        if n.type in _ESCAPES or (n.type == "continue_statement" and not taps):
            raise Refused(f"`{text(n)}` would leave the loop over a thread's items", n)
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn not in pure:
                raise Refused(f"a call of {why_not_pure(plan.source, fn)} would run once per "
                              "item", n)
        if n.type not in _ASSIGN:
            continue
        target = write_target(n) or n
        if target.type == "identifier":
            if text(target) not in copies | declared:
                raise Refused(f"`{text(n)[:50]}` writes `{text(target)}`, one local shared by "
                              "the thread's items", n)
        elif taps:
            raise Refused(f"`{text(n)[:50]}` writes memory in the tap loop: the items past "
                          "the bound would write it too", n)


def _stage_refusal(plan: Plan, slide: Slide) -> tuple[str, Node] | None:
    """Why USE_SMEM is not offered (the reason and its node), or None."""
    if slide.elem not in _SIZES:
        return f"the size of the element type `{slide.elem}` is not known", slide.read
    stmts = [s for s in plan.body.named_children if s.type != "comment"]
    for s in stmts[:stmts.index(slide.decl)]:
        for n in walk(s):
            if n.type in (*_ESCAPES, "continue_statement"):
                return f"`{text(n)}` before the index: every thread must reach the barrier", n
    before = slide.decl.start_byte
    for part in [slide.read, *(c for c, _ in slide.conds), *(v for _, v in slide.expand.values())]:
        for n in walk(part):
            if n.type != "identifier" or text(n) in (slide.var, slide.k) or \
                    text(n) in slide.expand:
                continue
            d = plan.facts.defs.get(text(n))
            if d is not None and d.decl.start_byte > before:
                return (f"`{text(n)}` (read by `{text(slide.read)[:40]}`) is declared after "
                        f"`{slide.var}`: the block's stage is loaded before the check", n)
    return None


# -- the rewrite ------------------------------------------------------------------------------


def _emit(plan: Plan, slide: Slide, arrays: list[Node], units: list[Node], smem: bool) -> None:
    lift_block(plan)
    n = fresh_names(plan, [KNOB, SMEM, "wb_w", "wb_u", "wb_k", "wb_j", "wb_ur", "wb_span",
                           "wb_base", "wb_e", "wb_m"])
    ti, u = n[KNOB], n["wb_u"]
    block = plan.block[0]
    data = plan.source.data
    copies = {_name(d) for d in arrays}
    value = slide.decl.children_by_field_name("declarator")[0].child_by_field_name("value")
    assert value is not None
    plan.rw.insert(value.start_byte, "(")
    plan.rw.insert(value.end_byte, f") * {ti}")
    typ = slide.decl.child_by_field_name("type")
    vtype = text(typ) if typ is not None else "int"
    if smem:
        plan.rw.insert(slide.decl.end_byte, _stage_text(plan, slide, n, vtype))
    live = _live(data, slide, f"({slide.var} + {u})")
    for scope in [slide.loop, *units, *arrays]:
        for ident in walk(scope):
            if ident.type != "identifier" or _is_declarator(ident):
                continue
            if text(ident) == slide.var:
                plan.rw.replace(ident, f"({slide.var} + {u})")
            elif text(ident) in copies:
                plan.rw.replace(ident, f"{text(ident)}[{u}]")
    plan.rw.replace(slide.read, f"{n['wb_w']}[{u}]")
    per_item = f"\n#pragma unroll\n  for (int {u} = 0; {u} < {ti}; ++{u})"
    for unit in units:
        plan.rw.replace_span(unit.start_byte, unit.end_byte,
                             make=_per_item(unit, per_item, live))
    for decl in arrays:
        plan.rw.replace_span(decl.start_byte, decl.end_byte,
                             make=_copies(decl, ti, per_item, u, live))
    start = slide.loop.start_byte
    prev = slide.loop.prev_named_sibling
    if prev is not None and prev.type == "preproc_call" and "unroll" in text(prev):
        start = prev.start_byte  # the taps are unrolled whole: the author's count goes
    plan.rw.replace_span(start, slide.loop.end_byte,
                         make=_walk(plan, slide, n, smem, live))
    plan.grid[0] = scale_divisor(plan.grid[0], block, f"{block} * {ti}") or plan.grid[0]
    plan.add_param(ti, {"kind": "choice", "values": list(CHOICES), "default": 1,
                        "description": f"consecutive outputs along {slide.var} per thread, "
                                       f"sliding a window of {ti} inputs over the "
                                       f"{slide.count} taps (as written: 1)"},
                   f"{line(slide.decl)}: {text(slide.decl)[:60]}")
    plan.note(KNOB, True, f"`{slide.var}` slides over {slide.count} taps: {len(units)} "
              f"statement(s) run per item, {len(arrays)} local(s) become one copy per item, "
              f"`{text(slide.read)[:50]}` read through a window of {ti} registers (one load "
              f"a tap); grid x = {plan.grid[0]}", slide.loop)
    if smem:
        size = _SIZES[slide.elem]
        plan.add_param(n[SMEM], {"kind": "choice", "values": [0, 1], "default": 0,
                                 "description": "1: the block's inputs staged in shared "
                                                "memory once (0: read through the cache, as "
                                                "written)"},
                       f"{line(slide.read)}: {text(slide.read)[:60]}")
        plan.constrain(f"{n[SMEM]} == 0 or ({block} * {ti} + {slide.count - 1}) * {size} "
                       "<= 49152")
        plan.note(SMEM, True, f"the block's {block} * {ti} + {slide.count - 1} inputs of "
                  f"`{text(slide.read)[:40]}` staged in shared memory at 1", slide.read)


def _name(decl: Node) -> str:
    d = decl.child_by_field_name("declarator")
    return next((text(m) for m in walk(d) if m.type == "identifier"), "") if d else ""


def _is_declarator(ident: Node) -> bool:
    up = ident.parent
    while up is not None and up.type == "pointer_declarator":
        up = up.parent
    return up is not None and up.type in ("init_declarator", "declaration") and \
        up.child_by_field_name("declarator") in (ident, ident.parent)


def _live(data: bytes, slide: Slide, at: str) -> str:
    """The check of the output ``at`` (negated where the kernel's check leaves)."""
    c = render(data, slide.cond, lambda m: at if m.type == "identifier" and
               text(m) == slide.var else None)
    return f"!({c})" if slide.exits else f"({c})"


def _load(data: bytes, slide: Slide, first: str, slot: str) -> str:
    """``slot`` = the read at the lowest output (``first`` + ur) reading window place ``j``
    (declared before), where that output is live and the read's conditions hold."""
    sub = slide.at(data, f"({first})")
    checks = [_live(data, slide, first)]
    checks += [f"({render(data, c, sub)})" if holds else f"!({render(data, c, sub)})"
               for c, holds in slide.conds]
    return (f"{slot} = ({slide.elem})0;\n"
            f"      if ({' && '.join(checks)}) {slot} = {render(data, slide.read, sub)};")


def _slot(slide: Slide, j: str, ur: str) -> str:
    """The lowest item ``ur`` reading window place ``j`` and its tap, declared. Item ``u``
    reads place ``u + kk`` at the ``kk``-th tap (a convolution, ``t - k``: ``u + K - 1 -
    kk``), so the lowest is ``max(0, j - K + 1)`` either way."""
    last = slide.count - 1
    kk = f"({j}) - {ur}" if slide.sign > 0 else f"{ur} + {last} - ({j})"
    return (f"const int {ur} = ({j}) > {last} ? ({j}) - {last} : 0;  // the first item "
            f"reading it\n      const {slide.k_type} {slide.k} = ({slide.lo}) + {kk};")


def _stage_text(plan: Plan, slide: Slide, n: dict[str, str], vtype: str) -> str:
    """USE_SMEM: the block's span staged after the index, each input where the block's
    first output reading it is live and the read's conditions hold there."""
    ti, e, m, base = n[KNOB], n["wb_e"], n["wb_m"], n["wb_base"]
    block, span = plan.block[0], n["wb_span"]
    size = f"{block} * {ti} + {slide.count - 1}"
    load = _load(plan.source.data, slide, f"{base} + {m}", f"{span}[{e}]")
    return (f"\n#if {n[SMEM]}\n  __shared__ {slide.elem} {span}[{size}];  // the block's "
            f"inputs\n  const {vtype} {base} = {slide.var} - ({vtype})threadIdx.x * {ti};\n"
            f"  for (int {e} = threadIdx.x; {e} < {size}; {e} += blockDim.x) {{\n"
            f"      {_slot(slide, e, m)}\n      {load}\n  }}\n  __syncthreads();\n#endif\n")


def _walk(plan: Plan, slide: Slide, n: dict[str, str], smem: bool, live: str
          ) -> Callable[..., str]:
    """The tap loop: the window loaded, then per tap every item's body and the slide."""
    data = plan.source.data
    ti, w, u, k, j, ur = n[KNOB], n["wb_w"], n["wb_u"], n["wb_k"], n["wb_j"], n["wb_ur"]
    body = slide.loop.child_by_field_name("body")
    assert body is not None
    guarded = any(c.type in ("/", "%", "/=", "%=") for c in walk(body))

    def fill(place: str, slot: str) -> str:
        cached = f"{{ {_slot(slide, place, ur)}\n      {_load(data, slide, f'{slide.var} + {ur}', slot)} }}"
        if not smem:
            return cached
        staged = f"{slot} = {n['wb_span']}[{slide.var} - {n['wb_base']} + ({place})];"
        return f"\n#if {n[SMEM]}\n      {staged}\n#else\n      {cached}\n#endif\n"

    def make(rw: object) -> str:
        assert hasattr(rw, "render")
        inner = rw.render(body.start_byte, body.end_byte)
        item = f"if ({live}) {{ {inner} }}" if guarded else f"{{ {inner} }}"
        last = slide.count - 1
        if slide.sign > 0:  # the next tap's inputs one place up: the new one at the top
            first = j
            shift = (f"for (int {u} = 0; {u} + 1 < {ti}; ++{u}) {w}[{u}] = {w}[{u} + 1];\n"
                     f"      {fill(f'{ti} + {k}', f'{w}[{ti} - 1]')}")
        else:  # a convolution's: one place down, the new one at the bottom
            first = f"{j} + {last}"
            shift = (f"for (int {u} = {ti} - 1; {u} > 0; --{u}) {w}[{u}] = {w}[{u} - 1];\n"
                     f"      {fill(f'{last - 1} - {k}', f'{w}[0]')}")
        return (f"{{  // {ti} consecutive outputs slide over the {slide.count} taps: {ti} "
                f"inputs in registers, one load a tap\n  {slide.elem} {w}[{ti}];\n"
                f"#pragma unroll\n  for (int {j} = 0; {j} < {ti}; ++{j}) "
                f"{fill(first, f'{w}[{j}]')}\n"
                f"#pragma unroll\n  for (int {k} = 0; {k} < {slide.count}; ++{k}) {{\n"
                f"    const {slide.k_type} {slide.k} = ({slide.lo}) + {k};\n"
                f"#pragma unroll\n    for (int {u} = 0; {u} < {ti}; ++{u}) {item}\n"
                f"    if ({k} + 1 < {slide.count}) {{\n"
                f"#pragma unroll\n      {shift}\n    }}\n  }}\n}}")
    return make


def _per_item(unit: Node, per_item: str, live: str) -> Callable[..., str]:
    def make(rw: object) -> str:
        assert hasattr(rw, "render")
        return f"{{ {per_item} if ({live}) {{ {rw.render(unit.start_byte, unit.end_byte)} }}\n  }}"
    return make


def _copies(decl: Node, ti: str, per_item: str, u: str, live: str) -> Callable[..., str]:
    """A local with one copy per item, each set under its item's check."""
    def make(rw: object) -> str:
        assert hasattr(rw, "render")
        d = decl.child_by_field_name("declarator")
        assert d is not None
        inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        assert inner is not None
        name = _name(decl)
        pointer = inner.type == "pointer_declarator"
        typ = " ".join(text(c) for c in decl.children
                       if c != d and c.type != ";" and (pointer or text(c) != "const"))
        head = f"{typ} {text(inner).replace(name, f'{name}[{ti}]', 1)} = {{}};"
        if value is None:
            return head
        return (f"{head}{per_item} if ({live}) {name}[{u}] = "
                f"{rw.render(value.start_byte, value.end_byte)};\n")
    return make
