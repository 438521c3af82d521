"""The interior copy of the loop around a sliding window's taps (T_ITEMS of
:mod:`.conv_mix_window`, emitted with the channels of :mod:`.conv_mix`).

Known practice for padded convolutions (FIR filters, temporal and image convolutions): the
padding tests of the taps (``if (s >= 0 && s < T)``) and the items' own bounds checks are
needed only where a thread's window reaches past the signal's ends, a few threads per row;
every other thread runs the accumulation without them. Written once with the tests, the
lifted loop keeps a branch per item and tap around every multiply-add (ptxas then reloads
the filter per item and cannot keep the products in straight-line code); split into an
interior copy without them and the general copy as lifted, the interior's inner loop is the
loads of the window and the multiply-adds alone.

The rule, legal on the parse: before the outermost loop around the taps (the input channels'
loop, or the tap loop itself) the thread tests every slot of its window with the checks the
window's loads use (the item that reads the slot first is live and passes the read's
conditions, those of the kernel as written, which depend on ``t + k`` only); where all hold,
every item is live (the last slot's first reader is the last item) and every condition on
the way to the read holds for every item and tap (the pair reads the slot ``u + k - lo``,
whose test evaluated the same conditions at the same ``t + k``), so the interior copy runs
the same statements on the same values in the same order with those tests known true: the
slots load unconditionally (each is a read the kernel as written makes), the per-item checks
inside the loop are dropped and each condition is written ``(true || (cond))`` (``(false &&
(cond))`` where the read lies on its false side). Bit for bit the general copy's result.

Refused (noted with the line, the general copy alone is written) where the thread could not
test its window before the loop: a check or condition that reads memory, assigns, calls what
is not pure, reads the output channel, or reads a name declared or assigned inside the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import mentions, text, walk
from workbench.templater.conv_mix_window import Slide
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.rewrite import Rewriter, TextFn, warp_all

NOTE = "INTERIOR"
FLAG = "wb_full"  # the thread's window lies inside: the interior copy runs

_ASSIGN = ("assignment_expression", "update_expression")


@dataclass
class Copy:
    """Which copy of the loop around the taps is being rendered (the edits inside it read
    this): the interior one, its tests known true, or the general one."""

    interior: bool = False


def refusal(plan: Plan, slide: Slide, outer: Node, channel: set[str]) -> tuple[str, Node] | None:
    """Why the thread cannot test its window before ``outer`` (None: it can): (reason, node)."""
    init = slide.loop.child_by_field_name("initializer")
    parts: list[Node] = [slide.cond, *(c for c, _ in slide.conds),
                         *(v for _, v in slide.expand.values())]
    if init is not None:
        parts.append(init.child_by_field_name("declarator") or init)
    pure = pure_calls(plan.source)
    inner = _declared_or_assigned(outer)
    own = {slide.var, slide.k, *slide.expand}
    for part in parts:
        for n in walk(part):
            if n.type in _ASSIGN:
                return f"`{text(n)[:50]}` assigns: the window's test could not run first", n
            if n.type == "call_expression" and \
                    text(n.child_by_field_name("function")) not in pure:
                return f"`{text(n)[:50]}` calls what is not pure: the window's test could " \
                       "not run first", n
            if n.type == "subscript_expression" or (n.type == "pointer_expression"
                                                    and text(n).startswith("*")):
                return f"`{text(n)[:50]}` reads memory: the window's test could not run " \
                       "first", n
        if mentions(part, channel):
            return f"`{text(part)[:50]}` reads the output channel: one test per thread " \
                   "would not hold for its channels", part
        names = {text(n) for n in walk(part) if n.type == "identifier"} - own
        late = sorted(names & inner)
        if late:
            return f"`{late[0]}` (read by `{text(part)[:40]}`) is declared or assigned " \
                   "inside the loop around the taps: the window's test before it could " \
                   "not read it", part
    return None


def _declared_or_assigned(outer: Node) -> set[str]:
    found: set[str] = set()
    for n in walk(outer):
        for top in n.children_by_field_name("declarator") if n.type == "declaration" else []:
            d: Node | None = top
            while d is not None and d.type in ("pointer_declarator", "array_declarator",
                                               "init_declarator"):
                d = d.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                found.add(text(d))
        if n.type in _ASSIGN:
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            while target is not None and target.type in ("subscript_expression",
                                                          "parenthesized_expression"):
                target = target.child_by_field_name("argument") or (
                    target.named_children[0] if target.named_children else None)
            if target is not None and target.type == "identifier":
                found.add(text(target))
    return found


def open_copies(plan: Plan, slide: Slide, outer: Node, copy: Copy, flag: str,
                slot_head: str, checks: str) -> None:
    """Before ``outer``: the window's test, then ``if (flag) { interior copy } else {``;
    each condition on the way to the read known true in the interior copy. Call before the
    window's own text is inserted at the tap loop (the test encloses it where the tap loop
    is ``outer``), and :func:`close_copies` after it."""
    start = _pragma_start(outer)

    def opening(rw: Rewriter) -> str:
        if copy.interior:
            return ""  # the interior copy's own rendering of this span
        copy.interior = True
        try:
            fast = rw.render(start, outer.end_byte)
        finally:
            copy.interior = False
        return (f"{{  // the window inside the signal: the loop without its tests\n"
                f"  bool {flag} = true;\n{slot_head}"
                f"    {flag} = {flag} && {checks};\n  }}\n"
                f"{_uniform_test(flag)}{fast}\n  }} else {{\n")

    plan.rw.replace_span(start, start, make=opening)
    for cond, holds in slide.conds:
        plan.rw.replace_span(cond.start_byte, cond.start_byte,
                             make=_interior_only(copy, "(true || (" if holds else "(false && ("))
        plan.rw.replace_span(cond.end_byte, cond.end_byte, make=_interior_only(copy, "))"))


def _interior_only(copy: Copy, words: str) -> TextFn:
    def make(_rw: Rewriter) -> str:
        return words if copy.interior else ""
    return make


def _uniform_test(flag: str) -> str:
    """``if (flag) {`` taken by a whole warp: on the device the lanes vote (the active ones:
    those past the bounds check have left or wait outside), so the branch is warp-uniform
    and ptxas keeps the filter's warp-uniform reads and the loop's state on the uniform
    datapath (conv1d_mix7 at 8 channels x 4 items, ptxas -v sm_90: 80 registers, ULDC;
    per lane: 92, LDC). A lane whose own window lies inside but whose warp's does not runs
    the general copy, as correct. The host simulation, which has no warps, tests the lane."""
    return f"{warp_all(flag)}  if ({flag}) {{\n"


def _pragma_start(loop: Node) -> int:
    """Where ``loop`` starts with the author's ``#pragma`` line before it (it goes with
    each copy)."""
    prev = loop.prev_sibling
    if prev is not None and prev.type == "preproc_call" and text(prev).startswith("#pragma"):
        return prev.start_byte
    return loop.start_byte


def close_copies(plan: Plan, outer: Node, copy: Copy) -> None:
    """The general copy's end: after every other edit at the loop's end (the window's)."""
    def make(_rw: Rewriter) -> str:
        return "" if copy.interior else "\n  } }"
    plan.rw.replace_span(outer.end_byte, outer.end_byte, make=make)
