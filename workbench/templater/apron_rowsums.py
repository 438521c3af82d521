"""ROW_SUMS for apron row windows: a thread's output rows share the window rows' sums of
unit-weight terms (box sums: ``s += v; ss += v * v; sab += v * u;`` over a 7 x 7 window).

:mod:`.apron_window` gives a thread's OUT_Y outputs of one column a register window of each
tile (several tiles of one geometry: one window each, the same rows and columns). Where the
tile reads sit in one nest of two loops with constant bounds (the outer loop's body the inner
loop alone, either counter outside), every read's row is the row counter plus a constant and
its column a function of the column counter, and the inner body is declarations and sums
``acc += term;`` of float locals declared outside the nest, each term read from the body's
own locals, the column counter, literals and integer macros only (no other name, no call, no
thread index, not the row counter but through a read's row), the window of output ``oy``
at row counter ``r`` is window row ``oy + r - r0`` shifted by the read's constant: the term
at ``(r, c)`` is one function of window row ``k = oy + r - r0`` and ``c``. ROW_SUMS 1 sums
each term over the columns once per window row (``OUT_Y + rows - 1`` rows, in the column
counter's order) and each output adds its ``rows`` row sums in the row counter's order:
``(OUT_Y + rows - 1) * cols`` term evaluations for the thread's outputs where the nest as
written makes ``OUT_Y * rows * cols`` (7 x 7 at OUT_Y = 4: 70 against 196).

The additions are made in another order (row sums first), so float outputs move by rounding:
the folder's tolerances decide (the gate checks every config), which is why the knob
defaults to 0, the sums as written. ROW_SUMS 1 is constrained to the configs where the
window is in use. A nest of another shape, a term reading another name, a sum that is not a
float local are refused with the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import int_value, strip, text, walk
from workbench.templater.apron_loads import expression_macros
from workbench.templater.apron_window import MAX_WINDOW, Window, WindowRead, loop_range
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names, render

NAME = "ROW_SUMS"


@dataclass(frozen=True)
class RowSums:
    """The nest of unit-weight sums: its loops, counters and the sums in order."""

    outer: Node
    body: tuple[Node, ...]  # the inner loop's statements: declarations, then the sums
    row_var: str
    rows: range
    col_var: str
    cols: range
    accs: tuple[str, ...]  # the sums' locals, in written order (each once)
    shift: dict[int, int]  # a read's start byte -> the constant added to its row counter
    # locals of the function the taps assign (C89), with their types: declared afresh in the
    # row sums' loop, shadowing the function's
    assigned: tuple[tuple[str, str], ...] = ()


def analyse_row_sums(plan: Plan, w: Window) -> RowSums:
    """The window reads' nest of unit-weight sums, or Refused saying why (a sum adds the
    same terms in another order from whatever it held before the nest)."""
    reads = {r.node.start_byte: r for r in w.reads}
    loops = sorted(w.loops, key=lambda n: n.start_byte)
    if len(loops) != 2:
        raise Refused(f"the tile reads sit in {len(loops)} loops: the sums of one nest of two "
                      "are made once a row", w.reads[0].node)
    outer, inner = loops
    got = [loop_range(n) for n in (outer, inner)]
    inner_only = _body(outer)
    if len(inner_only) != 1 or inner_only[0] != inner or got[0] is None or got[1] is None:
        raise Refused(f"`{text(outer).splitlines()[0]}` does not hold the inner tap loop alone",
                      outer)
    ranges = dict(g for g in got if g is not None)
    for loop in (outer, inner):  # C89 counters: their values after the nest must not matter
        init = loop.child_by_field_name("initializer")
        if init is not None and init.type == "assignment_expression":
            _dead_after(plan, text(strip(init.child_by_field_name("left") or init)), outer, loop)
    row_var = col_var = None
    shift: dict[int, int] = {}
    for start, read in reads.items():
        row_var, k = _row(read, ranges, row_var)
        shift[start] = k
        names = set(re.findall(r"[A-Za-z_]\w*", read.col))
        if row_var in names or not names <= set(ranges):
            raise Refused(f"`{text(read.node)}`'s column reads the row counter {row_var}",
                          read.node)
    col_var = next((v for v in ranges if v != row_var), None)
    if row_var is None or col_var is None:
        raise Refused("the tile reads' rows and columns are not over the two counters",
                      w.reads[0].node)
    body = _body(inner)
    macros = expression_macros(plan.source.tree.root_node)
    own: set[str] = set()
    accs: list[str] = []
    assigned: dict[str, str] = {}  # a local of the function the taps assign: its type
    for s in body:
        if s.type == "declaration":
            for d in s.children_by_field_name("declarator"):
                value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                if value is None:
                    raise Refused(f"`{text(s)}` declares a local without a value in the tap "
                                  "loop", s)
                _term(value, reads, own, col_var, macros, accs)
                own.add(text(d.child_by_field_name("declarator")))
            continue
        e = strip(s.named_children[0]) if s.type == "expression_statement" and \
            s.named_child_count == 1 else None
        left = e.child_by_field_name("left") if e is not None and \
            e.type == "assignment_expression" else None
        right = e.child_by_field_name("right") if e is not None else None
        if e is None or left is None or right is None or \
                text(e.child_by_field_name("operator")) not in ("+=", "=") or \
                strip(left).type != "identifier":
            raise Refused(f"`{text(s)}` in the tap loop is not a declaration, a local's value "
                          "or a sum `acc += term;`", s)
        if text(e.child_by_field_name("operator")) == "=":  # C89: a local declared above
            name = text(strip(left))
            _term(right, reads, own, col_var, macros, accs)
            if name in own or name in accs:
                raise Refused(f"`{text(s)}` assigns {name} a second time in the tap loop", s)
            assigned[name] = _dead_after(plan, name, outer, s)
            own.add(name)
            continue
        acc = text(strip(left))
        decl = _declaration(plan, acc)
        if acc in accs or acc in own or decl is None or \
                text(decl.child_by_field_name("type")) != "float":
            raise Refused(f"the sum `{acc}` is not a float local (declared once) summed once a "
                          "tap", s)
        _term(right, reads, own, col_var, macros, [*accs, acc])
        accs.append(acc)
    if not accs:
        raise Refused("the tap loop sums nothing", inner)
    for s in body:  # a sum read as a term (before its own statement) is refused in _term
        for n in walk(s):
            if n.type == "identifier" and text(n) in accs and \
                    not (n.parent is not None and n.parent.type == "assignment_expression"
                         and n.parent.child_by_field_name("left") == n):
                raise Refused(f"`{text(s)}` reads the sum {text(n)}", s)
    return RowSums(outer, tuple(body), row_var, ranges[row_var], col_var, ranges[col_var],
                   tuple(accs), shift, tuple(sorted(assigned.items())))


def _dead_after(plan: Plan, name: str, nest: Node, stmt: Node) -> str:
    """The type of ``name``, a local declared once without a value that the tap loop assigns
    (``float va; ... for (..) { va = t[..][..]; s += va; }``) where its value after the nest
    is never read: outside the nest it is named only by its declaration and by the statements
    after the nest in its block, the first of which sets it (``va = expr;`` not reading it).
    ROW_SUMS 1 skips the nest, so the value it leaves must not matter; Refused otherwise."""
    decl = _declaration(plan, name)
    bad = Refused(f"`{text(stmt).splitlines()[0]}` assigns {name}, whose value after the tap "
                  "loops may be read (a local of the taps is declared in the loop, or set "
                  "again after it before it is read)", stmt)
    if decl is None or any(d.type == "init_declarator" for d in
                           decl.children_by_field_name("declarator")
                           if text(d.child_by_field_name("declarator") or d) == name):
        raise bad
    block = nest.parent
    if block is None or block.type != "compound_statement":
        raise bad
    after = [c for c in block.named_children if c.start_byte >= nest.end_byte]
    first = next((c for c in after if any(n.type == "identifier" and text(n) == name
                                          for n in walk(c))), None)
    e = strip(first.named_children[0]) if first is not None and \
        first.type == "expression_statement" and first.named_child_count == 1 else None
    right = e.child_by_field_name("right") if e is not None and \
        e.type == "assignment_expression" else None
    if first is not None and (
            e is None or right is None or text(e.child_by_field_name("operator")) != "=" or
            text(strip(e.child_by_field_name("left") or e)) != name or
            any(n.type == "identifier" and text(n) == name for n in walk(right))):
        raise bad
    for n in walk(plan.body):
        if n.type != "identifier" or text(n) != name:
            continue
        if decl.start_byte <= n.start_byte < decl.end_byte or \
                nest.start_byte <= n.start_byte < nest.end_byte or \
                (first is not None and first.start_byte <= n.start_byte < block.end_byte):
            continue
        raise bad
    return text(decl.child_by_field_name("type"))


def row_sums(plan: Plan, w: Window, oy_n: str, rows: str, windows: dict[int, str]) -> str:
    """The column's row sums (text after its window loads) with the tap nest made a sum of
    them under ROW_SUMS; empty, the reason noted, where the nest is not of unit-weight sums
    (``windows``: a read's start byte -> its tile's window)."""
    try:
        s = analyse_row_sums(plan, w)
    except Refused as e:
        plan.note(NAME, False, e.reason, e.node if e.node is not None else w.reads[0].node)
        return ""
    knob = fresh_names(plan, [NAME])[NAME]
    r0, c0, count = s.rows.start, s.cols.start, len(s.rows)
    data = plan.source.data
    hs = {acc: f"wb_rs_{acc}" for acc in s.accs}
    k_rows = f"{oy_n} + {count - 1}"

    def sub(n: Node) -> str | None:
        start = n.start_byte
        if n.type == "subscript_expression" and start in s.shift and \
                any(r.node == n for r in w.reads):
            read = next(r for r in w.reads if r.node == n)
            return f"{windows[start]}[wb_k + {r0 + s.shift[start]}][{read.col}]"
        if n.type == "identifier" and text(n) in hs and n.parent is not None and \
                n.parent.type == "assignment_expression" and \
                n.parent.child_by_field_name("left") == n:
            return f"wb_h_{text(n)}"
        return None
    types = dict(s.assigned)

    def line_of(st: Node) -> str:
        got = render(data, st, sub)
        e = strip(st.named_children[0]) if st.type == "expression_statement" else None
        left = e.child_by_field_name("left") if e is not None and \
            e.type == "assignment_expression" else None
        if left is not None and text(strip(left)) in types:  # `va = ..;`: its own local here
            return f"{types[text(strip(left))]} {got}"
        return got
    terms = "\n".join(f"          {line_of(st)}" for st in s.body)
    ind = " " * s.outer.start_point[1]
    adds = " ".join(f"{acc} += {hs[acc]}[wb_oy + {s.row_var} - ({r0})];" for acc in s.accs)
    # before the nest's own `#pragma unroll` (inserted after this): the branch, then the nest
    plan.rw.insert(s.outer.start_byte, (
        f"if ({knob} && wb_reuse) {{  // the rows' sums, made once for the column's rows\n"
        f"#pragma unroll\n"
        f"{ind}  for (int {s.row_var} = {r0}; {s.row_var} < {s.rows.stop}; ++{s.row_var}) "
        f"{{ {adds} }}\n{ind}}} else {{\n{ind}"))
    plan.rw.insert(s.outer.end_byte, f"\n{ind}}}")
    plan.add_param(knob, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: each window row's sums of the tap terms once for "
                                         "the thread's rows, then each output adds its rows' "
                                         "sums (another order of the float additions: the "
                                         "folder's tolerances decide); 0: the sums as written"},
                   f"{s.outer.start_point[0] + 1}: {text(s.outer).splitlines()[0]}")
    plan.constrain(f"{knob} == 0 or ({oy_n} > 1 and {_fits(w, rows, windows)})")
    plan.note(NAME, True, f"the tap nest over {s.row_var} x {s.col_var} sums "
              f"{', '.join(s.accs)} of unit weight: ROW_SUMS 1 makes each sum's {k_rows} "
              f"window-row sums once a column and each of the {oy_n} outputs adds {count} of "
              "them (floats in another order: within the folder's tolerances, the gate checks "
              "them)", s.outer)
    decls = "".join(f"    float {hs[acc]}[{k_rows}];\n" for acc in s.accs)
    zero = " ".join(f"float wb_h_{acc} = 0.0f;" for acc in s.accs)
    store = " ".join(f"{hs[acc]}[wb_k] = wb_h_{acc};" for acc in s.accs)
    return (f"    // {knob}: each window row's sums of the tap terms, once for the column's "
            "rows\n" + decls +
            f"    if ({knob} && wb_reuse) {{\n"
            f"#pragma unroll\n"
            f"      for (int wb_k = 0; wb_k < {k_rows}; ++wb_k) {{\n"
            f"        {zero}\n"
            f"#pragma unroll\n"
            f"        for (int {s.col_var} = {c0}; {s.col_var} < {s.cols.stop}; ++{s.col_var})"
            f" {{\n{terms}\n        }}\n"
            f"        {store}\n"
            f"      }}\n"
            f"    }}\n")


def _fits(w: Window, rows: str, windows: dict[int, str]) -> str:
    count = len(set(windows.values()))
    return f"({rows}) * {w.width}" + (f" * {count}" if count > 1 else "") + \
        f" <= {MAX_WINDOW}"


def _row(read: WindowRead, ranges: dict[str, range], row_var: str | None
         ) -> tuple[str, int]:
    """(the row counter, the constant) of a read's window row ``(k + r)`` / ``(r)``."""
    m = re.fullmatch(r"\((?:(\d+) \+ )?([A-Za-z_]\w*)\)", read.row)
    if m is None or m.group(2) not in ranges or (row_var is not None and m.group(2) != row_var):
        raise Refused(f"`{text(read.node)}`'s row is not the row counter plus a constant",
                      read.node)
    return m.group(2), int(m.group(1) or 0)


