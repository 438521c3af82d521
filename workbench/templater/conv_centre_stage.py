"""USE_SMEM for :mod:`.conv_centre`'s output rows: the block's window of the one tap read
staged in shared memory once, each thread's rows then reading their input rows from it.

With OUT_Y rows a thread, a thread loads each of its ``n + OUT_Y - 1`` input rows' ``m``
values once; neighbouring threads of a row still load the same values again (``m`` times
each), through L1. The known practice for such filters (set 25's nhwc_conv5x5_c3to4, its
expert's USE_SMEM beside ITEMS_Y) stages the block's window, ``BLOCK_Y * OUT_Y + n - 1``
rows of ``BLOCK_X + m - 1`` values, in shared memory before the bounds check (every thread
helps and meets the barrier) and reads the window from there.

Legal where (else a ``USE_SMEM: not applied: reason (line N)`` note): the taps make one read
(an ``in[index]`` or a read-only helper's call, :mod:`.conv_centre_arrays`) that depends on
the point only through ``y + i`` and ``x + j``, conditions included, and otherwise reads
only the window's counters, the loops' declarations it needs, the kernel's arguments,
constants and the declarations every row shares (the plane's pointer, re-declared in the
fill: values of arguments and block indices, with no read, call or thread index); the bounds
check bounds x as well as y from above only; the value's size is known (an arithmetic element,
a struct of floats or ints). Each position is read where the first output of the block that
needs it passes the check, as that output's thread reads it; a position no checked output
needs holds zeros that no stored output reads. The tile's bytes are constrained (48 KiB of
static shared memory).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import builtin, line, text, walk
from workbench.templater.conv import (
    WindowFill,
    _declared,
    _Expr,
    _Window,
    fill_blocker,
    window_fill,
)
from workbench.templater.gather_stage import tap_bytes
from workbench.templater.plan import Plan
from workbench.templater.regtile import _ELEM, _MAX_SMEM
from workbench.templater.stencil import _bounds_from_above

NAME = "USE_SMEM"


@dataclass(frozen=True)
class Stage:
    """What the fill needs: the read, the declarations it re-runs, the value's bytes."""

    read: Node
    elem: str
    guard: str  # the conditions the read is taken under ("" when always)
    prefix: tuple[Node, ...]  # the shared declarations the read needs, re-declared
    needs: tuple[Node, ...]  # the loops' declarations the read needs, in the written order
    bytes_each: int


def staged_read(plan: Plan, expr: _Expr, reads: list[tuple[Node, str, str, tuple[Node, ...]]],
                check: tuple[Node, bool], point: tuple[str, str], window: tuple[_Window, _Window],
                shared: list[Node]) -> Stage | None:
    """The stage of the taps' one read (``reads``: node, element, guard, needs), or None
    with the refusal noted against USE_SMEM."""
    (cond, out_when_true), (x, y), (outer, inner) = check, point, window
    if len(reads) != 1:
        plan.note(NAME, False, f"the taps make {len(reads)} reads per point: one staged "
                  "window is modelled", outer.loop)
        return None
    node, elem, guard, needs = reads[0]
    parts = [node, *needs]
    bad = next((b for p in parts if (b := expr.via_sum(p, x, inner.var)) is not None), None)
    if bad is not None:
        plan.note(NAME, False, f"`{text(bad)}` depends on {x} and {inner.var} other than "
                  f"through {x} + {inner.var}: no window of the block's columns holds it", bad)
        return None
    bad = _bounds_from_above(cond, x, out_when_true)
    if bad is not None:
        plan.note(NAME, False, f"`{text(bad)}` does not bound {x} from above only: the "
                  "first column of a tile position may fail the check where a later passes",
                  bad)
        return None
    locals_ = {_declared(d) for n in walk(plan.body) if n.type == "declaration"
               for d in n.children_by_field_name("declarator")}
    shared_names = {_declared(d): s for s in shared for d in s.children_by_field_name("declarator")}
    own = {x, y, outer.var, inner.var} | {_declared(d) for s in needs
                                          for d in s.children_by_field_name("declarator")}
    used = {text(n) for p in parts for n in walk(p) if n.type == "identifier"}
    foreign = sorted(n for n in used if n in locals_ and n not in own and n not in shared_names)
    if foreign or any(builtin(n, "threadIdx") is not None for p in parts for n in walk(p)):
        plan.note(NAME, False, f"the read `{text(node)}` reads "
                  f"{', '.join(foreign) or 'the thread index'}, which the block's fill does "
                  "not have", node)
        return None
    prefix = tuple(s for s in shared if {_declared(d) for d in
                                         s.children_by_field_name("declarator")} & used)
    for s in prefix:
        if fill_blocker(s) is not None:
            plan.note(NAME, False, f"`{text(s)}` (read by the taps) reads memory, calls or "
                      "reads the thread index: the fill cannot re-declare it", s)
            return None
    size = _ELEM.get(elem) if node.type != "call_expression" else tap_bytes(plan, node)
    if size is None:
        plan.note(NAME, False, f"`{elem}` is no element of known size", node)
        return None
    return Stage(node, elem, guard, prefix, needs, size)


