"""Output rows for window filters with several outputs a point (:mod:`.conv_centre`): the
state as arrays, the statements around the window, and taps read through a helper.

A multi-channel filter written one pixel a thread keeps one sum per output channel, ``float
acc[COUT]; for (o) acc[o] = bias[o];``, and adds every tap into each of them in a loop over
the channels inside the window (``for (dy) for (dx) { Rgb p = fetch(img, x + dx, y + dy, W,
H); for (o) acc[o] += w[0] * p.r + ..; }``), then stores them in a loop (set 25's
nhwc_conv5x5_c3to4). Its neighbouring output rows read the same input rows, as a scalar
filter's do, and the known practice (its expert's ITEMS_Y) is the same loop interchange:
each of the ``n + OUT_Y - 1`` input rows read once and added into every row whose window
holds it. :mod:`.conv_centre`'s rewrite already runs each row's taps, as written, on the row's
own state; this module reads the parts such a kernel adds:

* the state may hold arrays of a compile-time extent (``float acc[COUT]``: one per row,
  ``float wb_acc[OUT_Y][COUT]``, bound by reference, ``auto& acc = wb_acc[k]``), written
  through a subscript at an index that reads no state;
* statements before the window (an initialising loop) that write only the state, run per row
  as written; declarations before them whose value does not depend on the row and that
  nothing writes (``const float *img = in + blockIdx.z * ..``: the plane) stay where they are,
  read by every row;
* one window loop among several loops of the output's work: the one whose body holds the
  inner window loop;
* loops inside the taps (over the channels) with their own counters;
* a read through a read-only ``__device__`` helper taking the position (``fetch(img, x + dx,
  y + dy, W, H)``, :mod:`.conv_reads`), loaded once per input row and column like an
  ``in[index]`` read, its value of the helper's return type (a struct: zero-initialised
  ``Rgb{}`` for a row past the check, never stored).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import strip, text, walk, write_target
from workbench.templater.conv import _compile_time_defs, _const, _declared, _window
from workbench.templater.conv_reads import read_only_functions
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.regtile import Refused

_WRITES = ("assignment_expression", "update_expression")


def window_loop(plan: Plan, loops: list[Node]) -> Node | None:
    """The one loop of ``loops`` whose body holds exactly one loop (the 2-D window's rows
    around its columns); None where none or several do."""
    defs = _compile_time_defs(plan)
    found = []
    for loop in loops:
        try:
            outer = _window(plan, loop, defs, sized=False)
        except Refused:
            continue
        if len([s for s in outer.body if s.type == "for_statement"]) == 1:
            found.append(loop)
    return found[0] if len(found) == 1 else None


def array_extent(plan: Plan, declarator: Node) -> str | None:
    """The extent text of ``T name[E]`` where ``E`` is a compile-time integer (a literal or
    the file's integer macro), else None (not a one-dimensional array of known size)."""
    d = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" \
        else declarator
    if d is None or d.type != "array_declarator":
        return None
    inner, size = d.child_by_field_name("declarator"), d.child_by_field_name("size")
    if inner is None or inner.type != "identifier" or size is None or \
            _const(text(size), _compile_time_defs(plan)) is None:
        return None
    return text(size)


def shared_prefix(plan: Plan, pre: list[Node], y: str,
                  names_of: Callable[[Node], set[str]]) -> int:
    """How many leading statements of ``pre`` are declarations every row shares: each
    declares one local with a value that does not depend on ``y``, and nothing in the kernel
    writes it or takes its address (the plane's pointer ``const float *img = in + ..``)."""
    count = 0
    for s in pre:
        ds = s.children_by_field_name("declarator") if s.type == "declaration" else []
        if len(ds) != 1 or ds[0].type != "init_declarator":
            break
        value = ds[0].child_by_field_name("value")
        name = _declared(ds[0])
        if value is None or y in names_of(value) or _written(plan.body, name):
            break
        count += 1
    return count


def _written(body: Node, name: str) -> bool:
    for n in walk(body):
        t = write_target(n) if n.type in _WRITES else None
        if t is not None and t.type == "identifier" and text(t) == name:
            return True
        if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "&":
            arg = n.child_by_field_name("argument")
            if arg is not None and text(strip(arg)) == name:
                return True
    return False


def state_write(n: Node, arrays: set[str], names_of: Callable[[Node], set[str]]) -> bool:
    """``n`` (an assignment or step) writes an element of a state array at an index that
    reads no state array (``acc[o] += ..``)."""
    t = write_target(n)
    if t is None or t.type != "subscript_expression":
        return False
    base = t.child_by_field_name("argument")
    index = t.child_by_field_name("indices") or t.child_by_field_name("index")
    return base is not None and text(strip(base)) in arrays and index is not None and \
        not (names_of(index) & arrays)


def accumulates(taps: list[Node], arrays: set[str]) -> bool:
    """Every write of the taps to a state array adds into it (``acc[o] += ..``, ``-=``, or
    ``acc[o] = acc[o] + ..``): a sum per output channel. A window that only gathers values
    into an array (a median's ``v[k] = pix(..)``, sorted after) is the gather family's
    (:mod:`.gather_stage`)."""
    for s in taps:
        for n in walk(s):
            t = write_target(n) if n.type in _WRITES else None
            base = t.child_by_field_name("argument") if t is not None and \
                t.type == "subscript_expression" else None
            if base is None or text(strip(base)) not in arrays:
                continue
            op = text(n.child_by_field_name("operator")) if n.type == "assignment_expression" \
                else ""
            right = n.child_by_field_name("right")
            if op in ("+=", "-=") or (op == "=" and right is not None and \
                    text(t) in {text(strip(m)) for m in walk(right)}):
                continue
            return False
    return True


def loop_counters(taps: list[Node]) -> set[str]:
    """The counters the loops inside the taps declare (``for (int o = 0; ..)``)."""
    out: set[str] = set()
    for s in taps:
        for n in walk(s):
            init = n.child_by_field_name("initializer") if n.type == "for_statement" else None
            if init is not None and init.type == "declaration":
                out |= {_declared(d) for d in init.children_by_field_name("declarator")}
    return out


def helper_read(plan: Plan, call: Node) -> str | None:
    """The return type of a call to a read-only ``__device__`` helper of the file that is
    not a pure math function (the taps' read through it), else None."""
    callee = call.child_by_field_name("function")
    name = text(callee) if callee is not None and callee.type == "identifier" else ""
    if not name or name in pure_calls(plan.source) or \
            read_only_functions(plan.source).get(name, "absent") is not None:
        return None
    fn = plan.source.function_definitions().get(name)
    typ = fn.child_by_field_name("type") if fn is not None else None
    return None if typ is None or text(typ) == "void" else text(typ)


def zero(elem: str) -> str:
    """A value of ``elem`` for a read past the check (never stored): ``(float)0``, a
    struct's ``Rgb{}``."""
    arithmetic = {"float", "double", "int", "unsigned", "unsigned int", "unsigned char",
                  "char", "signed char", "short", "unsigned short", "long", "long long",
                  "unsigned long long", "size_t", "__half", "half", "__nv_bfloat16", "bool"}
    return f"({elem})0" if elem in arithmetic else f"{elem}{{}}"