def _term(node: Node, reads: dict[int, WindowRead], own: set[str], col_var: str,
          macros: dict[str, Node], accs: list[str]) -> None:
    """``node`` reads only tile reads, the body's own locals, the column counter, literals
    and integer macros."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "subscript_expression" and n.start_byte in reads and \
                reads[n.start_byte].node == n:
            continue
        if n.type in ("call_expression", "field_expression", "assignment_expression",
                      "update_expression", "pointer_expression", "subscript_expression"):
            raise Refused(f"`{text(n)}` in a tap term is not a tile read, a local of the tap "
                          "loop or a constant", n)
        if n.type == "identifier":
            name = text(n)
            if name in accs or not (name in own or name == col_var or name in macros or
                                    int_value(n) is not None):
                raise Refused(f"`{name}` in a tap term is not a tile read, a local of the tap "
                              "loop, the column counter or a constant", n)
        stack.extend(n.children)


def _body(loop: Node) -> list[Node]:
    body = loop.child_by_field_name("body")
    if body is None:
        return []
    if body.type != "compound_statement":
        return [body]
    return [c for c in body.named_children if c.type != "comment"]


def _declaration(plan: Plan, name: str) -> Node | None:
    """The one declaration of ``name`` in the kernel (None where there are several)."""
    found = [d for d in walk(plan.body) if d.type == "declaration" and any(
        text(x.child_by_field_name("declarator") or x) == name
        for x in d.children_by_field_name("declarator"))]
    return found[0] if len(found) == 1 else None