def fill(stage: Stage, shape: tuple[str, str, str, str], point: tuple[str, str, str],
         window: tuple[_Window, _Window], check: tuple[str, bool], zero: str) -> str:
    """The fill before the bounds check (``shape``: the knob, BLOCK_X, BLOCK_Y and OUT_Y
    names; ``point``: x, y and y's type; ``check``: the condition's text and whether it is
    true outside)."""
    knob, bx, by, oy = shape
    x, y, ytype = point
    outer, inner = window
    n, m = outer.count, inner.count
    cond, out_when_true = check
    shifted = re.sub(rf"\b{re.escape(y)}\b", f"({y} + wb_first)", cond)
    shifted = re.sub(rf"\b{re.escape(x)}\b", f"({x} + wb_first_c)", shifted)
    passes = f"!({shifted})" if out_when_true else f"({shifted})"
    guard = f" && {stage.guard}" if stage.guard else ""
    levels = ("".join(f"    {text(s)}\n" for s in stage.prefix)
              + f"    const int {outer.var} = ({outer.lo_text}) + wb_pr;\n"
              f"    const int {inner.var} = ({inner.lo_text}) + wb_pc;\n"
              + "".join(f"    {text(s)}\n" for s in stage.needs))
    return window_fill(WindowFill(
        knob, "the block's window of the read with its halo", stage.elem,
        (f"({by} * {oy} + {n - 1})", f"({bx} + {m - 1})"), None, (bx, by),
        (f"const {ytype} {y} = ({ytype})blockIdx.y * ({by} * {oy})",
         f"const int {x} = (int)blockIdx.x * {bx}"),
        (f"{y} + {outer.var}", f"{x} + {inner.var}"), "the read names", levels,
        (n - 1, m - 1), passes + guard, text(stage.read), zero))


def tile_read(inner: _Window, oy: str) -> str:
    """A thread's value at its input row ``wb_r`` and window column ``j`` from the tile."""
    return (f"wb_tile[(int)threadIdx.y * {oy} + wb_r][(int)threadIdx.x + ({inner.var} - "
            f"({inner.lo_text}))]")


def stage_param(plan: Plan, stage: Stage, knob: str, shape: tuple[str, str, str],
                window: tuple[_Window, _Window]) -> None:
    """The knob, its shared memory bound and its note."""
    bx, by, oy = shape
    outer, inner = window
    plan.add_param(knob, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: the block's window of the taps' read (with its "
                                         "halo) staged in shared memory once; 0: each thread "
                                         "reads it (as written)"},
                   f"{line(stage.read)}: {text(stage.read)[:60]}")
    plan.constrain(f"{knob} == 0 or {stage.bytes_each} * ({by} * {oy} + {outer.count - 1}) * "
                   f"({bx} + {inner.count - 1}) <= {_MAX_SMEM}")
    plan.note(NAME, True, f"the block's ({by} * {oy} + {outer.count - 1}) x ({bx} + "
              f"{inner.count - 1}) window of `{text(stage.read)[:60]}` staged in shared memory "
              "before the bounds check; each thread's rows read it from there", stage.read)
